"""``lspci -vvv`` output as a tlpsim scenario: :func:`import_lspci`.

The tree comes from the bridges' bus numbers (``Bus: primary=00, secondary=05,
subordinate=06``: a function on bus 05 sits below that bridge) and each function's PCI
Express capability (``Express (v2) Root Port``, ``Upstream Port``, ``Downstream Port``,
``Endpoint`` ...). A link is what a root port or a switch's downstream port has below it:
its generation and width are the trained ``LnkSta`` of the device at its lower end. In the
scenario:

- one ``[[root_complex]]`` named ``rc`` for every root bus and root port (a root port is
  not a node in tlpsim: the link from ``rc`` is its link, and its address is a comment);
- a switch's upstream port and its downstream ports are one ``[[switch]]``;
- the device at the lower end of any other link is an ``[[endpoint]]`` of kind ``"dma"``
  with the tags its ``DevCtl``/``DevCtl2`` enable; other functions on the same link
  (multi-function devices, virtual functions) share that endpoint and are named in a
  comment, as are the conventional PCI devices behind a PCI Express to PCI bridge;
- ``[pcie]`` ``mps`` and ``mrrs``, one value for the whole system in tlpsim, are the
  ``DevCtl`` values of one endpoint (the one with the fastest link, or the one asked for);
- functions with no link of their own (host bridges, root complex integrated endpoints,
  chipset and uncore functions on a root bus) and empty slots are listed in comments.

tlpsim loads no scenario without a ``[[workload]]``, so the import adds one placeholder:
4 KiB DMA reads by that same endpoint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlpsim._core import ConfigError
from tlpsim.files import write_atomic
from tlpsim.importers.common import ImportFileError, read_text
from tlpsim.simulate import load_scenario

__all__ = ["LspciImport", "PciFunction", "import_lspci", "parse_lspci", "parse_lspci_tree"]

#: Generation of each link speed LnkSta reports, in GT/s.
GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}
#: GT/s of each generation.
GENERATIONS_RATE = {g: s for s, g in GENERATIONS.items()}
#: Link widths tlpsim models.
WIDTHS = (1, 2, 4, 8, 12, 16, 32)
#: Read tags of a requester: 10-bit tags enabled (DevCtl2 10BitTagReq+), 8-bit tags
#: (DevCtl ExtTag+), else the 5-bit tags every device has.
TAGS_10BIT, TAGS_EXTENDED, TAGS_DEFAULT = 768, 256, 32

ROOT_COMPLEX = "rc"
PLACEHOLDER_TRANSFER = "4KiB"

_HEADER = re.compile(r"(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\s+(.*)")
_EXPRESS = re.compile(r"Capabilities: \[[0-9a-fA-F]+\] Express \(v\d+\) (.+?)(?:, (?:MSI|IntMsgNum) [0-9a-fA-F]+)?$")
_BUS = re.compile(r"Bus: primary=([0-9a-fA-F]+), secondary=([0-9a-fA-F]+), subordinate=([0-9a-fA-F]+)")
_FIELD = re.compile(r"([A-Za-z0-9]+):\s*(.*)")
_SPEED = re.compile(r"Speed (?:(\d+(?:\.\d+)?)GT/s|(unknown))")
_WIDTH = re.compile(r"Width x(\d+)")
_PAYLOAD = re.compile(r"MaxPayload (\d+) bytes, MaxReadReq (\d+) bytes")


@dataclass
class PciFunction:
    """One function of ``lspci -vvv``: its address, what it is, and the PCI Express
    fields the scenario needs (``None`` where lspci printed none)."""

    domain: int
    bus: int
    device: int
    function: int
    #: Line of its header in the file.
    line: int
    #: ``Ethernet controller``, ``PCI bridge`` ...
    device_class: str
    #: ``Netronome Systems, Inc. Device 6000`` (without ``(rev ..)``, ``(prog-if ..)``).
    description: str
    #: ``Endpoint``, ``Root Port``, ``Upstream Port``, ``Downstream Port``, ``Legacy
    #: Endpoint``, ``Root Complex Integrated Endpoint``, ``PCI-Express to PCI/PCI-X Bridge``
    #: ...; ``None`` without an Express capability.
    express: str | None = None
    secondary: int | None = None
    subordinate: int | None = None
    #: LnkSta: the speed in GT/s (``None`` when ``unknown``) and width the link trained to.
    speed_gts: float | None = None
    width: int | None = None
    #: LnkCap: what the port can do.
    speed_cap_gts: float | None = None
    width_cap: int | None = None
    #: DevCtl: Max_Payload_Size and Max_Read_Request_Size in force.
    mps: int | None = None
    mrrs: int | None = None
    ext_tag_cap: bool = False
    ext_tag: bool = False
    tag10_cap: bool = False
    tag10: bool = False
    capabilities_denied: bool = False

    @property
    def bdf(self) -> str:
        """``03:00.0``, with the domain in front where it is not 0 (``0001:03:00.0``)."""
        short = f"{self.bus:02x}:{self.device:02x}.{self.function:x}"
        return f"{self.domain:04x}:{short}" if self.domain else short

    @property
    def key(self) -> tuple[int, int, int, int]:
        """(domain, bus, device, function), for sorting."""
        return (self.domain, self.bus, self.device, self.function)

    @property
    def link_up(self) -> bool:
        """LnkSta names a speed and a width tlpsim models."""
        return self.speed_gts in GENERATIONS and self.width in WIDTHS

    @property
    def tags(self) -> int:
        """Read tags its DevCtl/DevCtl2 enable."""
        return TAGS_10BIT if self.tag10 else TAGS_EXTENDED if self.ext_tag else TAGS_DEFAULT

    def title(self) -> str:
        """``03:00.0 Ethernet controller: Netronome Systems, Inc. Device 6000``."""
        return f"{self.bdf} {self.device_class}: {self.description}"


def _tab_width(line: str) -> int:
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def _speed(path: str, lineno: int, key: str, text: str) -> tuple[float | None, int | None]:
    speed, width = _SPEED.search(text), _WIDTH.search(text)
    if speed is None or width is None:
        raise ImportFileError(
            f"{path}:{lineno}: cannot read {key} {text.strip()[:60]!r}; expected '{key}: Speed 8GT/s, Width x8, ...'"
        )
    return (float(speed.group(1)) if speed.group(1) else None), int(width.group(1))


def _flag(text: str, name: str) -> bool:
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(name)}\+", text) is not None


def _read_express(f: PciFunction, path: str, fields: Iterable[tuple[int, str, str]]) -> None:
    """Fills ``f`` from the fields of its Express capability: (line, key, text)."""
    for lineno, key, text in fields:
        if key == "LnkSta":
            f.speed_gts, f.width = _speed(path, lineno, key, text)
        elif key == "LnkCap":
            f.speed_cap_gts, f.width_cap = _speed(path, lineno, key, text)
        elif key == "DevCtl":
            m = _PAYLOAD.search(text)
            if m is None and "MaxPayload" in text:
                raise ImportFileError(
                    f"{path}:{lineno}: cannot read DevCtl's sizes; "
                    "expected 'MaxPayload 256 bytes, MaxReadReq 512 bytes'"
                )
            if m is not None:
                f.mps, f.mrrs = int(m.group(1)), int(m.group(2))
            f.ext_tag = _flag(text, "ExtTag")
        elif key == "DevCap":
            f.ext_tag_cap = _flag(text, "ExtTag")
        elif key == "DevCap2":
            f.tag10_cap = _flag(text, "10BitTagReq")
        elif key == "DevCtl2":
            f.tag10 = _flag(text, "10BitTagReq")


def _parse_block(path: str, lines: list[tuple[int, str]], f: PciFunction) -> None:
    """Fills ``f`` from the indented lines below its header."""
    i = 0
    while i < len(lines):
        lineno, line = lines[i]
        body = line.strip()
        i += 1
        if body.startswith("Bus:"):
            m = _BUS.search(body)
            if m is None:
                raise ImportFileError(
                    f"{path}:{lineno}: cannot read the bridge's bus numbers {body!r}; "
                    "expected 'Bus: primary=00, secondary=05, subordinate=06, ...'"
                )
            f.secondary, f.subordinate = int(m.group(2), 16), int(m.group(3), 16)
        elif body.startswith("Capabilities: <access denied>"):
            f.capabilities_denied = True
        elif (m := _EXPRESS.search(body)) is not None and f.express is None:
            f.express = re.sub(r"\s*\(Slot[+-]\)$", "", m.group(1).strip())
            cap_indent = _tab_width(line)
            fields: list[tuple[int, str, str]] = []
            field_indent = None
            while i < len(lines) and _tab_width(lines[i][1]) > cap_indent:
                sub_no, sub = lines[i]
                width = _tab_width(sub)
                field_indent = width if field_indent is None else field_indent
                fm = _FIELD.match(sub.strip())
                if width == field_indent and fm is not None:
                    fields.append((sub_no, fm.group(1), fm.group(2)))
                elif fields:
                    n, k, t = fields[-1]
                    fields[-1] = (n, k, f"{t} {sub.strip()}")
                i += 1
            _read_express(f, path, fields)


#: Characters a device name may not carry into a scenario comment or a message: control
#: characters (TOML refuses them in a comment; ESC drives the terminal), line and paragraph
#: separators, and the bidirectional overrides that reorder text on screen.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escaped(text: str) -> str:
    """``text`` with each control character written as the scenario loader's messages write
    it (ESC as ``\\u{1b}``), so that a device name is safe in a TOML comment and on a terminal."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{{{ord(m.group()):x}}}", text)


