"""What a cell's scenario is: the host a pcie-bench directory describes (:class:`Machine`)
and the one-link scenario of one cell on it (:func:`scenario_text`).

The scenario holds only what the directory states (the NFP's link, MPS, MRRS and tags from
``sys-lspci.txt``; the CPU, IOMMU and sockets from the directory's name) plus the device and
host parameters it is given: the protocol (:mod:`tlpsim.pciebench.protocol`) supplies
those, never a published number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from tlpsim.importers.common import ImportFileError, format_size
from tlpsim.importers.lspci import import_lspci
from tlpsim.importers.pciebench import PcieBenchData
from tlpsim.pciebench.cells import Cell, short_name
from tlpsim.pciebench.facts import Fact, host_facts

__all__ = [
    "BW_OUTSTANDING",
    "DEFAULT_LLC",
    "KNOWN_CPUS",
    "Machine",
    "ScenarioWriter",
    "host_keys",
    "machine_of",
    "scenario_text",
    "toml_value",
]

#: Transfers a bandwidth test keeps in flight: more than the NFP can have (its 32 read tags
#: and its engines limit it, as they limit pcie-bench's firmware).
BW_OUTSTANDING = 64

#: Last-level cache of the CPUs the shipped directories name: (bytes, ways), by model number.
KNOWN_CPUS: dict[str, tuple[int, int]] = {
    "E5-2630 v4": (25 << 20, 20),  # Broadwell-EP, Intel ARK: 25 MB SmartCache
    "E5-2620 v3": (15 << 20, 20),  # Haswell-EP, Intel ARK: 15 MB SmartCache
}

#: The LLC (bytes, ways) assumed for a CPU not in :data:`KNOWN_CPUS`: the host memory
#: model's default (a Xeon E5 v4's), said in the machine's notes.
DEFAULT_LLC: tuple[int, int] = (25 << 20, 20)

#: The NFP-6000 as lspci names it.
_NFP = re.compile(r"Netronome.*Device 6000|NFP-?6000", re.IGNORECASE)

#: The workload's direction and transfers in flight per test.
_DIRECTIONS = {
    "BW_DMA_RD": ("read", BW_OUTSTANDING),
    "BW_DMA_WR": ("write", BW_OUTSTANDING),
    "BW_DMA_RW": ("alternate", BW_OUTSTANDING),
    "LAT_DMA_RD": ("read", 1),
    "LAT_DMA_WRRD": ("write-read", 1),
}

#: A cache word a loader refuses, and the word used instead.
CACHE_FALLBACK = {"remote-warm": "warm", "device-warm": "warm"}

#: The device dict's key that goes on the workload as ``tlp_payload``.
WRITE_TLP_PAYLOAD = "write_tlp_payload"


@dataclass(frozen=True)
class Machine:
    """What a pcie-bench directory says about its host and the card's link: each fact from
    the directory's own files where one states it (:mod:`tlpsim.pciebench.facts`), else from
    its name or a stated default; :attr:`facts` holds every one with its source."""

    directory: str
    #: The directory's short name (``bdw-s0-s0-s0``).
    short: str
    #: The card's link (LnkSta) and its DevCtl/DevCtl2 settings, from ``sys-lspci.txt``.
    gen: int
    width: int
    mps: int
    mrrs: int
    tags: int
    #: The function the link was read from: ``03:00.0 Netronome Systems, Inc. Device 6000``.
    device: str
    #: The CPU model (``E5-2630 v4``), and its LLC where known.
    cpu: str | None
    llc_bytes: int | None
    llc_ways: int | None
    iommu: bool
    #: With the IOMMU on: super pages (2 MiB) or 4 KiB pages only (``nosp``); None when off.
    super_pages: bool | None
    #: Sockets of the card, of its buffer's memory and of the CPU that warmed the caches
    #: (None where nothing gives the topology: one socket assumed).
    device_socket: int | None
    memory_socket: int | None
    warming_socket: int | None
    #: Where the directory leaves something out or names what tlpsim cannot tell apart.
    notes: tuple[str, ...] = field(default=(), compare=False)
    #: Every fact above by its field name, with its source (``sys-cpuinfo.txt: cache size``
    #: or ``assumed: <why>``).
    facts: Mapping[str, Fact] = field(default_factory=dict, compare=False)

    @property
    def assumptions(self) -> list[str]:
        """One line per fact no file of the directory states: ``LLC ways 20: assumed: ...``."""
        return [f"{_LABELS.get(k, k)} {_shown(k, f.value)}: {f.source}" for k, f in self.facts.items() if f.assumed]

    def fact_rows(self) -> list[dict[str, str]]:
        """One row per fact, as a table shows it: ``{"fact": "LLC", "value": "20 MiB", "source": ...}``."""
        return [
            {"fact": _LABELS.get(k, k), "value": _shown(k, f.value), "source": f.source} for k, f in self.facts.items()
        ]

    def facts_dict(self) -> dict[str, dict[str, Any]]:
        """Each fact as ``{"value": ..., "source": ...}`` (sizes as tlpsim writes them)."""
        return {k: {"value": _json_value(k, f.value), "source": f.source} for k, f in self.facts.items()}

    @property
    def remote_memory(self) -> bool:
        """The buffer is on the other socket than the card."""
        return None not in (self.device_socket, self.memory_socket) and self.device_socket != self.memory_socket

    @property
    def remote_warm(self) -> bool:
        """The caches were warmed by the CPU of the other socket than the card's."""
        return None not in (self.device_socket, self.warming_socket) and self.device_socket != self.warming_socket

    @property
    def walks(self) -> bool:
        """Whether its IOMMU walks pages within the windows pcie-bench sweeps: on, with 4 KiB
        pages (2 MiB pages reach 128 MiB, past the largest 64 MiB window)."""
        return self.iommu and not self.super_pages

    @property
    def no_walks(self) -> bool:
        """Whether its IOMMU, if any, never walks within the windows swept."""
        return not self.walks

    @property
    def addressing(self) -> int:
        """Address bits of the card's requests: 32 with the IOMMU on (Linux hands out IOVAs
        below 4 GiB: 3-DW headers), else 64 (the buffer lies above 4 GiB)."""
        return 32 if self.iommu else 64


