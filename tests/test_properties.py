"""Monotonicity properties over random small fabrics: no result may worsen by more than 1 %
(plus one transfer: rates count whole transfers) when the hardware gets better: a faster or
wider link, doubled tags, a lower memory latency, the IOMMU off, memory on the local socket;
and a copy under one switch is never slower with ACS redirect off than on. Bounded
(derandomized, a fixed number of examples) so that CI runs it in well under a minute."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

import tlpsim

#: Examples per property: with two runs each, the suite stays around a minute on two cores.
EXAMPLES = 1500
#: The measured window (the run is this plus a warmup of a tenth).
WINDOW_US = 200
#: How much worse a better machine may come out: 1 % of the rate.
TOLERANCE = 0.01

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None)


@dataclass(frozen=True)
class Fabric:
    """A small fabric: a root complex, a switch or not, one DMA endpoint and one workload."""

    gen: int
    width: int
    root_width: int
    mps: int
    mrrs: int
    switch: bool
    tags: int
    direction: str
    size: int
    outstanding: int
    memory_ns: int
    iommu: bool
    remote: bool
    #: The root's memory bandwidth in GB/s (0: unlimited).
    memory_gbps: int = 0
    #: An NVMe drive under fio (rw randread or randwrite, bs ``size``, iodepth
    #: ``outstanding``) instead of a DMA endpoint.
    nvme: bool = False

    def text(self) -> str:
        """The scenario's TOML."""
        host = []
        if self.iommu:
            host += ['iommu = "on"', 'iommu_page_size = "4KiB"', "iotlb_entries = 16", 'iommu_walk_latency = "300ns"']
        if self.remote:
            host += ['memory_socket = "remote"', 'remote_latency = "60ns"']
        if self.memory_gbps:
            host += [f'memory_bandwidth = "{self.memory_gbps}GB/s"']
        endpoint = (
            ['kind = "nvme"', 'read_latency = "2us"', 'write_latency = "2us"', f"tags = {self.tags}"]
            if self.nvme
            else ['kind = "dma"', f"tags = {self.tags}"]
        )
        lines = [
            "[simulation]", f'duration = "{WINDOW_US * 11 // 10}us"', f'warmup = "{WINDOW_US // 10}us"', "seed = 1",
            "[pcie]", f"gen = {self.gen}", f"mps = {self.mps}", f"mrrs = {self.mrrs}",
            "[[root_complex]]", 'name = "rc"', f'memory_read_latency = "{self.memory_ns}ns"', *host,
            "[[endpoint]]", 'name = "ep"', *endpoint,
        ]  # fmt: skip
        if self.switch:
            lines += ["[[switch]]", 'name = "sw"', 'latency = "150ns"']
            lines += ["[[link]]", 'between = ["rc", "sw"]', f"width = {self.root_width}"]
            lines += ["[[link]]", 'between = ["sw", "ep"]', f"width = {self.width}"]
        else:
            lines += ["[[link]]", 'between = ["rc", "ep"]', f"width = {self.width}"]
        if self.nvme:
            rw = "randwrite" if self.direction == "write" else "randread"
            lines += ["[[workload]]", 'name = "w"', 'kind = "fio"', 'endpoint = "ep"', f'rw = "{rw}"',
                      f'bs = "{max(self.size, 4096)}B"', f"iodepth = {self.outstanding}"]  # fmt: skip
        else:
            lines += [
                "[[workload]]", 'name = "w"', 'kind = "dma"', 'endpoint = "ep"', f'direction = "{self.direction}"',
                f'transfer_size = "{self.size}B"', f"outstanding = {self.outstanding}", 'pattern = "random"',
                'window = "16MiB"',
            ]  # fmt: skip
        return "\n".join(lines) + "\n"


fabrics = st.builds(
    Fabric,
    gen=st.sampled_from([1, 2, 3, 4]),
    width=st.sampled_from([1, 2, 4, 8]),
    root_width=st.sampled_from([2, 4, 8, 16]),
    mps=st.sampled_from([128, 256, 512]),
    mrrs=st.sampled_from([256, 512, 1024]),
    switch=st.booleans(),
    tags=st.sampled_from([4, 8, 16, 32]),
    direction=st.sampled_from(["read", "write", "alternate"]),
    size=st.sampled_from([64, 256, 1024, 4096, 16384]),
    outstanding=st.sampled_from([1, 2, 4, 8, 16]),
    memory_ns=st.sampled_from([200, 500, 900]),
    iommu=st.booleans(),
    remote=st.booleans(),
    memory_gbps=st.sampled_from([0, 0, 4, 16]),
    # NVMe drives are left out: two of their ordering effects make a better machine slower,
    # both real (docs/validation-gaps.md, "Monotonicity"): a faster drive link behind a
    # switch with a slow root memory, and doubled tags, which put more of an I/O's data
    # reads ahead of the next command's fetch.
    nvme=st.just(False),
)


def flow(f: Fabric) -> dict:
    """The workload's flow in the run's JSON."""
    return tlpsim.run(f.text()).flows[0]


def rate(f: Fabric) -> float:
    """The workload's throughput in Gb/s."""
    return flow(f)["throughput_gbps"]


#: The verdict of reads held behind posted writes that a switch queues for the root's
#: memory: a faster link into the switch moves the writes' queue there, where the reads
#: may not pass it (docs/validation-gaps.md, "Monotonicity", the first effect).
ORDERING_WAIT = "read requests behind them wait too (a read does not pass a posted write)"


#: The most the ordering effect may take off a flow (the pinned case: 4.8 %).
ORDERING_MOST = 0.10


