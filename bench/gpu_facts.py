"""PCIe facts of every NVIDIA function and the bridges above it, from sysfs alone (hosts
without lspci): current and maximum link speed and width, and MPS / MRRS read from the
PCI Express capability's Device Control register in config space."""

import os
import sys

BASE = "/sys/bus/pci/devices"


def rd(dev: str, name: str) -> str:
    try:
        with open(os.path.join(BASE, dev, name)) as f:
            return f.read().strip()
    except OSError as e:
        return f"? ({e.strerror})"


def devctl(dev: str) -> str:
    try:
        with open(os.path.join(BASE, dev, "config"), "rb") as f:
            cfg = f.read()
    except OSError as e:
        return f"config unreadable ({e.strerror})"
    if len(cfg) < 64:
        return "config too short"
    ptr = cfg[0x34]
    seen = 0
    while ptr and seen < 48:
        if cfg[ptr] == 0x10:  # PCI Express capability
            ctl = int.from_bytes(cfg[ptr + 8 : ptr + 10], "little")
            cap = int.from_bytes(cfg[ptr + 4 : ptr + 8], "little")
            return (
                f"MPS {128 << ((ctl >> 5) & 7)} (supported {128 << (cap & 7)}), "
                f"MRRS {128 << ((ctl >> 12) & 7)}, RO {(ctl >> 4) & 1}, ExtTag {(ctl >> 8) & 1}"
            )
        ptr = cfg[ptr + 1]
        seen += 1
    return "no PCI Express capability"


for dev in sorted(os.listdir(BASE)):
    vendor = rd(dev, "vendor")
    cls = rd(dev, "class")
    if vendor != "0x10de" and not cls.startswith("0x0604"):
        continue
    path = os.path.realpath(os.path.join(BASE, dev))
    print(dev, vendor, rd(dev, "device"), cls, "numa", rd(dev, "numa_node"))
    print("   path", path)
    for k in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
        print("  ", k, rd(dev, k))
    print("  ", devctl(dev))
sys.stdout.flush()