#: How the assumptions block names each fact.
_LABELS = {
    "llc_bytes": "LLC", "llc_ways": "LLC ways", "iommu": "IOMMU", "super_pages": "IOMMU super pages",
    "device_socket": "card's socket", "memory_socket": "memory's socket", "warming_socket": "warming CPU's socket",
    "cpu": "CPU", "sockets": "sockets", "gen": "link generation", "width": "link width", "mps": "MPS (bytes)",
    "mrrs": "MRRS (bytes)", "tags": "tags",
}  # fmt: skip


def _json_value(key: str, value: Any) -> Any:
    return format_size(value) if key == "llc_bytes" and value is not None else value


def _shown(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "unknown" if value is None else str(_json_value(key, value))


def _card(lspci_text: str, origin: str) -> tuple[dict[str, Any], list[str]]:
    """The card's row of the lspci import (the NFP-6000, else the importer's choice)."""
    imported = import_lspci(lspci_text if "\n" in lspci_text else lspci_text + "\n")
    endpoints = [d for d in imported.devices if d["role"] == "endpoint"]
    nfp = [d for d in endpoints if _NFP.search(d["description"] or "")]
    if nfp:
        return nfp[0], []
    card = next(d for d in endpoints if d["node"] == imported.focus)
    return card, [
        f"{origin}: no Netronome NFP-6000 (Device 6000); the card is taken to be {card['bdf']} "
        f"{card['description']}, the endpoint with the fastest link"
    ]


def machine_of(
    data: PcieBenchData, lspci_text: str, origin: str = "sys-lspci.txt", files: Mapping[str, str] | None = None
) -> Machine:
    """The :class:`Machine` of a pcie-bench directory: its results' host (``data.host``, what
    the name says), the text of its ``sys-lspci.txt`` (``origin`` names it in messages) and
    its other ``sys-*.txt`` files by name (:func:`tlpsim.pciebench.facts.host_facts`).
    Raises :class:`ImportFileError` when the lspci text has no endpoint with a link."""
    card, notes = _card(lspci_text, origin)
    h = data.host
    if card["gen"] is None or card["width"] is None:
        raise ImportFileError(f"{origin}: {card['bdf']} reports no link speed and width (LnkSta)")
    mps, mrrs = card["mps"], card["mrrs"]
    lspci = f"sys-lspci.txt: {card['bdf']}"
    facts: dict[str, Fact] = {
        "gen": Fact(card["gen"], f"{lspci} LnkSta"),
        "width": Fact(card["width"], f"{lspci} LnkSta"),
        "mps": Fact(mps, f"{lspci} DevCtl MaxPayload") if mps else Fact(256, f"assumed: {lspci} reports no DevCtl"),
        "mrrs": Fact(mrrs, f"{lspci} DevCtl MaxReadReq") if mrrs else Fact(512, f"assumed: {lspci} reports no DevCtl"),
        "tags": Fact(card["tags"], f"{lspci} DevCtl ExtTag") if card["tags"] else Fact(32, "assumed: 5-bit tags"),
    }
    host = host_facts(files or {}, h, card["bdf"], KNOWN_CPUS)
    facts.update(host)
    if host["llc_bytes"].value is None:
        why = f"no cache size in sys-cpuinfo.txt and CPU {host['cpu'].value or 'not named'}"
        facts["llc_bytes"] = Fact(DEFAULT_LLC[0], f"assumed: {format_size(DEFAULT_LLC[0])}, the default ({why})")
    sockets = [facts[k].value for k in ("device_socket", "memory_socket", "warming_socket")]
    if None in sockets:
        notes.append("no file or name gives the whole socket topology: card, memory and warming CPU on one socket")
    return Machine(
        directory=data.directory, short=short_name(h), gen=card["gen"], width=card["width"],
        mps=facts["mps"].value, mrrs=facts["mrrs"].value, tags=facts["tags"].value,
        device=f"{card['bdf']} {card['description']}", cpu=facts["cpu"].value, llc_bytes=facts["llc_bytes"].value,
        llc_ways=facts["llc_ways"].value, iommu=bool(facts["iommu"].value),
        super_pages=facts["super_pages"].value if facts["iommu"].value else None,
        device_socket=sockets[0], memory_socket=sockets[1], warming_socket=sockets[2], notes=tuple(notes),
        facts=facts,
    )  # fmt: skip


def host_keys(machine: Machine) -> dict[str, Any]:
    """The ``[[root_complex]]`` keys that follow from the machine alone: the LLC (when the
    CPU is known), the IOMMU and its page size, the memory's socket."""
    keys: dict[str, Any] = {}
    if machine.llc_bytes is not None:
        keys["llc_size"] = format_size(machine.llc_bytes)
        keys["llc_ways"] = machine.llc_ways
    keys["iommu"] = "on" if machine.iommu else "off"
    if machine.iommu:
        keys["iommu_page_size"] = "2MiB" if machine.super_pages else "4KiB"
    keys["memory_socket"] = "remote" if machine.remote_memory else "local"
    return keys


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _toml_string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"')
    if _CONTROL.search(out):
        out = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return f'"{out}"'


def toml_value(value: Any) -> str:
    """``value`` as a TOML value: a string, a bool, an integer, a finite float, a list, or
    a dict as an inline table (``{ read = "16ns", write = "21ns" }``). Raises ``TypeError``
    or ``ValueError`` for anything else."""
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no TOML value here (a finite number is needed)")
        return repr(value)
    if isinstance(value, Mapping):
        items = [f"{k if _BARE_KEY.fullmatch(str(k)) else _toml_string(str(k))} = {toml_value(v)}"
                 for k, v in value.items()]  # fmt: skip
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"{value!r} ({type(value).__name__}) has no TOML value")