def _lines(text: str) -> list[str]:
    """``text``'s lines, split at newlines only (``str.splitlines`` also splits at the
    control characters \\x1c-\\x1e and \\x85 and at U+2028, which a device name may hold)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _split_title(rest: str) -> tuple[str, str]:
    """(class, description) of a device header's text, control characters escaped."""
    device_class, _, description = escaped(rest).partition(": ")
    description = re.sub(r"\s*\(prog-if .*$", "", description)  # last, and may hold "(X)"
    description = re.sub(r"\s*\(rev [0-9a-fA-F]+\)", "", description).strip()
    return device_class.strip(), description


def parse_lspci(text: str, origin: str = "<text>") -> list[PciFunction]:
    """The functions of ``lspci -vvv`` output (``-vv``, ``-v`` and ``-D`` read too), in
    file order. Raises :class:`ImportFileError` naming ``origin`` and the line for text
    that is not lspci output or a field that cannot be read."""
    functions: list[PciFunction] = []
    seen: dict[tuple[int, int, int, int], int] = {}
    block: list[tuple[int, str]] = []
    current: PciFunction | None = None

    def finish() -> None:
        if current is not None:
            _parse_block(origin, block, current)
            functions.append(current)

    for lineno, line in enumerate(_lines(text), start=1):
        if line and not line[0].isspace():
            m = _HEADER.fullmatch(line.rstrip())
            if m is None:
                if current is None:
                    continue  # a prompt or title before the first device
                raise ImportFileError(
                    f"{origin}:{lineno}: {line.strip()[:60]!r} is not a device header; expected "
                    "'BB:DD.F Class: Description' as lspci -vvv prints it"
                )
            finish()
            block = []
            domain = int(m.group(1), 16) if m.group(1) else 0
            bus, dev, fn = int(m.group(2), 16), int(m.group(3), 16), int(m.group(4))
            device_class, description = _split_title(m.group(5))
            current = PciFunction(domain, bus, dev, fn, lineno, device_class, description)
            if current.key in seen:
                raise ImportFileError(
                    f"{origin}:{lineno}: {current.bdf} appears again (first on line {seen[current.key]}); "
                    "give the output of one lspci run"
                )
            seen[current.key] = lineno
        elif current is not None and line.strip():
            block.append((lineno, line))
    finish()
    if not functions:
        raise ImportFileError(
            f"{origin}: no devices found; expected the output of `lspci -vvv` "
            "(blocks that start like '03:00.0 Ethernet controller: ...')"
        )
    if all(f.express is None for f in functions) and any(f.capabilities_denied for f in functions):
        raise ImportFileError(
            f"{origin}: lspci could not read the devices' capabilities (<access denied>); "
            "run it as root: sudo lspci -vvv"
        )
    return functions


