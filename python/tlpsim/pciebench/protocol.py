"""THE protocol of the ``pciebench`` validation system and of ``tlpsim fit``, as data.

- The NFP-6000's device parameters (``[[endpoint]]`` keys), with their start values, fitted
  once on at most seven cells of :data:`DEVICE_DIRECTORY` and shared by every host.
- The host's parameters (``[[root_complex]]`` keys), fitted per directory on at most four
  cells chosen by the same selectors in every directory.
- Fixed values, each with where it comes from.
- The simulated time of a cell.

A cell is ``calibrate`` when it is a device calibrate cell of :data:`DEVICE_DIRECTORY` or
a host calibrate cell of its own directory, ``predict`` otherwise. Changing the protocol is
editing this file: the pipeline reads nothing else. docs/pcie-bench-data.md says what each
cell shows; docs/validation-gaps.md what the fitted model still misses.
"""

from __future__ import annotations

from typing import Any

from tlpsim.pciebench.fit import Parameter, Selector

__all__ = [
    "BW_DURATION",
    "CALIBRATION_DIRECTORIES",
    "CALIBRATION_HOST_PARAMETERS",
    "DEVICE",
    "DEVICE_DIRECTORY",
    "DEVICE_PARAMETERS",
    "HOST",
    "HOST_PARAMETERS",
    "LAT_DURATION",
    "PASSES",
    "PROVENANCE",
    "SEED",
    "WARMUP",
]

#: The directory whose cells calibrate the device for ``tlpsim fit`` (bdw-s0-s0-s0).
DEVICE_DIRECTORY = "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0"

#: The calibration directory of each shipped host, by the host's CPU model as its
#: ``sys-cpuinfo.txt`` names it: the host's directory with the IOMMU off and card, memory
#: and CPU on one socket. Cross-host validation fits the device on one host's and predicts
#: the other host's directories; in-sample, on the directory's own host's.
CALIBRATION_DIRECTORIES: dict[str, str] = {
    "E5-2630 v4": DEVICE_DIRECTORY,
    "E5-2620 v3": "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630",
}

#: Simulated time of a bandwidth cell and of a latency cell (one transfer in flight: about
#: 600 ns each, so a latency cell needs the longer run for its 99.9th percentile), warmup
#: included; the warmup; the seed.
BW_DURATION = "40us"
LAT_DURATION = "200us"
WARMUP = "5us"
SEED = 1

#: Rounds of coordinate-wise fitting (the parameters interact).
PASSES = 2

_RD_SZ = "bw_dma_sz_sweep"
_LAT_SZ = "lat_dma_sizes"
_MEDIAN = "latency_median_ns"

#: The NFP's ``[[endpoint]]`` keys: start values of the fitted ones, and the fixed ones.
#: ``write_tlp_payload`` goes on the workload as ``tlp_payload``. One read engine and one
#: write engine; a read engine spends ``transfer_cost`` plus ``transfer_cost_per_kib`` per
#: KiB (or, if longer, ``partial_unit_cost`` for a transfer ending inside an 8-byte word),
#: a write engine ``transfer_cost`` plus ``request_cost`` per 128-byte MWr. A write's data
#: leave ``latency_per_kib`` per KiB after it starts, pipelined (no engine held): WRRD
#: latency grows 0.54 ns/B on both hosts against 0.29 ns/B for RD, which the write engine's
#: occupancy cannot give without slowing BW_DMA_WR.
DEVICE: dict[str, Any] = {
    "dma_engines": {"read": 1, "write": 1},
    "request_cost": {"read": "0ns", "write": "17ns"},
    "transfer_cost": {"read": "5.5ns", "write": "4.2ns"},
    "transfer_cost_per_kib": {"read": "143ns", "write": "0ns"},
    "dma_unit": "8B",
    "partial_unit_cost": {"read": "18ns", "write": "0ns"},
    "latency": {"read": "18ns", "write": "0ns"},
    "latency_per_kib": {"read": "0ns", "write": "200ns"},
    "write_tlp_payload": 128,
}

#: The device's free parameters and their calibrate cells (all of DEVICE_DIRECTORY), in
#: the order they are fitted (each after those its cell depends on).
DEVICE_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("latency.read", "device", "latency", "read", "ns", 0, 600,
              Selector("LAT_DMA_RD", _LAT_SZ, 64, _MEDIAN), rises=True),
    Parameter("transfer_cost.write", "device", "transfer_cost", "write", "ns", 0, 40,
              Selector("BW_DMA_WR", _RD_SZ, 64), rises=False),
    Parameter("request_cost.write", "device", "request_cost", "write", "ns", 0, 40,
              Selector("BW_DMA_WR", _RD_SZ, 129), rises=False),
    Parameter("transfer_cost.read", "device", "transfer_cost", "read", "ns", 0, 40,
              Selector("BW_DMA_RD", _RD_SZ, 128), rises=False),
    Parameter("transfer_cost_per_kib.read", "device", "transfer_cost_per_kib", "read", "ns", 0, 400,
              Selector("LAT_DMA_RD", _LAT_SZ, 2048, _MEDIAN), rises=True),
    Parameter("partial_unit_cost.read", "device", "partial_unit_cost", "read", "ns", 0, 60,
              Selector("BW_DMA_RD", _RD_SZ, 65), rises=False),
    Parameter("latency_per_kib.write", "device", "latency_per_kib", "write", "ns", 0, 600,
              Selector("LAT_DMA_WRRD", _LAT_SZ, 2048, _MEDIAN), rises=True),
)  # fmt: skip