def _cache_word(cell: Cell, machine: Machine, cache_words: Collection[str] | None) -> str:
    """The workload's ``cache`` for a cell: HWarm is warm (remote-warm when another socket's
    CPU warmed it), Cold and DThrash cold, DWarm device-warm; a word the loader refuses
    (``cache_words``) falls back to :data:`CACHE_FALLBACK`.

    LAT_DMA_WRRD in Cold or DThrash is device-warm: the test writes each line before it
    reads it, and its 2,097,152 or more samples (``#samples`` in ``lat_*.txt``) revisit the lines of
    any window up to 64 MiB, so the state it measures is the one its own writes leave (the
    lines in the DDIO ways), not the cold start its short simulated run would see."""
    words = {"HWarm": "remote-warm" if machine.remote_warm else "warm", "Cold": "cold", "DThrash": "cold",
             "DWarm": "device-warm"}  # fmt: skip
    if cell.cache not in words:
        raise ValueError(f"cache state {cell.cache!r} is not one of HWarm, Cold, DThrash, DWarm")
    word = words[cell.cache]
    if cell.test == "LAT_DMA_WRRD" and word == "cold":
        word = "device-warm"
    if cache_words is not None and word not in cache_words:
        word = CACHE_FALLBACK.get(word, word)
    return word


