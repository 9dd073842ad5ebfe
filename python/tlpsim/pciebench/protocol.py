"""THE protocol of the ``pciebench`` validation system and of ``tlpsim fit``, as data.

- The NFP-6000's device parameters (``[[endpoint]]`` keys), with their start values, fitted
  once on at most six cells of :data:`DEVICE_DIRECTORY` and shared by every host.
- The host's parameters (``[[root_complex]]`` keys), fitted per directory on at most four
  cells chosen by the same selectors in every directory.
- Fixed values, each with where it comes from.
- The simulated time of a cell.

A cell is ``calibrate`` when it is a device calibrate cell of :data:`DEVICE_DIRECTORY` or
a host calibrate cell of its own directory, ``predict`` otherwise. Changing the protocol is
editing this file: the pipeline reads nothing else.

The values below are placeholders until the host memory model's parameters are chosen.
"""

from __future__ import annotations

from typing import Any

from tlpsim.pciebench.fit import Parameter, Selector

__all__ = [
    "BW_DURATION",
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

#: The directory whose cells calibrate the device (bdw-s0-s0-s0).
DEVICE_DIRECTORY = "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0"

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

#: The NFP's ``[[endpoint]]`` keys: start values of the fitted ones, and the fixed ones.
#: ``write_tlp_payload`` goes on the workload as ``tlp_payload``.
DEVICE: dict[str, Any] = {
    "dma_engines": {"read": 2, "write": 1},
    "request_cost": {"read": "16ns", "write": "17ns"},
    "transfer_cost": {"read": "0ns", "write": "4.1ns"},
    "dma_unit": "8B",
    "partial_unit_cost": {"read": "8.7ns", "write": "0ns"},
    "latency": {"read": "300ns", "write": "0ns"},
    "write_tlp_payload": 128,
}

#: The device's free parameters and their calibrate cells (all of DEVICE_DIRECTORY).
DEVICE_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("request_cost.read", "device", "request_cost", "read", "ns", 1, 60,
              Selector("BW_DMA_RD", _RD_SZ, 64), rises=False),
    Parameter("request_cost.write", "device", "request_cost", "write", "ns", 1, 60,
              Selector("BW_DMA_WR", _RD_SZ, 129), rises=False),
    Parameter("transfer_cost.write", "device", "transfer_cost", "write", "ns", 0, 60,
              Selector("BW_DMA_WR", _RD_SZ, 64), rises=False),
    Parameter("partial_unit_cost.read", "device", "partial_unit_cost", "read", "ns", 0, 60,
              Selector("BW_DMA_RD", _RD_SZ, 65), rises=False),
    Parameter("latency.read", "device", "latency", "read", "ns", 0, 1000,
              Selector("LAT_DMA_RD", "lat_dma_sizes", 64, "latency_median_ns"), rises=True),
    # A per-DMA streaming rate; skipped (with a note) while the loader has no such key.
    Parameter("engine_bandwidth", "device", "engine_bandwidth", None, "GB/s", 1, 30,
              Selector("LAT_DMA_RD", "lat_dma_sizes", 2048, "latency_median_ns"), rises=False),
)  # fmt: skip

#: The host's ``[[root_complex]]`` keys besides those the machine gives
#: (:func:`tlpsim.pciebench.model.host_keys`): start values of the fitted ones, and the
#: fixed ones. A key missing here and fitted starts left out (``read_bandwidth``: unlimited).
HOST: dict[str, Any] = {
    "memory_read_latency": "155ns",
    "iommu_walk_latency": "280ns",
    "iommu_walkers": 5,
    "llc_hit_latency": "100ns",
    "ddio_ways": 2,
    "iotlb_entries": 64,
    "remote_latency": "53ns",
}

#: Host keys that apply only to a machine with this property.
HOST_ONLY_IF = {"iommu_walk_latency": "iommu", "iommu_walkers": "iommu", "iotlb_entries": "iommu"}

#: The host's free parameters and their calibrate cells (the same selectors everywhere).
HOST_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("memory_read_latency", "host", "memory_read_latency", None, "ns", 0, 1000,
              Selector("LAT_DMA_RD", "lat_dma_details", 64, "latency_median_ns", window=8192, cache="Cold"),
              rises=True),
    Parameter("read_bandwidth", "host", "read_bandwidth", None, "GB/s", 5, 10,
              Selector("BW_DMA_RD", _RD_SZ, 2048), rises=True),
    Parameter("iommu_walk_latency", "host", "iommu_walk_latency", None, "ns", 0, 1000,
              Selector("LAT_DMA_RD", "lat_dma_sweep_rd_rnd_64", 64, "latency_median_ns", window="largest",
                       cache="Cold"),
              rises=True, only_if="iommu"),
    Parameter("iommu_walkers", "host", "iommu_walkers", None, "", 1, 32,
              Selector("BW_DMA_RD", "bw_dma_win_sweep_rd_rnd_64", 64, window="largest", cache="Cold"),
              rises=True, integer=True, only_if="iommu"),
)  # fmt: skip

#: Where each fixed value comes from.
PROVENANCE: dict[str, str] = {
    "dma_engines": "placeholder: separate read and write engines (RW at 64 B runs 45 M/s each way)",
    "dma_unit": "placeholder: the NFP's 8-byte memory word (DO not a multiple of 8 halves reads)",
    "write_tlp_payload": "pcie-bench data: 2048 B writes take 309.1 ns with 4-DW and 300.9 ns with 3-DW "
    "headers, 148/152 = 128 B TLPs",
    "llc_hit_latency": "placeholder: pcie-bench Cold vs HWarm, 64 B reads",
    "ddio_ways": "Intel's default DDIO share: 2 of 20 LLC ways",
    "iotlb_entries": "pcie-bench data: the read knee between 256 and 512 KiB windows with 4 KiB pages",
    "remote_latency": "pcie-bench data: s0-s1-s0 vs s0-s0-s0, 64 B Cold read median +53 ns",
}