_TREE_ROOT = re.compile(r"\[(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2})\]")
_TREE_DEVICE = re.compile(r"([0-9a-fA-F]{2})\.([0-7])(?:-\[([0-9a-fA-F]{2})(?:-([0-9a-fA-F]{2}))?\])?")


def _children_column(line: str, end: int) -> int:
    """Where the devices of the bus drawn after ``line[:end]`` (a ``]``) start: past its
    dashes, and past a ``+-`` or ``\\-`` when the bus has several."""
    q = end
    while q < len(line) and line[q] == "-":
        q += 1
    return q + 2 if q < len(line) and line[q] in "+\\" else q


def parse_lspci_tree(text: str, origin: str = "<text>") -> dict[tuple[int, int, int, int], tuple | None]:
    """``lspci -tv`` output as {(domain, bus, device, function): parent}, the parent the
    (domain, bus, device, function) of the bridge above it, or ``None`` on a root bus.

    lspci draws the devices of a bus at one column, each after ``+-``, ``\\-`` or ``--``,
    right of its bridge's ``-[secondary-subordinate]--`` (or the root bus's
    ``[domain:bus]-``); so a device's parent is the last bridge or root bus seen whose
    devices start at the device's column."""
    parents: dict[tuple[int, int, int, int], tuple | None] = {}
    # column where a bus's devices start -> (domain, that bus, its bridge or None)
    at_column: dict[int, tuple[int, int, tuple | None]] = {}
    found = False
    for lineno, line in enumerate(_lines(text), start=1):
        pos = 0
        while pos < len(line):
            root = _TREE_ROOT.match(line, pos)
            if root is not None and (pos == 0 or line[pos - 1] in "-+\\"):
                domain = int(root.group(1), 16) if root.group(1) else 0
                at_column[_children_column(line, root.end())] = (domain, int(root.group(2), 16), None)
                found = True
                pos = root.end()
                continue
            dev = _TREE_DEVICE.match(line, pos)
            if dev is not None and pos >= 2 and line[pos - 2 : pos] in ("+-", "\\-", "--"):
                if pos not in at_column:
                    raise ImportFileError(
                        f"{origin}:{lineno}: device {dev.group(1)}.{dev.group(2)} at column {pos + 1} "
                        "is below no bus; expected the output of `lspci -tv`"
                    )
                domain, bus, parent = at_column[pos]
                key = (domain, bus, int(dev.group(1), 16), int(dev.group(2)))
                parents[key] = parent
                if dev.group(3):
                    at_column[_children_column(line, dev.end())] = (domain, int(dev.group(3), 16), key)
                pos = dev.end()
                continue
            pos += 1
    if not found:
        raise ImportFileError(
            f"{origin}: no tree found; expected the output of `lspci -tv` (lines like '-[0000:00]-+-00.0')"
        )
    return parents


