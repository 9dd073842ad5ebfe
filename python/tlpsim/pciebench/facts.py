"""What a pcie-bench directory's own ``sys-*.txt`` files state about its host, each fact with
the file and field it came from (:func:`host_facts`).

- ``sys-cpuinfo.txt``: the CPU model, the sockets (distinct ``physical id``) and the LLC
  (``cache size``).
- ``sys-kernel-cmdline.txt`` and ``sys-dmesg.txt``: the IOMMU on or off (``intel_iommu=on``,
  ``Intel-IOMMU: enabled``), super pages off (``sp_off``, ``disable supported super page``)
  or supported (the SLLPS bits 37:34 of the DMAR capability register, Intel VT-d
  specification section 11.4.2).
- ``sys-pci-cpulist.txt`` with ``sys-numactl.txt``: the NUMA node, so the socket, whose CPUs
  are local to the card.
- ``sys-dma-addrs.txt`` with the SRAT memory ranges in ``sys-dmesg.txt``: the socket of the
  DMA buffer's memory (physical addresses only: with the IOMMU on they are IOVAs).

A fact no file states comes from the directory's name (:func:`parse_host_name`) or a stated
default, and its source says so: ``assumed: <why>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Fact", "SYS_FILES", "host_facts"]

#: The ``sys-*.txt`` files the facts come from (``sys-lspci.txt`` gives the card's link).
SYS_FILES = (
    "sys-lspci.txt", "sys-cpuinfo.txt", "sys-kernel-cmdline.txt", "sys-dmesg.txt", "sys-numactl.txt",
    "sys-pci-cpulist.txt", "sys-lstopo.txt", "sys-dma-addrs.txt",
)  # fmt: skip

#: LLC ways when no file states them: Intel Xeon E5 v1-v4 LLCs are 20-way (the files give the
#: size, never the associativity).
DEFAULT_LLC_WAYS = 20


@dataclass(frozen=True)
class Fact:
    """A value and where it came from: ``sys-cpuinfo.txt: cache size``, or ``assumed: ...``."""

    value: Any
    source: str

    @property
    def assumed(self) -> bool:
        """Whether no file stated it."""
        return self.source.startswith("assumed")


def _field(text: str, name: str) -> list[str]:
    """Every value of ``name : value`` lines (``/proc/cpuinfo``)."""
    return [m.group(1).strip() for m in re.finditer(rf"^{re.escape(name)}\s*:\s*(.*)$", text, re.MULTILINE)]


_CPU_MODEL = re.compile(r"\b([EWX]\d?-?\s?\d{4}[A-Z]?(?:\s?v\d)?|i[3579]-\d{4}[A-Z]*)\b")


def _model(text: str) -> str | None:
    """The CPU model in a name: ``E5-2630 v4`` of ``Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz``
    or of ``bdw-Xeon-E5-2630v4``."""
    m = _CPU_MODEL.search(text)
    return re.sub(r"\s*(v\d)$", r" \1", re.sub(r"\s+", " ", m.group(1))) if m else None


def _cpu(files: Mapping[str, str], name_cpu: str | None) -> Fact:
    names = _field(files.get("sys-cpuinfo.txt", ""), "model name")
    if names:
        return Fact(_model(names[0]) or names[0], "sys-cpuinfo.txt: model name")
    return Fact((name_cpu and _model(name_cpu)) or name_cpu, "assumed: the directory's name (no sys-cpuinfo.txt)")


def _llc(files: Mapping[str, str], known: Mapping[str, tuple[int, int]], cpu: str | None) -> tuple[Fact, Fact]:
    sizes = _field(files.get("sys-cpuinfo.txt", ""), "cache size")
    m = re.fullmatch(r"(\d+)\s*KB", sizes[0]) if sizes else None
    norm = re.sub(r"[^0-9a-z]", "", (cpu or "").lower())
    table = next((llc for model, llc in known.items() if re.sub(r"[^0-9a-z]", "", model.lower()) in norm), None)
    ways = Fact(DEFAULT_LLC_WAYS, f"assumed: {DEFAULT_LLC_WAYS} ways, as Intel Xeon E5 LLCs (no file states the ways)")
    if m:
        return Fact(int(m.group(1)) << 10, "sys-cpuinfo.txt: cache size"), ways
    if table:
        return Fact(table[0], f"assumed: the LLC of a {cpu} (Intel ARK; no cache size in sys-cpuinfo.txt)"), ways
    return Fact(None, "assumed: unknown (no cache size in sys-cpuinfo.txt)"), ways


def _nodes(files: Mapping[str, str]) -> dict[int, set[int]] | None:
    """NUMA node -> its CPUs, from ``numactl --hardware``."""
    text = files.get("sys-numactl.txt", "")
    nodes = {int(m.group(1)): {int(c) for c in m.group(2).split()}
             for m in re.finditer(r"^node (\d+) cpus:(.*)$", text, re.MULTILINE)}  # fmt: skip
    return nodes or None


def _cpulist(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        if a.strip().isdigit():
            out |= set(range(int(a), int(b) + 1)) if b.strip().isdigit() else {int(a)}
    return out


def _device_socket(files: Mapping[str, str], bdf: str, nodes: dict[int, set[int]] | None) -> int | None:
    """The NUMA node whose CPUs ``sys-pci-cpulist.txt`` lists as local to the card."""
    if not nodes:
        return None
    short = bdf.lower()
    for line in files.get("sys-pci-cpulist.txt", "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].lower().endswith(short):
            cpus = _cpulist(parts[1])
            matches = [n for n, own in nodes.items() if cpus and cpus <= own]
            return matches[0] if len(matches) == 1 else None
    return None


def _memory_node(files: Mapping[str, str]) -> int | None:
    """The NUMA node every DMA buffer address lies in, by the SRAT ranges in dmesg."""
    ranges = [(int(m.group(2), 16), int(m.group(3), 16), int(m.group(1)))
              for m in re.finditer(r"SRAT: Node (\d+) PXM \d+ \[mem (0x[0-9a-f]+)-(0x[0-9a-f]+)\]",
                                   files.get("sys-dmesg.txt", ""))]  # fmt: skip
    addrs = [int(a, 16) for a in re.findall(r"^\s*(0x[0-9a-fA-F]+)\s*$", files.get("sys-dma-addrs.txt", ""), re.M)]
    if not ranges or not addrs:
        return None
    found = {next((n for lo, hi, n in ranges if lo <= a <= hi), None) for a in addrs}
    return found.pop() if len(found) == 1 and None not in found else None


def _iommu(files: Mapping[str, str], name_iommu: bool, name_sp: bool | None) -> tuple[Fact, Fact]:
    cmdline = files.get("sys-kernel-cmdline.txt")
    dmesg = files.get("sys-dmesg.txt", "")
    flags = re.search(r"\bintel_iommu=(\S+)", cmdline or "")
    words = flags.group(1).split(",") if flags else []
    if "Intel-IOMMU: enabled" in dmesg or "DMAR: IOMMU enabled" in dmesg:
        on = Fact(True, "sys-dmesg.txt: Intel-IOMMU: enabled")
    elif cmdline is not None:
        on = Fact("on" in words, f"sys-kernel-cmdline.txt: {flags.group(0) if flags else 'no intel_iommu=on'}")
    else:
        on = Fact(name_iommu, "assumed: the directory's name (no sys-kernel-cmdline.txt or sys-dmesg.txt)")
    if not on.value:
        return on, Fact(None, on.source)
    if "disable supported super page" in dmesg:
        return on, Fact(False, "sys-dmesg.txt: Intel-IOMMU: disable supported super page")
    if "sp_off" in words:
        return on, Fact(False, f"sys-kernel-cmdline.txt: {flags.group(0)}")
    caps = [int(c, 16) for c in re.findall(r"IOMMU \d+: reg_base_addr \S+ ver \S+ cap ([0-9a-f]+)", dmesg)]
    if caps:
        supported = all((c >> 34) & 1 for c in caps)
        what = "sys-dmesg.txt: DMAR cap SLLPS bit 34 (2 MiB pages)"
        return on, Fact(supported, what + ("" if supported else " clear"))
    if name_sp is not None:
        return on, Fact(name_sp, "assumed: the directory's name (no super page state in its files)")
    return on, Fact(True, "assumed: Linux's default with intel_iommu=on (super pages where supported)")


def host_facts(files: Mapping[str, str], name_host: Mapping[str, Any], bdf: str,
               known_llc: Mapping[str, tuple[int, int]]) -> dict[str, Fact]:  # fmt: skip
    """The host's facts, each with its source: ``cpu``, ``sockets``, ``llc_bytes``,
    ``llc_ways``, ``iommu``, ``super_pages`` (None with the IOMMU off), ``device_socket``,
    ``memory_socket``, ``warming_socket``. ``files`` holds the directory's ``sys-*.txt``
    texts by file name, ``name_host`` what its name says (:func:`parse_host_name`), ``bdf``
    the card's address and ``known_llc`` the LLC by CPU model where cpuinfo has none."""
    cpu = _cpu(files, name_host.get("cpu"))
    llc, ways = _llc(files, known_llc, cpu.value)
    iommu, super_pages = _iommu(files, bool(name_host.get("iommu")), name_host.get("iommu_super_pages"))
    nodes = _nodes(files)
    physical = set(_field(files.get("sys-cpuinfo.txt", ""), "physical id"))
    if nodes:
        sockets = Fact(len(nodes), "sys-numactl.txt: nodes")
    elif physical:
        sockets = Fact(len(physical), "sys-cpuinfo.txt: physical id")
    else:
        guess = 2 if name_host.get("device_socket") is not None else 1
        sockets = Fact(guess, "assumed: the directory's name")
    facts = {"cpu": cpu, "sockets": sockets, "llc_bytes": llc, "llc_ways": ways, "iommu": iommu,
             "super_pages": super_pages}  # fmt: skip
    if sockets.value == 1:
        one = Fact(0, f"{sockets.source}: one socket")
        return {**facts, "device_socket": one, "memory_socket": one, "warming_socket": one}
    by_name = {k: name_host.get(k) for k in ("device_socket", "memory_socket", "warming_socket")}
    named = "assumed: the directory's name"
    device = _device_socket(files, bdf, nodes)
    device_fact = (
        Fact(device, f"sys-pci-cpulist.txt and sys-numactl.txt: {bdf}'s local CPUs are node {device}'s")
        if device is not None
        else Fact(by_name["device_socket"], f"{named} (no local CPU list of {bdf})")
    )
    memory = None if iommu.value else _memory_node(files)
    memory_fact = (
        Fact(memory, f"sys-dma-addrs.txt and sys-dmesg.txt: the buffer lies in node {memory}'s SRAT range")
        if memory is not None
        else Fact(
            by_name["memory_socket"],
            f"{named} ("
            + ("the buffer's addresses are IOVAs" if iommu.value else "no SRAT ranges or buffer addresses")
            + ")",
        )
    )
    warming = Fact(by_name["warming_socket"], f"{named} (no file records which CPU ran the control program)")
    return {**facts, "device_socket": device_fact, "memory_socket": memory_fact, "warming_socket": warming}