def no_worse(worse: Fabric, better: Fabric, ordering: bool = False) -> None:
    """The better fabric's rate is at least the worse one's, less 1 % and one transfer;
    with `ordering` (a switch on the way) and reads and writes in turn, less up to
    `ORDERING_MOST` where the better fabric's verdict is reads waiting behind the posted
    writes the switch queues (`ORDERING_WAIT`) and the worse one's is not. (The test
    functions stay as they are: a change to one redraws its derandomized examples.)"""
    before, mine = rate(worse), flow(better)
    after = mine["throughput_gbps"]
    unit = max(worse.size, 4096) if worse.nvme else worse.size
    slack = TOLERANCE * before + unit * 8 / (WINDOW_US * 1e3)
    waits = ORDERING_WAIT in mine["bottleneck"]["detail"]
    ordering = ordering and worse.direction == "alternate"
    if ordering and after < before - slack and waits and after >= (1 - ORDERING_MOST) * before:
        assert ORDERING_WAIT not in flow(worse)["bottleneck"]["detail"], f"{worse}\n{better}"
        return
    assert after >= before - slack, f"{before:.3f} -> {after:.3f} Gb/s\n{worse}\n{better}"


@SETTINGS
@given(fabrics, st.sampled_from(["gen", "width", "root_width"]))
def test_a_faster_or_wider_link_is_never_slower(f, what):
    faster = {"gen": replace(f, gen=min(f.gen + 1, 5)), "width": replace(f, width=min(f.width * 2, 16)),
              "root_width": replace(f, root_width=min(f.root_width * 2, 16))}[what]  # fmt: skip
    if f.switch and faster.width != faster.root_width and (faster.width, faster.root_width) != (f.width, f.root_width):
        # A switch stores and forwards a TLP whose egress link is faster than its ingress
        # (it cannot cut through without running dry): widening one of its links past the
        # other adds a TLP's ingress time to a latency-bound flow, as a real switch does
        # (README, "Switches"). Widen both sides instead: the path as a whole gets faster.
        wide = max(faster.width, faster.root_width)
        faster = replace(f, width=wide, root_width=wide)
    no_worse(f, faster, ordering=f.switch)


@SETTINGS
@given(fabrics)
def test_doubled_tags_are_never_slower(f):
    no_worse(f, replace(f, tags=f.tags * 2))


@SETTINGS
@given(fabrics)
def test_a_lower_memory_latency_is_never_slower(f):
    no_worse(f, replace(f, memory_ns=f.memory_ns // 2))


@SETTINGS
@given(fabrics.filter(lambda f: f.iommu))
def test_turning_the_iommu_off_is_never_slower(f):
    no_worse(f, replace(f, iommu=False))


@SETTINGS
@given(fabrics.filter(lambda f: f.remote))
def test_local_memory_is_never_slower_than_remote(f):
    no_worse(f, replace(f, remote=False))


def copy_under_switch(acs: bool, gen: int, width: int, size: int, outstanding: int, direction: str) -> str:
    """A peer-to-peer copy from a DMA endpoint into a memory endpoint under one switch."""
    return (
        f'[simulation]\nduration = "44us"\nwarmup = "4us"\nseed = 1\n[pcie]\ngen = {gen}\n'
        '[[root_complex]]\nname = "rc"\np2p = "forward"\n'
        f'[[switch]]\nname = "sw"\nacs_redirect = {"true" if acs else "false"}\n'
        '[[endpoint]]\nname = "a"\nkind = "dma"\ntags = 64\n'
        '[[endpoint]]\nname = "b"\nkind = "memory"\nbar_size = "64MiB"\n'
        f'[[link]]\nbetween = ["rc", "sw"]\nwidth = {width}\n'
        f'[[link]]\nbetween = ["sw", "a"]\nwidth = {width}\n'
        f'[[link]]\nbetween = ["sw", "b"]\nwidth = {width}\n'
        f'[[workload]]\nname = "copy"\nkind = "dma"\nendpoint = "a"\ntarget = "b"\ndirection = "{direction}"\n'
        f'transfer_size = "{size}B"\noutstanding = {outstanding}\n'
    )


@SETTINGS
@given(
    st.sampled_from([2, 3, 4]), st.sampled_from([1, 4, 8]), st.sampled_from([256, 4096, 65536]),
    st.sampled_from([1, 4, 16]), st.sampled_from(["read", "write"]),
)  # fmt: skip
def test_acs_redirect_off_is_never_slower_for_a_copy_under_one_switch(gen, width, size, outstanding, direction):
    def copy(acs: bool) -> float:
        text = copy_under_switch(acs, gen, width, size, outstanding, direction)
        return tlpsim.run(text).flows[0]["throughput_gbps"]

    on, off = copy(True), copy(False)
    assert off >= on * (1 - TOLERANCE) - 2 * 256 * 8 / 40e3, f"ACS on {on:.3f}, off {off:.3f} Gb/s"


def test_a_faster_link_into_a_switch_can_hold_reads_behind_its_posted_queue():
    # The case `ordering` lets through, pinned: reads and writes in turn through a switch
    # into a root memory of 4 GB/s; at Gen5 the writes queue in the switch for the posted
    # credits, and the reads behind them wait.
    slow = Fabric(
        gen=4, width=2, root_width=16, mps=256, mrrs=512, switch=True, tags=4, direction="alternate",
        size=16384, outstanding=8, memory_ns=500, iommu=False, remote=False, memory_gbps=4,
    )  # fmt: skip
    a, b = flow(slow), flow(replace(slow, gen=5))
    assert b["throughput_gbps"] < a["throughput_gbps"]
    assert ORDERING_WAIT in b["bottleneck"]["detail"] and ORDERING_WAIT not in a["bottleneck"]["detail"]