def _slug(f: PciFunction) -> str:
    """A node name from the description and address: ``netronome_6000_03_00_0``."""
    words = re.findall(r"[A-Za-z0-9]+", re.sub(r"\[[^\]]*\]", " ", f.description))
    stop = {"corporation", "corp", "inc", "co", "ltd", "limited", "systems", "technologies", "technology",
            "logic", "device", "family", "electronics", "semiconductor", "international"}  # fmt: skip
    words = [w.lower() for w in words if w.lower() not in stop][:3]
    address = f"{f.bus:02x}_{f.device:02x}_{f.function:x}"
    if f.domain:
        address = f"{f.domain:04x}_{address}"
    return "_".join([*words, address]) if words else f"dev_{address}"


def _rate(speed: float) -> str:
    return f"{speed:g}GT/s"


@dataclass
class _Link:
    upstream: str
    downstream: str
    gen: int
    width: int
    port: PciFunction | None
    note: str = ""


@dataclass
class _Build:
    """What the tree walk makes: nodes, links and what it leaves out, with reasons."""

    switches: list[tuple[str, PciFunction, list[PciFunction]]] = field(default_factory=list)
    endpoints: list[tuple[str, PciFunction, list[str]]] = field(default_factory=list)
    links: list[_Link] = field(default_factory=list)
    empty_ports: list[PciFunction] = field(default_factory=list)
    left_out: list[tuple[PciFunction, str]] = field(default_factory=list)
    roles: dict[tuple[int, int, int, int], tuple[str, str | None]] = field(default_factory=dict)