#: The host's ``[[root_complex]]`` keys besides those the machine gives
#: (:func:`tlpsim.pciebench.model.host_keys`): start values of the fitted ones, and the
#: fixed ones. A directory's host parameters that the protocol does not fit there take the
#: calibration directory's fitted values instead.
HOST: dict[str, Any] = {
    "completion": "mps",
    "data_path_bandwidth": "11GB/s",
    "llc_hit_latency": "490ns",
    "memory_read_latency": "544ns",
    "read_bandwidth": "6.94GB/s",
    "llc_write_latency": "720ns",
    "iommu_walk_latency": "280ns",
    "iommu_walkers": 5,
    "iommu_walk_occupancy": "280ns",
    "ddio_ways": 2,
    "iotlb_entries": 64,
    "remote_latency": "53ns",
}

#: Host keys that apply only to a machine with this property.
HOST_ONLY_IF = {
    "iommu_walk_latency": "iommu",
    "iommu_walkers": "iommu",
    "iommu_walk_occupancy": "iommu",
    "iotlb_entries": "iommu",
}

#: The host's free parameters and their calibrate cells: the same selectors in every
#: directory, five per directory. The completion size is discrete: the root complex returns
#: read data in MPS-sized completions split at RCB boundaries ("mps") or one completion per
#: 64-byte RCB block ("rcb"), whichever simulates BW_DMA_RD 1 KiB nearer. The data path is
#: the host's read-write interplay (read completion data and posted write data share it),
#: fitted on BW_DMA_RW 1 KiB. With an IOMMU that walks within the swept windows (4 KiB
#: pages), its walk latency and walker occupancy (the walk rate: five walkers, each held
#: this long per walk) take the places of the read path and the write latency, which then
#: keep the calibration directory's values.
HOST_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("llc_hit_latency", "host", "llc_hit_latency", None, "ns", 20, 1000,
              Selector("BW_DMA_RD", _RD_SZ, 64), rises=False),
    Parameter("completion", "host", "completion", None, "", 0, 1,
              Selector("BW_DMA_RD", _RD_SZ, 1024), rises=True, choices=("mps", "rcb")),
    Parameter("read_bandwidth", "host", "read_bandwidth", None, "GB/s", 5, 9,
              Selector("BW_DMA_RD", _RD_SZ, 2048), rises=True, only_if="no_walks"),
    Parameter("llc_write_latency", "host", "llc_write_latency", None, "ns", 0, 2000,
              Selector("LAT_DMA_WRRD", _LAT_SZ, 64, _MEDIAN), rises=True, only_if="no_walks"),
    Parameter("data_path_bandwidth", "host", "data_path_bandwidth", None, "GB/s", 5, 30,
              Selector("BW_DMA_RW", _RD_SZ, 1024), rises=True),
    Parameter("iommu_walk_latency", "host", "iommu_walk_latency", None, "ns", 0, 1000,
              Selector("LAT_DMA_RD", "lat_dma_sweep_rd_rnd_64", 64, _MEDIAN, window="largest", cache="Cold"),
              rises=True, only_if="walks"),
    Parameter("iommu_walk_occupancy", "host", "iommu_walk_occupancy", None, "ns", 10, 1000,
              Selector("BW_DMA_RD", "bw_dma_win_sweep_rd_rnd_64", 64, window="largest", cache="Cold"),
              rises=False, only_if="walks"),
)  # fmt: skip

#: Host parameters fitted only on the calibration directory, with the device; every other
#: directory keeps that value (the five-cell budget per host goes to the parameters above).
#: DRAM's latency over the LLC hit: 53 ns on bdw, 56 ns on hsw when each was fitted on its
#: own host.
CALIBRATION_HOST_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("dram_over_llc", "host", "memory_read_latency", None, "ns", 0, 400,
              Selector("LAT_DMA_RD", "lat_dma_details", 64, _MEDIAN, window=8192, cache="Cold"),
              rises=True, plus="llc_hit_latency"),
)  # fmt: skip

#: Where each fixed value comes from.
PROVENANCE: dict[str, str] = {
    "dma_engines": "one read and one write engine: RW at 64 B runs 45 M/s each way, more in total than "
    "either side alone; one engine per side fits the per-DMA times of the size sweep",
    "dma_unit": "the NFP's 8-byte memory word: 16, 32, 64 and 128 B reads run fast, 63, 65 and 127 B slow, "
    "and a device offset not a multiple of 8 halves 64 B reads",
    "write_tlp_payload": "pcie-bench data: 2048 B writes take 309.1 ns with 4-DW and 300.9 ns with 3-DW "
    "headers, 148/152 = 128 B TLPs",
    "ddio_ways": "Intel's default DDIO share: 2 of 20 LLC ways",
    "iotlb_entries": "the Intel VT-d IOTLB reach that fits the read knee between 256 and 512 KiB windows "
    "with 4 KiB pages; not fitted on a cell",
    "remote_latency": "one crossing of the inter-socket link: the s0-s1-s0 against s0-s0-s0 difference of "
    "their calibrate cells LAT_DMA_RD 64 B Cold 8 KiB (653 - 600 ns)",
    "iommu_walkers": "five walks at once (the whole number that came nearest the 64 MiB read rate, 5 x 280 ns, "
    "before the occupancy was fitted); the fitted occupancy sets the walk rate, walkers / occupancy",
    "llc_size": "the CPU's LLC from its model number (E5-2630 v4: 25 MiB, E5-2620 v3: 15 MiB, 20 ways)",
}
