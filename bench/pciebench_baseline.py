"""The closed form against the simulator on pcie-bench's size sweeps.

For every predicted ``bw_dma_sz_sweep`` cell of the ``pciebench`` validation system (64 B to
2 KiB), the error of tlpsim's closed-form link model (``tlpsim link``: Gen3 x8, MPS 256,
the directory's MRRS and addressing, MPS-sized completions) beside the simulator's. RD is
the link's read goodput, WR its write goodput, RW one direction of alternating reads and
writes (the TX side carries the writes and the read requests). Usage::

    python bench/pciebench_baseline.py
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import tlpsim
from tlpsim.pciebench import pipeline


def closed_form(test: str, size: int, mrrs: int, addressing: int) -> float:
    """Gb/s of one direction of ``test`` at ``size`` bytes per DMA, in closed form."""
    link = tlpsim.link_bandwidth(
        gen=3, width=8, mps=256, mrrs=mrrs, payload=size, addressing=addressing, completion="mps"
    )
    if test == "BW_DMA_RD":
        return link.read_gbps
    if test == "BW_DMA_WR":
        return link.write_gbps
    tlp_gbps = link.encoded_gbps * (1 - link.dllp_fraction - link.skp_fraction)
    mrd_bytes = (8 + 12 + (4 if addressing == 64 else 0)) * math.ceil(size / mrrs)
    seconds = size * 8 / (link.write_gbps * 1e9) + mrd_bytes * 8 / (tlp_gbps * 1e9)
    return min(size * 8 / seconds / 1e9, link.read_gbps)


#: pcie-bench's own model (pcie_bw.py, its equations as docs/pcie-bench-data.md §2 gives
#: them): Gen3 x8 TLP bandwidth after its DLLP and SKP terms, in Gb/s.
PCIE_BW_TLP_GBPS = 63.015384615 * (1 - 8 / 203 - 8 / 203 - 4 / 1538)


def pcie_bench_model(test: str, size: int) -> float:
    """Gb/s of ``test`` at ``size`` bytes as pcie-bench's model gives it (MPS 256, MRRS 512,
    64-bit addresses, MPS-sized completions)."""
    tlps = math.ceil(size / 256)
    if test == "BW_DMA_RD":
        return PCIE_BW_TLP_GBPS * size / (size + tlps * 20)
    if test == "BW_DMA_WR":
        return PCIE_BW_TLP_GBPS * size / (size + tlps * 24)
    return PCIE_BW_TLP_GBPS * size / (size + tlps * 24 + math.ceil(size / 512) * 24)


def main() -> None:
    """Prints median and max |error| per test, closed form, pcie-bench's model and the
    simulator, over all nine directories' predicted size-sweep cells of the cross-host fold
    (the device fitted on the other host)."""
    errors: dict[tuple[str, str], list[float]] = defaultdict(list)
    for report in pipeline.validate_reports():
        if report.fold != "cross-host":
            continue
        m = report.machine
        for cell, row in zip(report.cells, report.rows, strict=True):
            if cell.stem != "bw_dma_sz_sweep" or row["role"] != "predict" or cell.transfer_bytes < 64:
                continue
            cf = closed_form(cell.test, cell.transfer_bytes, m.mrrs, m.addressing)
            errors[(cell.test, "closed form")].append(abs(cf / cell.published - 1))
            errors[(cell.test, "simulator")].append(abs(row["error"]))
            pb = pcie_bench_model(cell.test, cell.transfer_bytes)
            errors[(cell.test, "pcie-bench")].append(abs(pb / cell.published - 1))
            errors[("all", "pcie-bench")].append(abs(pb / cell.published - 1))
            errors[("all", "closed form")].append(abs(cf / cell.published - 1))
            errors[("all", "simulator")].append(abs(row["error"]))
    print(f"{'test':10} {'model':12} {'cells':>5} {'median':>7} {'max':>7}")
    for (test, model), e in sorted(errors.items()):
        print(f"{test:10} {model:12} {len(e):5d} {100 * statistics.median(e):6.1f}% {100 * max(e):6.1f}%")


if __name__ == "__main__":
    main()