class _Tree:
    """The functions of one lspci run as a tree, and the walk that maps it (:meth:`build`)."""

    def __init__(self, functions: list[PciFunction], origin: str):
        self.origin = origin
        self.functions = sorted(functions, key=lambda f: f.key)
        self.on_bus: dict[tuple[int, int], list[PciFunction]] = {}
        for f in self.functions:
            self.on_bus.setdefault((f.domain, f.bus), []).append(f)
        self.bridge_of: dict[tuple[int, int], PciFunction] = {}
        for f in self.functions:
            if f.secondary is None:
                continue
            if f.secondary <= f.bus:
                raise ImportFileError(
                    f"{origin}:{f.line}: bridge {f.bdf} says its secondary bus is {f.secondary:02x}, "
                    f"not above its own bus {f.bus:02x}"
                )
            other = self.bridge_of.get((f.domain, f.secondary))
            if other is not None:
                raise ImportFileError(
                    f"{origin}:{f.line}: bridges {other.bdf} and {f.bdf} both say bus {f.secondary:02x} is behind them"
                )
            self.bridge_of[(f.domain, f.secondary)] = f
        self.out = _Build()

    def parent(self, f: PciFunction) -> PciFunction | None:
        """The bridge whose secondary bus ``f`` is on; ``None`` on a root bus."""
        return self.bridge_of.get((f.domain, f.bus))

    def behind(self, bridge: PciFunction) -> list[PciFunction]:
        """Every function on the buses a bridge forwards to."""
        lo, hi = bridge.secondary or 0, bridge.subordinate or 0
        return [f for f in self.functions if f.domain == bridge.domain and lo <= f.bus <= hi]

    def build(self) -> _Build:
        for f in self.functions:
            if self.parent(f) is not None:
                continue
            if f.express == "Root Port" and f.secondary is not None:
                self.out.roles[f.key] = ("root port", None)
                self.attach(f, ROOT_COMPLEX)
            elif f.express in ("Endpoint", "Legacy Endpoint") and f.link_up:
                # A device on a root bus with a link and no root port above it (as virtual
                # machines show them): its link is one from the root complex.
                self.link_device([f], ROOT_COMPLEX, None)
            else:
                self.leave_out(f, self.why_no_link(f))
        for f in self.functions:
            if f.key not in self.out.roles:
                self.leave_out(f, f"behind {self.parent(f).bdf}, which is not mapped")
        return self.out

    @staticmethod
    def why_no_link(f: PciFunction) -> str:
        if f.express == "Root Complex Integrated Endpoint":
            return "integrated endpoint"
        if f.express == "Root Port":
            return "host bridge"
        if f.express is None:
            return "no PCIe capability"
        return f"{f.express} on a root bus"

    def leave_out(self, f: PciFunction, why: str) -> None:
        self.out.left_out.append((f, why))
        self.out.roles[f.key] = ("left out", why)

    def attach(self, port: PciFunction, upstream: str) -> bool:
        """Maps what is below a root or downstream port; False for an empty slot."""
        children = self.on_bus.get((port.domain, port.secondary), [])
        if not children:
            self.out.empty_ports.append(port)
            return False
        return self.link_device(children, upstream, port)

    def link_speed(self, device: PciFunction, port: PciFunction | None) -> tuple[int, int, str] | None:
        """(gen, width, note) of the link above ``device``: its own LnkSta, else its port's."""
        note = ""
        source = device if device.link_up else port if port is not None and port.link_up else None
        if source is None:
            return None
        if source is device and port is not None and port.link_up:
            if (port.speed_gts, port.width) != (device.speed_gts, device.width):
                note = (
                    f"; the port's LnkSta says {_rate(port.speed_gts)} x{port.width}, "
                    f"the device's {_rate(device.speed_gts)} x{device.width} (taken)"
                )
        elif source is port:
            note = "; from the port's LnkSta (the device reports none)"
        if device.speed_cap_gts and device.width_cap and source is device:
            if (device.speed_cap_gts, device.width_cap) != (device.speed_gts, device.width):
                note += f"; the device can do {_rate(device.speed_cap_gts)} x{device.width_cap} (LnkCap)"
        return GENERATIONS[source.speed_gts], source.width, note

    def link_device(self, children: list[PciFunction], upstream: str, port: PciFunction | None) -> bool:
        """Maps the device at the lower end of one link (``children``: the functions on
        that bus) as a switch or an endpoint; False if nothing of it could be mapped."""
        head = next((f for f in children if f.express is not None), children[0])
        others = [f for f in children if f is not head]
        speed = self.link_speed(head, port)
        if speed is None:
            why = f"link down or unreadable (LnkSta: {self.lnksta_text(head)})"
            for f in children:
                self.leave_out(f, why)
            return False
        gen, width, note = speed
        port_note = f"{'root' if upstream == ROOT_COMPLEX else 'downstream'} port {port.bdf}" if port else ""
        if head.express == "Upstream Port" and head.secondary is not None:
            name = _slug(head)
            downstream = self.on_bus.get((head.domain, head.secondary), [])
            start, empty = len(self.out.links), len(self.out.empty_ports)
            mapped = [dp for dp in downstream if dp.express == "Downstream Port" and dp.secondary is not None]
            for dp in downstream:
                if dp not in mapped:
                    self.leave_out(dp, f"on switch {head.bdf}'s internal bus, not a downstream port")
            if not [dp for dp in mapped if self.attach(dp, name)]:
                del self.out.empty_ports[empty:]
                for f in [head, *mapped, *others]:
                    self.leave_out(f, "a switch with no device below it")
                return False
            for dp in mapped:
                self.out.roles[dp.key] = ("switch downstream port", name)
            self.out.roles[head.key] = ("switch", name)
            self.out.switches.append((name, head, mapped))
            self.out.links.insert(start, _Link(upstream, name, gen, width, port, port_note + note))
            for f in others:
                self.leave_out(f, f"another function of switch {head.bdf}")
            return True
        name = _slug(head)
        comments = [f"also on this link: {f.title()}" for f in others]
        if head.secondary is not None:
            # A PCI Express to PCI bridge: the conventional devices behind it share its link.
            comments += [f"behind it: {f.title()}" for f in self.behind(head)]
            for f in self.behind(head):
                self.out.roles[f.key] = ("behind bridge", name)
        for f in others:
            self.out.roles[f.key] = ("other function", name)
        self.out.roles[head.key] = ("endpoint", name)
        self.out.endpoints.append((name, head, comments))
        self.out.links.append(_Link(upstream, name, gen, width, port, port_note + note))
        return True

    @staticmethod
    def lnksta_text(f: PciFunction) -> str:
        if f.width is None:
            return "none"
        speed = _rate(f.speed_gts) if f.speed_gts else "unknown"
        return f"Speed {speed}, Width x{f.width}"