def _keys(section: Mapping[str, Any]) -> list[str]:
    return [f"{k} = {toml_value(v)}" for k, v in section.items() if v is not None]


class ScenarioWriter:
    """The scenarios of one machine with the same device and host keys: the sections they
    share are written once, the ``[simulation]`` and ``[[workload]]`` per cell (:meth:`text`);
    see :func:`scenario_text`."""

    def __init__(
        self,
        machine: Machine,
        device: Mapping[str, Any],
        host: Mapping[str, Any],
        cache_words: Collection[str] | None = None,
    ):
        self.machine = machine
        self.cache_words = cache_words
        self.payload = device.get(WRITE_TLP_PAYLOAD)
        endpoint = {k: v for k, v in device.items() if k != WRITE_TLP_PAYLOAD}
        m = machine
        self.fabric = "\n".join([
            "[pcie]", f"gen = {m.gen}", f"mps = {m.mps}", f"mrrs = {m.mrrs}", f"addressing = {m.addressing}",
            "", "[[root_complex]]", 'name = "rc"', *_keys({"completion": "mps", **host}),
            "", "[[endpoint]]", 'name = "nfp"', 'kind = "dma"', f"tags = {m.tags}", *_keys(endpoint),
            "", "[[link]]", 'between = ["rc", "nfp"]', f"width = {m.width}",
        ])  # fmt: skip

    def text(self, cell: Cell, duration: str = "40us", warmup: str = "5us", seed: int = 1) -> str:
        """The TOML of ``cell``'s scenario."""
        if cell.test not in _DIRECTIONS:
            raise ValueError(f"test {cell.test!r} is not one of {', '.join(_DIRECTIONS)}")
        direction, outstanding = _DIRECTIONS[cell.test]
        pattern = "random" if cell.pattern == "Rand" else "sequential"
        lines = [
            f"# pcie-bench {self.machine.directory}: {cell.test}",
            "[simulation]", f"duration = {toml_value(duration)}", f"warmup = {toml_value(warmup)}", f"seed = {seed}",
            "", self.fabric,
            "", "[[workload]]", 'name = "dma"', 'kind = "dma"', 'endpoint = "nfp"', f'direction = "{direction}"',
            f'transfer_size = "{cell.transfer_bytes}B"', f"outstanding = {outstanding}",
            f'window = "{cell.window_bytes}B"', f'pattern = "{pattern}"',
            f"host_offset = {cell.host_offset}", f"device_offset = {cell.device_offset}",
            f"cache = {toml_value(_cache_word(cell, self.machine, self.cache_words))}",
        ]  # fmt: skip
        payload = self.payload
        if payload is not None and direction != "read":
            lines.append(f"tlp_payload = {toml_value(f'{payload}B' if isinstance(payload, int) else payload)}")
        return "\n".join(lines) + "\n"


def scenario_text(
    cell: Cell,
    machine: Machine,
    device: Mapping[str, Any],
    host: Mapping[str, Any],
    duration: str = "40us",
    warmup: str = "5us",
    seed: int = 1,
    cache_words: Collection[str] | None = None,
) -> str:
    """The TOML of one cell's scenario: the root complex ``rc`` (MPS-sized completions and
    every ``host`` key), the card ``nfp`` (its tags and every ``device`` key but
    ``write_tlp_payload``, which becomes a writing workload's ``tlp_payload``), their link, and
    the cell's test as a DMA workload. Keys whose value is None are left out.
    ``cache_words``: the cache words the loader accepts (all when None)."""
    return ScenarioWriter(machine, device, host, cache_words).text(cell, duration, warmup, seed)