@dataclass(frozen=True)
class LspciImport:
    """A scenario made from ``lspci -vvv`` output, with what it was made from.

    ``scenario`` is the TOML text (``tlpsim.load_scenario`` takes it as it is);
    ``devices`` one dict per function of the file: ``bdf``, ``class``, ``description``,
    ``express`` (the Express capability's device type), ``gen``, ``width`` (LnkSta),
    ``mps``, ``mrrs`` (DevCtl), ``tags``, ``role`` (``endpoint``, ``switch``, ``root port``,
    ``switch downstream port``, ``other function``, ``behind bridge``, ``left out``),
    ``node`` (the scenario node it belongs to) and ``note``; ``warnings`` what a
    ``--tree`` cross-check found."""

    scenario: str
    devices: list[dict[str, Any]]
    #: The endpoint whose DevCtl set [pcie] mps and mrrs (and that the placeholder uses).
    focus: str
    warnings: list[str] = field(default_factory=list)

    def to_pandas(self):
        """A pandas DataFrame of the devices."""
        import pandas as pd

        return pd.DataFrame(self.devices)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Writes the scenario to ``path``."""
        write_atomic(Path(path), self.scenario, "scenario")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("h") else f"{n} {word}s"


def _toml(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _tags_note(f: PciFunction) -> str:
    if f.tag10:
        return "DevCtl2 10BitTagReq+"
    if f.ext_tag:
        return "DevCtl ExtTag+ (8-bit tags)" + ("; 10-bit tags capable, not enabled" if f.tag10_cap else "")
    can = "10-bit" if f.tag10_cap else "8-bit" if f.ext_tag_cap else None
    return "DevCtl ExtTag-" + (f"; {can} tags capable, not enabled" if can else "")


def _cross_check(tree: _Tree, parents: dict, origin: str) -> list[str]:
    """Where ``lspci -tv``'s tree and the bus numbers of ``lspci -vvv`` disagree."""
    by_key = {f.key: f for f in tree.functions}

    def name(key) -> str:
        return by_key[key].bdf if key in by_key else "{:02x}:{:02x}.{:x}".format(*key[1:])

    out = []
    for key, parent in sorted(parents.items()):
        if key not in by_key:
            out.append(f"--tree {origin}: {name(key)} is not in the lspci -vvv output")
            continue
        mine = tree.parent(by_key[key])
        mine_key = mine.key if mine is not None else None
        if mine_key != parent:
            where = f"below {name(parent)}" if parent else "on a root bus"
            have = f"below {mine.bdf}" if mine else "on a root bus"
            out.append(f"--tree {origin}: {name(key)} is {where} there, {have} by the bus numbers")
    missing = [f.bdf for f in tree.functions if f.key not in parents]
    if missing:
        out.append(f"--tree {origin}: {len(missing)} functions not in the tree: {', '.join(missing[:8])}")
    return out


def _origin_text(source: str | os.PathLike[str], what: str) -> tuple[str, str]:
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source):
        return read_text(source, what), str(source)
    if not isinstance(source, str):
        raise TypeError(f"lspci output is a path or text, not {type(source).__name__}")
    return source, "<text>"


def _focus(b: _Build, device: str | None) -> tuple[str, PciFunction]:
    if device is not None:
        want = device.lower().removeprefix("0000:")
        for name, f, _ in b.endpoints:
            if f.bdf == want:
                return name, f
        have = ", ".join(f.bdf for _, f, _ in b.endpoints)
        raise ConfigError(f"--device {device}: no endpoint at that address; endpoints: {have}")
    speed = {link.downstream: GENERATIONS_RATE[link.gen] * link.width for link in b.links}
    name, f, _ = max(b.endpoints, key=lambda e: (speed[e[0]], [-x for x in e[1].key]))
    return name, f


def import_lspci(
    source: str | os.PathLike[str],
    tree: str | os.PathLike[str] | None = None,
    device: str | None = None,
) -> LspciImport:
    """Makes a tlpsim scenario of ``lspci -vvv`` output (a path, or the text itself).

    ``tree``: ``lspci -tv`` output of the same machine (a path or the text), to cross-check
    the tree against; what disagrees goes to ``warnings`` and the scenario's header.
    ``device``: the address (``03:00.0``) of the endpoint whose DevCtl gives ``[pcie]``
    ``mps`` and ``mrrs`` and that the placeholder workload uses; by default the endpoint
    with the fastest link (GT/s x width; the lowest address of equals).

    Raises :class:`ImportFileError` with one line naming the file and line when the text is
    not lspci output, and when no device has a link a scenario could use."""
    text, origin = _origin_text(source, "the output of lspci -vvv")
    functions = parse_lspci(text, origin)
    t = _Tree(functions, origin)
    b = t.build()
    if not b.endpoints:
        raise ImportFileError(
            f"{origin}: no device with a working PCIe link below a root port ({len(functions)} functions read); "
            "nothing to make a scenario of"
        )
    warnings: list[str] = []
    if tree is not None:
        tree_text, tree_origin = _origin_text(tree, "the output of lspci -tv")
        warnings = _cross_check(t, parse_lspci_tree(tree_text, tree_origin), tree_origin)
    focus_name, focus = _focus(b, device)
    scenario = _scenario(origin, t, b, focus_name, focus, device is not None, tree is not None, warnings)
    try:
        load_scenario(scenario)
    except ConfigError as e:  # a defect of this importer, said in one line all the same
        raise ImportFileError(f"{origin}: the scenario made of it does not load: {e}") from None
    devices = []
    for f in t.functions:
        role, detail = b.roles.get(f.key, ("left out", None))
        node, note = (None, detail) if role == "left out" else (detail, None)
        devices.append({
            "bdf": f.bdf, "class": f.device_class, "description": f.description, "express": f.express,
            "gen": GENERATIONS.get(f.speed_gts) if f.width else None, "width": f.width or None,
            "mps": f.mps, "mrrs": f.mrrs, "tags": f.tags if f.express else None,
            "role": role, "node": node, "note": note,
        })  # fmt: skip
    return LspciImport(scenario=scenario, devices=devices, focus=focus_name, warnings=warnings)


def _scenario(
    origin: str,
    t: _Tree,
    b: _Build,
    focus_name: str,
    focus: PciFunction,
    chosen: bool,
    checked: bool,
    warnings: list[str],
) -> str:
    """The scenario TOML."""
    out: list[str] = []
    w = out.append
    ports = sorted({link.port.bdf for link in b.links if link.port and link.upstream == ROOT_COMPLEX})
    roots = sorted({f"{f.domain:04x}:{f.bus:02x}" if f.domain else f"{f.bus:02x}" for f in t.functions
                    if t.parent(f) is None})  # fmt: skip
    w(f"# Imported by `tlpsim import lspci` from {origin if origin != '<text>' else 'lspci text'}.")
    counts = f"{_count(len(b.endpoints), 'endpoint')} and {_count(len(b.switches), 'switch')}"
    w(f"# {len(t.functions)} functions read: {counts}")
    w(f"# mapped below one root complex (root buses {', '.join(roots)}; root ports {', '.join(ports) or 'none'}).")
    w("# From lspci: each link's generation and width (LnkSta, as trained), [pcie] mps and mrrs")
    w("# (one endpoint's DevCtl, see there), each endpoint's tags (DevCtl ExtTag, DevCtl2")
    w("# 10BitTagReq). Every other value (memory latency, credits, switch latency) is tlpsim's")
    w("# default, not this host's. Devices are plain DMA engines: tlpsim knows nothing else of them.")
    left = len(b.left_out) + len(b.empty_ports)
    if left:
        w(f"# Not mapped, listed at the end: {_count(len(b.empty_ports), 'empty slot')}, {len(b.left_out)} other")
        w("# functions (host bridges, integrated endpoints, chipset and uncore functions, links down).")
    if checked:
        if warnings:
            w("# Cross-check with lspci -tv found differences (the bus numbers were used):")
            out.extend(f"#   {m}" for m in warnings)
        else:
            w("# Cross-checked with lspci -tv: the same tree.")
    w("")
    w("[pcie]")
    w("# tlpsim has one MPS and MRRS for the whole system: these are the DevCtl values of")
    w(f"# {focus.title()},")
    if chosen:
        w("# the endpoint asked for (--device).")
    else:
        w("# the endpoint with the fastest link (`tlpsim import lspci --device BDF` takes another).")
    values = {(f.mps, f.mrrs) for _, f, _ in b.endpoints if f.mps is not None}
    if len(values) > 1:
        w("# The endpoints disagree:")
        for _, f, _ in b.endpoints:
            if f.mps is not None:
                w(f"#   {f.bdf}: MPS {f.mps}, MRRS {f.mrrs}  ({f.description})")
    if focus.mps is not None:
        w(f"mps = {focus.mps}")
        w(f"mrrs = {focus.mrrs}")
    else:
        w("# (it reports no DevCtl: tlpsim's defaults)")
    w("")
    w("[[root_complex]]")
    w(f'name = "{ROOT_COMPLEX}"')
    for name, head, dps in b.switches:
        w("")
        w("[[switch]]")
        w(f"# {head.title()}")
        w(f"# upstream port {head.bdf}, downstream ports {', '.join(dp.bdf for dp in dps)}")
        w(f"name = {_toml(name)}")
    for name, f, comments in b.endpoints:
        w("")
        w("[[endpoint]]")
        w(f"# {f.title()}")
        out.extend(f"# {c}" for c in comments)
        w(f"name = {_toml(name)}")
        w('kind = "dma"')
        w(f"tags = {f.tags}  # {_tags_note(f)}")
    for link in b.links:
        w("")
        w("[[link]]")
        comment = link.note.lstrip("; ")
        w(f"between = [{_toml(link.upstream)}, {_toml(link.downstream)}]" + (f"  # {comment}" if comment else ""))
        w(f"gen = {link.gen}  # {_rate(GENERATIONS_RATE[link.gen])}")
        w(f"width = {link.width}")
    w("")
    w("# A placeholder: tlpsim loads no scenario without a workload. Replace it with what you want")
    w("# to ask (`tlpsim schema` lists the kinds and keys).")
    w("[[workload]]")
    w('name = "placeholder"')
    w('kind = "dma"')
    w(f"endpoint = {_toml(focus_name)}")
    w('direction = "read"')
    w(f'transfer_size = "{PLACEHOLDER_TRANSFER}"')
    if left:
        w("")
        w("# Not mapped:")
        for port in sorted(b.empty_ports, key=lambda f: f.key):
            w(f"#   {port.bdf} empty slot ({port.express}, {port.description})")
        for f, why in sorted(b.left_out, key=lambda x: x[0].key):
            w(f"#   {f.title()}  [{why}]")
    return "\n".join(out) + "\n"
