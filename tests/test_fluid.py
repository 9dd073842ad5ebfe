"""The flow-level engine against the TLP-level simulator on every shipped scenario.

Tolerances: 2 % of the simulator's throughput on a flow no credit or tag limit binds, 5 %
where the simulator's verdict is a window (credits, requests, iodepth). The flows below are
exceptions, each with the reason the fluid model does not apply there; none is loosened
silently: a flow listed here that comes within tolerance fails too, so the list stays true.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tlpsim import _core
from tlpsim.simulate import load_scenario, run

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.toml"))

#: (scenario, flow): why the fluid engine's sharing does not give the simulator's split.
EXCEPTIONS = {
    ("gen5-8gpu-acs.toml", f): "sw1's upstream round robin passes over the two peer-to-peer writers while "
    "the root complex's posted credits are out and serves gpu7's read requests, so the writer whose port "
    "comes next after gpu7's gets the next credit more often: 175 against 145 Gb/s (gpu7's link listed "
    "between gpu4's and gpu6's gives 147 against 173; without gpu7's reads both get 160, as the fluid "
    "engine gives); the h2d copies' completions take what each writer leaves of its full link"
    for f in ("p2p-in-switch", "p2p-across-rc", "h2d-gpu3", "h2d-gpu7")
}

WINDOW_KINDS = {"credits", "requests", "iodepth", "replay_buffer", "sequence_window"}

#: Scenarios the fluid engine refuses, with what its refusal names: checked to be refused.
REFUSED = {"cxl-expander.toml": "is a CXL memory expander"}


def _fluid(path: Path | str) -> dict:
    """The fluid engine's result for a scenario file or text, as its JSON."""
    scenario = load_scenario(path, values={"simulation.engine": "fluid"})
    return json.loads(_core.run_scenario(scenario, None, None)[0])


def _both(source: Path | str, tolerance: float) -> tuple:
    """The simulator's and the fluid engine's results for a scenario, each flow's fluid
    throughput asserted within `tolerance` (a fraction) of the simulator's."""
    des = run(load_scenario(source))
    fluid = _fluid(source)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert abs(f["throughput_gbps"] - d["throughput_gbps"]) <= tolerance * d["throughput_gbps"], (d, f)
    return des, fluid


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_fluid_throughput_matches_the_simulator(path: Path) -> None:
    if path.name in REFUSED:
        with pytest.raises(_core.SimulationError, match=REFUSED[path.name]):
            _fluid(path)
        return
    des = run(path)
    fluid = _fluid(path)
    assert fluid["engine"] == "fluid" and des.engine == "des"
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert d["name"] == f["name"]
        error = abs(f["throughput_gbps"] - d["throughput_gbps"]) / d["throughput_gbps"]
        tolerance = 0.05 if d["bottleneck"]["kind"] in WINDOW_KINDS else 0.02
        why = EXCEPTIONS.get((path.name, d["name"]))
        if why:
            assert error > tolerance, f"{d['name']} is now within {tolerance:.0%}: drop its exception"
            # The writers the round robin's pointer splits are named so, inside their bands.
            if "round robin" in why and d["name"].startswith("p2p"):
                assert any(e.startswith("pointer:") for e in f["estimates"]), f["estimates"]
                low, high = f["throughput_band_gbps"]
                assert low <= d["throughput_gbps"] <= high, (d["name"], low, high)
        else:
            assert error <= tolerance, f"{d['name']}: {error:.2%} off ({d['bottleneck']['kind']})"
            # A window within the tolerance of a full link's share is a near tie either
            # engine may name (gen5-gds-vs-bounce's bounce-h2d: 50 reads against rc-sw0 up).
            kinds = {f["bottleneck"]["kind"], d["bottleneck"]["kind"]}
            assert len(kinds) == 1 or kinds & WINDOW_KINDS, (d["name"], kinds)
        # No latency is modelled: null, and the unloaded latency under its own name.
        assert f["latency_ns"]["p99"] is None
        assert f["unloaded_latency_ns"] is None or f["unloaded_latency_ns"] > 0


def test_fluid_refuses_a_trace_and_what_it_cannot_run_in_one_line(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIOS[0], values={"simulation.engine": "fluid"})
    with pytest.raises(_core.ConfigError, match="--engine des"):
        _core.run_scenario(scenario, None, 10)
    text = SCENARIOS[0].read_text().replace("[pcie]", "[pcie]\nber = 1e-12", 1)
    bad = load_scenario(text, values={"simulation.engine": "fluid"})
    with pytest.raises(_core.SimulationError, match="bit error rate.*--engine des"):
        _core.run_scenario(bad, None, None)


def test_a_fluid_run_says_it_has_no_tlp_audit(cli) -> None:
    """The table view of a fluid run names its engine instead of a TLP audit of zero TLPs."""
    out = cli("run", "scenarios/gen5-8gpu-server.toml", "--engine", "fluid").stdout
    assert "fluid engine: flow rates solved" in out and "audit passed" not in out
    assert "audit passed" in cli("run", "scenarios/gen5-8gpu-server.toml").stdout
    # Each flow gives its band against the simulator and what its rate rests on.
    lines = {line.split(":")[0]: line for line in out.splitlines() if "90 % band against the simulator" in line}
    assert "rests on estimates (--engine des checks them): phases:" in lines["p2p-across-rc"]
    assert lines["p2p-in-switch"].endswith("rests on the closed form alone")


#: Two readers under one Gen2 x1 link (random fabric seed 5 of bench/fluid_random.py): the
#: root complex's completions for both leave through its one egress queue, a FIFO.
FIFO_READERS = """
[simulation]
duration = "1ms"
warmup = "100us"
[pcie]
mps = 512
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 2
width = 1
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep0"]
gen = 5
width = 2
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 2
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep1"]
gen = 2
width = 8
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "4KiB"
outstanding = 2
"""


def test_readers_behind_one_fifo_share_its_link_by_their_windows() -> None:
    """4 tags against 16 requests in flight: about 1 to 4 (max-min would give 1 to 1)."""
    des, fluid = _both(FIFO_READERS, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc-sw0 down"
    assert fluid["flows"][1]["throughput_gbps"] > 3.5 * fluid["flows"][0]["throughput_gbps"]


#: A reader of the other socket's memory and a writer into it from there: the reader's
#: completions and the writer's posted writes cross the socket link rc1 -> rc0, which passes
#: TLPs in the order they are ready, one FIFO. The writer keeps there what rc1's posted
#: credits toward it hold (rc1 frees them once a write is across).
SOCKET_FIFO = """
[simulation]
duration = "200us"
warmup = "50us"
[pcie]
gen = 4
width = 16
mps = 256
mrrs = 512
[[root_complex]]
name = "rc0"
memory_read_latency = "650ns"
completion = "mps"
[[root_complex]]
name = "rc1"
memory_read_latency = "650ns"
completion = "mps"
[[socket_link]]
between = ["rc0", "rc1"]
bandwidth = "20GB/s"
[[endpoint]]
name = "rd0"
kind = "dma"
tags = 256
[[endpoint]]
name = "nic0"
kind = "dma"
tags = 256
[[link]]
between = ["rc0", "rd0"]
[[link]]
between = ["rc1", "nic0"]
[[workload]]
name = "rd"
kind = "dma"
endpoint = "rd0"
direction = "read"
memory = "rc1"
transfer_size = "64KiB"
outstanding = 4
[[workload]]
name = "rx"
kind = "dma"
endpoint = "nic0"
direction = "write"
memory = "rc0"
transfer_size = "4KiB"
outstanding = 64
"""


def test_a_socket_link_is_one_fifo_shared_by_what_each_keeps_queued() -> None:
    """256 reads of 512 B against rc1's posted credits: about 7 to 1 (max-min gave 1 to 1)."""
    des, fluid = _both(SOCKET_FIFO, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc1->rc0 socket link"
    rd, rx = (f["throughput_gbps"] for f in fluid["flows"])
    assert rd > 5 * rx
    assert rd + rx == pytest.approx(160.0, rel=0.01), "the link's 20 GB/s of payload, full"


#: The gallery's eight-GPU server.
SERVER = Path(__file__).parent.parent / "scenarios" / "gen5-8gpu-server.toml"


def both_engines(scenario: Path | str, values: dict) -> tuple[dict, dict]:
    """`scenario` (a path or its text) with `values` set, run on the simulator and on the
    fluid engine: each engine's flows by name."""
    des = {f["name"]: f for f in run(load_scenario(scenario, values=values)).flows}
    fluid = json.loads(
        _core.run_scenario(load_scenario(scenario, values={**values, "simulation.engine": "fluid"}), None, None)[0]
    )
    return des, {f["name"]: f for f in fluid["flows"]}


def test_a_copy_of_one_buffer_at_a_time_leaves_its_link_to_the_others_between_copies() -> None:
    """gpu3 copies 64 KiB at a time from host memory beside gpu6's copy across the root
    complex, both on rc -> sw0: each copy waits a round trip for its first completion, in
    which gpu6's writes have the link. Max-min sharing gave both 239.7 Gb/s and the link
    full; the simulator gives gpu3 171.3 and leaves the link idle in part."""
    des, fl = both_engines(SERVER, {"workload.h2d-gpu3.size": "64KiB", "pcie.mps": 512})
    copy, across = fl["h2d-gpu3"], fl["p2p-across-rc"]
    assert copy["throughput_gbps"] == pytest.approx(des["h2d-gpu3"]["throughput_gbps"], rel=0.02)
    # gpu6 takes the gaps: more than gpu3 (max-min gave both the link's half), with what
    # queued at the root complex while gpu3's completions shared the link on top.
    assert across["throughput_gbps"] > 1.4 * copy["throughput_gbps"]
    assert across["throughput_gbps"] == pytest.approx(des["p2p-across-rc"]["throughput_gbps"], rel=0.02)
    assert copy["bottleneck"]["resource"] == "rc-sw0 down"
    assert 0.85 < copy["bottleneck"]["busy"] < 0.95, "idle while copies wait for their first completion"


def test_credit_round_trips_through_a_cut_through_switch_at_mps_128() -> None:
    """At MPS 128 sw1's 64 posted and 64 completion credits barely cover their round trip:
    gpu4's writes into gpu5 fill gpu5's link in the simulator and gpu7's copy stalls on
    sw1's completion credits now and then. A cut-through switch frees a credit as the TLP
    starts out, its latency after the TLP's first byte (not after the TLP and the next
    link's wire time), so the writes fill the link here too (the round trip had been 3 %
    long: 405.7 against 419.4 Gb/s); a reader's completion credits are a window of its own
    (without them gpu7 ran at the link's 431.5 against 419.1). Within 2 %, the issue's
    tolerance: gpu7 is 1.3 % under (the DLLP test below)."""
    des, fl = both_engines(SERVER, {"pcie.mps": 128})
    for name in ("p2p-in-switch", "h2d-gpu7"):
        assert fl[name]["throughput_gbps"] == pytest.approx(des[name]["throughput_gbps"], rel=0.02), name


def test_dllps_are_an_ack_and_an_updatefc_per_counted_class_per_timer_interval() -> None:
    """The DLLPs each direction carries for the TLPs coming the other way: an Ack each and,
    where the receiver counts the class's credits, an UpdateFC; with the Ack timer, at most
    one Ack and one UpdateFC per class per interval. On the 8-GPU server at MPS 128 the
    fluid engine gave 2,182 on both rc -> sw1 and sw1 -> gpu7 up (two per TLP or interval);
    the simulator sends 3,284 on the first (an Ack, and UpdateFCs for the posted writes and
    the read requests coming up) and 1,096 on the second (Acks alone: gpu7 counts no
    completion credits). gpu7's copy is 1.3 % under the simulator's since (413.8 against
    419.2 Gb/s; 415.2 before)."""
    fluid_run = json.loads(
        _core.run_scenario(load_scenario(SERVER, values={"pcie.mps": 128, "simulation.engine": "fluid"}), None, None)[0]
    )
    des = run(load_scenario(SERVER, values={"pcie.mps": 128}))
    key = lambda links: {(x["name"], x["direction"]): x["dllps"] for x in links}  # noqa: E731
    fluid, sim = key(fluid_run["links"]), key(des.links)
    for link in [("rc-sw1", "down"), ("sw1-gpu7", "up"), ("rc-sw0", "down")]:
        assert fluid[link] == pytest.approx(sim[link], rel=0.02), (link, fluid[link], sim[link])


@pytest.mark.parametrize("pd", [512, 1024, 2048])
def test_a_writer_sends_in_a_readers_gaps_what_queued_while_it_flowed(pd: int) -> None:
    """gpu6's peer-to-peer writes wait at the root complex behind its 200 ns forwarding
    and for rc -> sw0, which gpu3's 64 KiB copies share while they flow; in the copies'
    gaps the writes queued past the forwarding go at the link's pace. How much queues is
    the root complex's posted buffer less what the writes hold of it anyway (their rate
    over the credit round trip with the forwarding): none at 8 KiB (the buffer holds them
    to 242 Gb/s), 6 KiB at 16 KiB, and at 32 KiB as much as the gaps take. The phases
    alone gave 262.5 Gb/s at every size."""
    text = SERVER.read_text().replace('name = "rc"', f'name = "rc"\ncredits = {{ pd = {pd}, ph = 256 }}', 1)
    des, fl = both_engines(text, {"workload.h2d-gpu3.size": "64KiB", "pcie.mps": 512})
    for name in ("p2p-across-rc", "h2d-gpu3"):
        assert fl[name]["throughput_gbps"] == pytest.approx(des[name]["throughput_gbps"], rel=0.02), name


#: Two peer-to-peer writers into gpu3 on links narrower than its own, beside gpu3's 64 KiB
#: copies from host memory: while a copy flows the three share sw0 -> gpu3, in its gaps the
#: writers run at their own links' pace and what queued in sw0 goes on top.
TWO_WRITERS = """
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
gen = 5
width = 16
mps = 512
mrrs = 512
[[root_complex]]
name = "rc"
memory_read_latency = "650ns"
completion = "mps"
[[switch]]
name = "sw0"
forwarding = "cut-through"
latency = "120ns"
[[endpoint]]
name = "gpu0"
kind = "gpu"
[[endpoint]]
name = "gpu1"
kind = "gpu"
[[endpoint]]
name = "gpu3"
kind = "gpu"
[[link]]
between = ["rc", "sw0"]
[[link]]
between = ["sw0", "gpu0"]
gen = 4
width = 12
[[link]]
between = ["sw0", "gpu1"]
gen = 4
width = 12
[[link]]
between = ["sw0", "gpu3"]
[[workload]]
name = "w0"
kind = "memcpy"
endpoint = "gpu0"
target = "gpu3"
size = "1MiB"
[[workload]]
name = "w1"
kind = "memcpy"
endpoint = "gpu1"
target = "gpu3"
size = "1MiB"
[[workload]]
name = "h2d"
kind = "memcpy"
endpoint = "gpu3"
direction = "h2d"
size = "64KiB"
"""


def test_two_writers_share_the_room_a_readers_gap_leaves_on_one_link() -> None:
    """Each writer falls 8.4 KB behind while a copy flows, but the gap leaves sw0 -> gpu3
    room for 13.1 KB in all: carried each as if alone, the two writers ran at their own
    links' 180.1 Gb/s and sw0 -> gpu3 past its capacity (the simulator: 177.6 each)."""
    des, fl = both_engines(TWO_WRITERS, {})
    for name in ("w0", "w1", "h2d"):
        assert fl[name]["throughput_gbps"] == pytest.approx(des[name]["throughput_gbps"], rel=0.01), name
    # Payload on sw0 -> gpu3 no more than the simulator's, which fills the link, but for the
    # 0.25 % its DLLPs and gaps take beyond the fluid engine's estimate (carried as if alone,
    # the writers put 1 % more on it).
    total = sum(f["throughput_gbps"] for f in fl.values())
    assert total <= 1.005 * sum(d["throughput_gbps"] for d in des.values())


#: A DMA reader of one 4 KiB transfer at a time from a root complex whose memory gives
#: 20 GB/s, less than its Gen4 x16 link's 31.5, beside a writer held to its own rate.
MEMORY_PACED = """
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
gen = 4
width = 16
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
memory_bandwidth = "20GB/s"
[[endpoint]]
name = "rd"
kind = "dma"
[[endpoint]]
name = "wr"
kind = "dma"
[[link]]
between = ["rc", "rd"]
[[link]]
between = ["rc", "wr"]
[[workload]]
name = "reader"
kind = "dma"
endpoint = "rd"
direction = "read"
transfer_size = "4KiB"
outstanding = 1
[[workload]]
name = "writer"
kind = "dma"
endpoint = "wr"
direction = "write"
transfer_size = "64KiB"
rate = "1GB/s"
"""


@pytest.mark.parametrize("rate", ["1GB/s", "12GB/s"])
def test_a_slower_memory_paces_the_rest_of_a_read_transfer(rate: str) -> None:
    """The root complex passes each completion's data through its memory after the read
    latency, one piece after another, so past the first completion a transfer comes back
    at the memory's 20 GB/s, not the link's pace: the fluid engine gave the reader 48.8
    Gb/s at both rates (+5.5 % and +6.4 %) against the simulator's 46.2 and 45.8."""
    des, fl = both_engines(MEMORY_PACED, {"workload.writer.rate": rate})
    for name in ("reader", "writer"):
        assert fl[name]["throughput_gbps"] == pytest.approx(des[name]["throughput_gbps"], rel=0.02), name


#: Three DMA endpoints under one root complex whose memory (5 GB/s) is slower than any of
#: their links: readers with 64, 8 and 2 KiB of requests in flight (random fabric seed 38
#: of `bench/fluid_random.py --host`, on one link each), and a writer beside them.
MEMORY_FIFO = """
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
mps = 512
mrrs = 512
[[root_complex]]
name = "rc"
memory_read_latency = "200ns"
completion = "mps"
memory_bandwidth = "5GB/s"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 256
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 16
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "ep0"]
gen = 3
width = 8
[[link]]
between = ["rc", "ep1"]
gen = 3
width = 8
[[link]]
between = ["rc", "ep2"]
gen = 2
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 1
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "4KiB"
outstanding = 8
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "read"
transfer_size = "16KiB"
outstanding = 1
"""


@pytest.mark.parametrize("writer", [False, True])
def test_a_memory_serves_in_the_order_tlps_come_and_readers_share_it_by_their_windows(writer: bool) -> None:
    """The root complex's memory passes each piece after those before it (one FIFO), so
    readers with 64, 8 and 2 KiB in flight get about 64:8:2 of its 40 Gb/s (the simulator
    34.5, 4.3, 1.2), not max-min's equal shares (18, 18, 4 before). A writer beside them holds
    the root complex's posted credits until the memory has its writes: its window there.
    Still off: the two small windows come out about 11 % low beside the 64 KiB one (4.3
    against 4.8 and 1.07 against 1.21 Gb/s), whose whole transfer queues at once and goes
    through the FIFO back to back; a window's shape over a transfer is not modelled."""
    text = MEMORY_FIFO
    if writer:
        text = text.replace(
            'name = "w2"\nkind = "dma"\nendpoint = "ep2"\ndirection = "read"',
            'name = "w2"\nkind = "dma"\nendpoint = "ep2"\ndirection = "write"',
        )
    des, fl = both_engines(text, {})
    for name, rel in (("w0", 0.05), ("w1", 0.12), ("w2", 0.12)):
        assert fl[name]["throughput_gbps"] == pytest.approx(des[name]["throughput_gbps"], rel=rel), name
        assert fl[name]["bottleneck"]["resource"] == "rc memory"
    assert sum(f["throughput_gbps"] for f in fl.values()) == pytest.approx(40.0, rel=1e-6)


#: Two readers, 32 and 2 KiB in flight, through a switch whose shared bus (2 GB/s) is
#: slower than its links.
SHARED_BUS = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw"
core = "shared-bus"
core_bandwidth = "2GB/s"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 64
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "sw"]
gen = 3
width = 8
[[link]]
between = ["sw", "ep0"]
gen = 3
width = 4
[[link]]
between = ["sw", "ep1"]
gen = 3
width = 4
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 2
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "4KiB"
outstanding = 2
"""


def test_a_switchs_shared_bus_serves_in_the_order_tlps_come() -> None:
    """The bus passes each TLP after those before it, so the two readers share it by their
    windows (the simulator 12.35 and 0.78 Gb/s), not equally (6.56 each, max-min)."""
    des, fl = both_engines(SHARED_BUS, {})
    for name in ("w0", "w1"):
        assert fl[name]["throughput_gbps"] == pytest.approx(des[name]["throughput_gbps"], rel=0.02), name
        assert fl[name]["bottleneck"]["resource"] == "sw shared bus"


#: A DMA endpoint that reads and writes host memory at once (random fabric seed 19 of
#: bench/fluid_random.py): its writes and its read requests leave it through one input of
#: its egress, a FIFO in which it keeps two writes queued against its requests.
OWN_QUEUE = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 512
mrrs = 256
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 32
[[link]]
between = ["rc", "ep0"]
gen = 5
width = 4
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "4KiB"
outstanding = 4
"""

#: The same with 4 tags (seed 94): a write joins the queue as the one before it starts on
#: the wire, so it waits that write's whole time there, and a request, coming at any
#: moment, half of it more.
OWN_QUEUE_FEW_TAGS = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 512
mrrs = 256
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "ep1"]
gen = 4
width = 1
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "both"
transfer_size = "16KiB"
outstanding = 4
"""

#: One transfer's read requests behind the writes of their own endpoint in a switch's
#: ingress (seed 81): a transfer-bound reader's requests wait together in each queue on
#: their way out, its whole transfer's round trip behind them.
TRANSFER_BEHIND_WRITES = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 512
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 1
width = 2
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep0"]
gen = 2
width = 4
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "4KiB"
outstanding = 1
"""

#: The same below a switch (seed 21): its writes and requests queue in the switch's ingress
#: buffer, one input of the slower uplink's egress, where the writes hold the switch's posted
#: credits while they wait.
SWITCH_INGRESS = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 128
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 2
width = 8
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep0"]
gen = 4
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "16KiB"
outstanding = 1
"""

#: Two such endpoints under one switch (seed 96): its uplink's egress serves their ingress
#: ports in turn, one TLP each, and each port's buffer is a FIFO of writes and requests.
ROUND_ROBIN_OF_FIFOS = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "cut-through"
[[link]]
between = ["rc", "sw0"]
gen = 3
width = 1
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep0"]
gen = 5
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "16KiB"
outstanding = 8
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep2"]
gen = 1
width = 8
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "both"
transfer_size = "4KiB"
outstanding = 4
"""


@pytest.mark.parametrize(
    ("text", "link"),
    [
        (OWN_QUEUE, "rc-ep0 up"),
        (OWN_QUEUE_FEW_TAGS, "rc-ep1 up"),
        (TRANSFER_BEHIND_WRITES, "rc-sw0 up"),
        (SWITCH_INGRESS, "rc-sw0 up"),
        (ROUND_ROBIN_OF_FIFOS, "rc-sw0 up"),
    ],
    ids=["own", "own-4-tags", "transfer-behind-writes", "ingress", "round-robin"],
)
def test_posted_writes_in_a_fifo_share_it_by_what_they_keep_queued(text: str, link: str) -> None:
    """Max-min per TLP gave 17 % too little (own egress), 35 % too much (ingress), 58 % too much
    (each endpoint of the round robin)."""
    des, fluid = _both(text, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == link


#: One read transfer at a time whose requests outnumber the tags (16 of 32 requests of
#: 512 B; random fabric seed 77 of bench/fluid_random.py): the tags drain at each transfer's
#: end, the next transfer starting only when the last completion is in.
DRAINED_READER = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 16
[[link]]
between = ["rc", "ep0"]
gen = 5
width = 16
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "16KiB"
outstanding = 1
"""

#: The same drain for an endpoint that also writes (seed 46): its requests wait behind its
#: writes in its own egress queue, once per round of 16 requests.
DRAINED_BOTH = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 128
mrrs = 512
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "ep0"]
gen = 1
width = 1
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "write"
transfer_size = "64KiB"
outstanding = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 16
[[link]]
between = ["rc", "ep1"]
gen = 5
width = 4
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "both"
transfer_size = "16KiB"
outstanding = 1
"""

#: The drain on a link the reader fills alone (4 tags, 64 requests of 256 B; random fabric
#: seed 22 of bench/fluid_random.py): its completions go back to back at what the DLLPs for
#: its requests leave of the link, and the link idles one request's round trip per transfer.
DRAINED_FULL_LINK = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 128
mrrs = 256
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "ep0"]
gen = 3
width = 1
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "16KiB"
outstanding = 1
"""


@pytest.mark.parametrize("text", [DRAINED_READER, DRAINED_BOTH, DRAINED_FULL_LINK], ids=["read", "both", "full-link"])
def test_a_lone_transfer_longer_than_its_tags_drains_them_at_its_end(text: str) -> None:
    """Tags over one request's round trip gave 16 % too much (read) and 14 % (both)."""
    des = run(load_scenario(text))
    fluid = _fluid(text)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        tolerance = 0.05 if d["bottleneck"]["kind"] in WINDOW_KINDS else 0.02
        assert abs(f["throughput_gbps"] - d["throughput_gbps"]) <= tolerance * d["throughput_gbps"], (d, f)


#: A reader's completions behind another's backlog (random fabric seed 47 of
#: bench/fluid_random.py, its writer left out): `w1` keeps 64 KiB of reads in flight behind a
#: Gen2 x1 link; its completions fill both switches' buffers and back up into the root
#: complex's one egress queue, where `w2`'s completions wait behind them though their own
#: link is idle.
BEHIND_A_BACKLOG = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 256
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 3
width = 16
[[switch]]
name = "sw1"
forwarding = "store-and-forward"
[[link]]
between = ["sw0", "sw1"]
gen = 5
width = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 256
[[link]]
between = ["sw1", "ep1"]
gen = 2
width = 1
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "both"
transfer_size = "16KiB"
outstanding = 4
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 16
[[link]]
between = ["sw1", "ep2"]
gen = 2
width = 1
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "read"
transfer_size = "16KiB"
outstanding = 1
"""


def test_completions_wait_behind_another_readers_backlog() -> None:
    """Max-min gave `w2` 13 times the simulator's rate (0.228 Gb/s at 1 ms, its Completion
    credits at the root complex's port the verdict)."""
    des = run(load_scenario(BEHIND_A_BACKLOG))
    fluid = _fluid(BEHIND_A_BACKLOG)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        tolerance = 0.05 if d["bottleneck"]["kind"] in WINDOW_KINDS else 0.02
        assert abs(f["throughput_gbps"] - d["throughput_gbps"]) <= tolerance * d["throughput_gbps"], (d, f)
    assert des.flows[1]["bottleneck"]["kind"] == "credits"
    assert fluid["flows"][1]["throughput_gbps"] < 0.3


#: A writer and a "both" endpoint under one switch whose Gen3 x1 uplink they fill (random
#: fabric seed 61 of bench/fluid_random.py, its other reader left out): the completions of
#: each read request come back to back, and the switch's receiver acks them and returns their
#: credits once per Ack timer interval, not once per TLP, so the uplink carries fewer DLLPs
#: than one Ack and one UpdateFC per completion (the timer's share of the link).
COMPLETION_BURSTS = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 256
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 3
width = 1
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep0"]
gen = 1
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "write"
transfer_size = "16KiB"
outstanding = 2
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep1"]
gen = 4
width = 4
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "both"
transfer_size = "16KiB"
outstanding = 2
"""


def test_completions_of_one_request_owe_one_ack_per_timer_interval() -> None:
    """A DLLP pair per completion (at most one per interval) left the uplink 1.6 % short and
    put 2.9 times the simulator's DLLPs on it."""
    des, fluid = _both(COMPLETION_BURSTS, 0.01)
    up = [(d["dllps"], f["dllps"]) for d, f in zip(des.links, fluid["links"], strict=True)][1]
    assert up[1] < 2 * up[0], up


#: A "both" endpoint and a writer under one switch, a round robin one hop before the full link
#: (random fabric seed 54 of bench/fluid_random.py; 10 ms, the simulator's 1 ms run not yet
#: converged): `sw1`'s uplink serves their ingress ports in turn while credit-stalled on
#: `sw0`'s posted buffer, which the two writers share, and `ep0`'s read requests wait behind
#: its writes in `sw1`'s ingress buffer, full up to what arrives over its credits' return.
ROUND_ROBIN_BEFORE_THE_FULL_LINK = """
[simulation]
duration = "10ms"
warmup = "20us"
[pcie]
mps = 128
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 4
width = 2
[[switch]]
name = "sw1"
forwarding = "store-and-forward"
[[link]]
between = ["sw0", "sw1"]
gen = 5
width = 8
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 16
[[link]]
between = ["sw1", "ep0"]
gen = 1
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "16KiB"
outstanding = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw1", "ep1"]
gen = 5
width = 4
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "write"
transfer_size = "16KiB"
outstanding = 2
"""


def test_writers_share_a_switchs_posted_buffer_and_hold_the_requests_behind_them() -> None:
    """Each writer with the whole buffer and no wait in `sw1` gave `w0` 6 % too much."""
    des, fluid = _both(ROUND_ROBIN_BEFORE_THE_FULL_LINK, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc-sw0 up"


#: Three readers under one switch, one held by its Gen2 x8 link (random fabric seed 282 of
#: bench/fluid_random.py, out of sample, without its host side and its writer): that reader's
#: completions hold most of `sw2`'s 64 CplH credits, the others' completions come in over the
#: same link and hold theirs over a credit round trip, and what does not fit waits in `sw1`'s
#: egress queue, where the others' completions wait behind it.
SHARED_COMPLETION_BUFFER = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 512
mrrs = 256
[[root_complex]]
name = "rc"
memory_read_latency = "1000ns"
[[switch]]
name = "sw1"
forwarding = "cut-through"
[[link]]
between = ["rc", "sw1"]
gen = 3
width = 16
[[switch]]
name = "sw2"
forwarding = "store-and-forward"
[[link]]
between = ["sw1", "sw2"]
gen = 4
width = 16
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 16
[[link]]
between = ["sw2", "ep0"]
gen = 5
width = 4
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 4
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw2", "ep1"]
gen = 4
width = 8
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "16KiB"
outstanding = 8
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 32
[[link]]
between = ["sw2", "ep2"]
gen = 2
width = 8
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "read"
transfer_size = "4KiB"
outstanding = 4
"""


def test_readers_share_a_switchs_completion_buffer_one_of_them_holds() -> None:
    """The held reader with the whole buffer to itself gave `w0` and `w1` 22 % too much, and
    named their tags as what held them."""
    des, fluid = _both(SHARED_COMPLETION_BUFFER, 0.05)
    for d, f in list(zip(des.flows, fluid["flows"], strict=True))[:2]:
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "sw1 -> sw2 CplH credits"


#: A reader of one 64 KiB transfer at a time whose Gen1 x16 link paces each transfer, beside a
#: small reader (seed 133, out of sample, without its writers): within a transfer its
#: completions beyond `sw0`'s buffer wait in the root complex's egress queue, and the small
#: reader's behind them.
ONE_TRANSFER_BACKLOG = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 5
width = 16
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep0"]
gen = 3
width = 2
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "16KiB"
outstanding = 4
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep1"]
gen = 1
width = 16
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "64KiB"
outstanding = 1
"""


def test_a_reader_of_one_transfer_at_a_time_backs_up_before_its_link() -> None:
    """Bound by its own window on average, the big reader kept no backlog, and the small one
    got 2.8 times the simulator's throughput. It is still 22 % high (5.10 against 4.17 Gb/s):
    the backlog the window leaves, at the average rate, is short of what the simulator keeps
    queued within a transfer."""
    des = run(load_scenario(ONE_TRANSFER_BACKLOG))
    fluid = _fluid(ONE_TRANSFER_BACKLOG)
    (small, big), (fsmall, fbig) = des.flows, fluid["flows"]
    assert abs(fbig["throughput_gbps"] / big["throughput_gbps"] - 1) < 0.02
    assert 1.0 < fsmall["throughput_gbps"] / small["throughput_gbps"] < 1.25
    assert fsmall["bottleneck"]["resource"] == small["bottleneck"]["resource"] == "rc -> sw0 CplH credits"


#: A reader of one whole 64 KiB transfer at a time beside a reader with 128 KiB in flight that
#: its Gen2 x4 link holds (random fabric seed 275, without its other two flows): the whole
#: transfer's completions join the root complex's egress queue behind the other's backlog.
WHOLE_TRANSFER_BEHIND_A_BACKLOG = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 128
mrrs = 4096
[[root_complex]]
name = "rc"
[[switch]]
name = "sw1"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw1"]
gen = 3
width = 8
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 256
[[link]]
between = ["sw1", "ep0"]
gen = 4
width = 2
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw1", "ep1"]
gen = 2
width = 4
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "64KiB"
outstanding = 4
"""


def test_a_whole_transfer_waits_behind_another_readers_backlog() -> None:
    """Only a reader's per-request window waited behind others' backlogs, so a transfer that
    has all its requests out at once did not (6.34 against the simulator's 4.88 Gb/s). The
    held reader was then 21 % high: its completions come in runs of 64 from each 4 KiB
    request, and a run of the other's fills `sw1`'s 64 CplH credits, idling its link; with
    the buffer's time taken in turn by the runs (`pool::serial`) both are within 5 %, bound
    by the credits the simulator names."""
    des = run(load_scenario(WHOLE_TRANSFER_BEHIND_A_BACKLOG))
    fluid = _fluid(WHOLE_TRANSFER_BEHIND_A_BACKLOG)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert abs(f["throughput_gbps"] / d["throughput_gbps"] - 1) < 0.05, (d, f)
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc -> sw1 CplH credits"


#: Two readers through one switch (random fabric seed 2794's shape), shared with the Rust tests.
RUNS_INTO_ONE_BUFFER = (Path(__file__).parent / "data" / "runs_into_one_buffer.toml").read_text()


def test_readers_runs_take_a_switchs_completion_buffer_in_turn() -> None:
    """The 64 KiB reader's run fills the buffer and the rest of it waits in the root
    complex's queue, so the small reader's completions get in only between its runs: the
    simulator gives the small reader 1.17 Gb/s, where the buffer shared at once by both
    readers' rates gave it 2.6 (+120 %). With the buffer's time taken in turn, each flow is
    within 3 % and named by the credits as the simulator names it."""
    des = run(load_scenario(RUNS_INTO_ONE_BUFFER))
    fluid = _fluid(RUNS_INTO_ONE_BUFFER)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert abs(f["throughput_gbps"] / d["throughput_gbps"] - 1) < 0.03, (d, f)
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc -> sw0 CplH credits"
        assert any(e.startswith("runs:") for e in f["estimates"]), f["estimates"]


#: Four readers whose completions leave the root complex in one queue and come into `sw0`
#: over its Gen5 x8 link (random fabric seed 597, out of sample): alone, each has room in
#: `sw0`'s 64 CplH credits for its rate over their round trip, but together they hold more,
#: and the simulator's link waits for CplH credits 9 % of the time.
POOL_BEHIND_A_FIFO = """
[simulation]
duration = "200us"
warmup = "20us"
[pcie]
mps = 128
mrrs = 256
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "cut-through"
[[link]]
between = ["rc", "sw0"]
gen = 5
width = 8
[[switch]]
name = "sw1"
forwarding = "store-and-forward"
[[link]]
between = ["sw0", "sw1"]
gen = 4
width = 8
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 16
[[link]]
between = ["sw0", "ep0"]
gen = 5
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 4
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep1"]
gen = 1
width = 16
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "64KiB"
outstanding = 2
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 256
[[link]]
between = ["sw0", "ep2"]
gen = 5
width = 8
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "read"
transfer_size = "64KiB"
outstanding = 8
[[endpoint]]
name = "ep3"
kind = "dma"
tags = 16
[[link]]
between = ["sw1", "ep3"]
gen = 4
width = 1
[[workload]]
name = "w3"
kind = "dma"
endpoint = "ep3"
direction = "read"
transfer_size = "16KiB"
outstanding = 1

"""


def test_readers_share_a_switchs_completion_buffer_behind_one_link() -> None:
    """Each reader's credits counted as if it had `sw0`'s buffer to itself filled the link, 8-10 %
    above the simulator on every flow; the link's capacity is now what the buffer lets
    through at the readers' mix."""
    des, fluid = _both(POOL_BEHIND_A_FIFO, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc-sw0 down"


#: A reader held by its Gen1 x1 link (`w3`, two 4 KiB reads in flight) fills `sw0`'s 64 CplH
#: credits and the root complex's egress queue, and another reader's completions (`w0`) wait
#: behind them there (random fabric seed 667, out of sample, without its two readers on other
#: links).
HELD_AT_A_SLOW_LINK = """
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
mps = 128
mrrs = 4096
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 3
width = 4
[[switch]]
name = "sw2"
forwarding = "cut-through"
[[link]]
between = ["sw0", "sw2"]
gen = 2
width = 16
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["sw2", "ep0"]
gen = 5
width = 2
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 1
[[endpoint]]
name = "ep3"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep3"]
gen = 1
width = 1
[[workload]]
name = "w3"
kind = "dma"
endpoint = "ep3"
direction = "both"
transfer_size = "4KiB"
outstanding = 2

"""


def test_a_reader_held_at_a_link_queues_all_but_its_first_completion_before_it() -> None:
    """The held reader's backlog counted its whole transfer's round trip, most of which is its
    completions waiting for its slow link, as in flight, so little of it queued before `sw0`
    and `w0` came out at +183 % (15.9 against 5.6 Gb/s). Only the first completion's round trip
    is out of the queues now; `w0` is 13 % low, since it waits behind `w3`'s queued bytes as
    if they drained at `w3`'s rate alone, while the credits its own completions free let some
    of them through too."""
    des = run(load_scenario(HELD_AT_A_SLOW_LINK))
    fluid = _fluid(HELD_AT_A_SLOW_LINK)
    (victim, held), (fvictim, fheld) = des.flows, fluid["flows"]
    assert abs(fheld["throughput_gbps"] / held["throughput_gbps"] - 1) < 0.02
    assert fvictim["bottleneck"]["resource"] == victim["bottleneck"]["resource"] == "rc -> sw0 CplH credits"
    assert 0.8 < fvictim["throughput_gbps"] / victim["throughput_gbps"] < 1.0


#: A reader whose tags let both its 4 KiB transfers' eight requests go out at once (random
#: fabric seed 870's `w0`, out of sample): they come in back to back, within about two Ack
#: timer intervals.
REQUEST_BURSTS = """
[simulation]
duration = "200us"
warmup = "20us"
[pcie]
mps = 128
mrrs = 512
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 32
[[link]]
between = ["rc", "ep0"]
gen = 4
width = 1
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "4KiB"
outstanding = 2
"""


def test_a_transfers_requests_sent_at_once_owe_an_ack_per_timer_interval() -> None:
    """An Ack and an UpdateFC owed for every read request charged the completions' link 2 % of
    its bytes for DLLPs the simulator coalesces: it sends about one DLLP down for every four
    requests, as the fluid engine now does within a factor of two."""
    des, fluid = _both(REQUEST_BURSTS, 0.005)
    (down, up), (fdown, fup) = des.links[:2], fluid["links"][:2]
    assert (down["direction"], up["direction"]) == ("down", "up")
    assert fdown["dllps"] < 0.5 * fup["tlps"]
    assert 0.5 < fdown["dllps"] / down["dllps"] < 2.0


#: Two readers (`w2`, `w3`) whose completions cross `sw0`'s Gen1 x1 link to `sw1` with 32 KiB
#: each in flight: the simulator shares that link by their windows behind its queue, their
#: completions fill `sw0`'s 64 CplH credits and `rc`'s egress queue, and a small reader's
#: (`w0`) wait behind them there (random fabric seed 997, out of sample).
READERS_HELD_BEHIND_A_QUEUE = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "cut-through"
[[link]]
between = ["rc", "sw0"]
gen = 3
width = 2
[[switch]]
name = "sw1"
forwarding = "cut-through"
[[link]]
between = ["sw0", "sw1"]
gen = 1
width = 1
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep0"]
gen = 4
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "4KiB"
outstanding = 8
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep1"]
gen = 5
width = 1
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "both"
transfer_size = "16KiB"
outstanding = 1
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 256
[[link]]
between = ["sw1", "ep2"]
gen = 1
width = 1
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "read"
transfer_size = "16KiB"
outstanding = 2
[[endpoint]]
name = "ep3"
kind = "dma"
tags = 256
[[link]]
between = ["sw1", "ep3"]
gen = 1
width = 2
[[workload]]
name = "w3"
kind = "dma"
endpoint = "ep3"
direction = "both"
transfer_size = "16KiB"
outstanding = 2

"""


def test_readers_held_behind_a_full_queue_back_up_like_readers_held_by_a_link() -> None:
    """Readers whose windows behind a full FIFO hold them were not taken as held at its link,
    so they backed up nowhere and `w0` ran at 9 Gb/s against the simulator's 0.08 (+10,000
    %). It is held behind their backlog now: 0.036 Gb/s, 57 % low, since it waits behind
    their queued bytes as if they drained at their rate alone."""
    des = {f["name"]: f for f in run(load_scenario(READERS_HELD_BEHIND_A_QUEUE)).flows}
    fluid = {f["name"]: f for f in _fluid(READERS_HELD_BEHIND_A_QUEUE)["flows"]}
    assert abs(fluid["w2"]["throughput_gbps"] / des["w2"]["throughput_gbps"] - 1) < 0.05
    assert fluid["w2"]["bottleneck"]["resource"] == des["w2"]["bottleneck"]["resource"] == "sw0-sw1 down"
    assert fluid["w0"]["bottleneck"]["resource"] == des["w0"]["bottleneck"]["resource"] == "rc -> sw0 CplH credits"
    assert 0.3 < fluid["w0"]["throughput_gbps"] / des["w0"]["throughput_gbps"] < 1.0


#: Random fabric seed 1483 at 300 us: `w0` and `w1` ("both" endpoints) and the writer `w2`
#: share `sw1`'s full link up one input each, round robin; `w3`, a small reader on its own
#: link under `sw0`, has its completions come into `sw0` with `w0`'s and `w1`'s.
BOTH_READS_BEHIND_WRITES = """
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
mps = 512
mrrs = 256
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "store-and-forward"
[[link]]
between = ["rc", "sw0"]
gen = 3
width = 2
[[switch]]
name = "sw1"
forwarding = "cut-through"
[[link]]
between = ["sw0", "sw1"]
gen = 2
width = 1
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 256
[[link]]
between = ["sw1", "ep0"]
gen = 3
width = 8
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "16KiB"
outstanding = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw1", "ep1"]
gen = 5
width = 16
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "both"
transfer_size = "64KiB"
outstanding = 8
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 16
[[link]]
between = ["sw1", "ep2"]
gen = 3
width = 2
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "write"
transfer_size = "16KiB"
outstanding = 2
[[endpoint]]
name = "ep3"
kind = "dma"
tags = 4
[[link]]
between = ["sw0", "ep3"]
gen = 5
width = 16
[[workload]]
name = "w3"
kind = "dma"
endpoint = "ep3"
direction = "read"
transfer_size = "4KiB"
outstanding = 8
"""


def test_a_both_endpoints_reads_behind_its_writes_on_a_shared_link_leave_no_backlog() -> None:
    """`w0`'s 64 requests of each 16 KiB read wait in one input with its writes at `sw1`'s
    full link up and leave one per turn of that input, so each request's 256 bytes of
    completions cross `sw0`'s Gen2 x1 link down before the next comes. The fluid engine took
    the whole transfer's completions as queued in `rc` and `w3` behind them at 0.14 Gb/s
    against the simulator's 7.3 (-98 %); it is 16 % high now (its round trip taken unloaded
    on a link 72 % busy), and both name its tags."""
    des = {f["name"]: f for f in run(load_scenario(BOTH_READS_BEHIND_WRITES)).flows}
    fluid = {f["name"]: f for f in _fluid(BOTH_READS_BEHIND_WRITES)["flows"]}
    assert fluid["w3"]["bottleneck"]["resource"] == des["w3"]["bottleneck"]["resource"] == "w3 read requests"
    assert 0.95 < fluid["w3"]["throughput_gbps"] / des["w3"]["throughput_gbps"] < 1.25
    for name in ("w0", "w1", "w2"):
        assert fluid[name]["bottleneck"]["resource"] == des[name]["bottleneck"]["resource"] == "sw0-sw1 up"
        assert abs(fluid[name]["throughput_gbps"] / des[name]["throughput_gbps"] - 1) < 0.15


#: Random fabric seed 1176 at 300 us: a "both" endpoint (`w0`, 256-byte requests, 512-byte
#: writes) and a writer (`w1`) share `sw0`'s full Gen2 x4 link up, one input each.
REQUESTS_AND_WRITES_IN_ONE_INPUT = """
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
mps = 512
mrrs = 256
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
forwarding = "cut-through"
[[link]]
between = ["rc", "sw0"]
gen = 2
width = 4
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 256
[[link]]
between = ["sw0", "ep0"]
gen = 4
width = 4
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "both"
transfer_size = "64KiB"
outstanding = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 16
[[link]]
between = ["sw0", "ep1"]
gen = 4
width = 8
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "write"
transfer_size = "16KiB"
outstanding = 2
"""


def test_a_both_endpoints_requests_and_writes_share_its_input_by_their_credits() -> None:
    """`w0`'s requests and writes wait in one input of `sw0`'s full link up, in the order the
    switch's credits let them in: its 64 NPH credits (reads of 64 x 256 B) against its 32
    writes of PD (16 KiB), so about two requests per write, and the link's turns of that
    input carry the reads' requests as well as the writes. Without the NPH window the fluid
    engine gave `w0`'s reads that input's turns in a larger part, and `w1` 12 % too much."""
    des, fluid = _both(REQUESTS_AND_WRITES_IN_ONE_INPUT, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["resource"] == d["bottleneck"]["resource"] == "rc-sw0 up"


def _random_fabrics():
    """`bench/fluid_random.py`'s generator of random trees (scenario text per seed)."""
    import importlib.util

    path = Path(__file__).parent.parent / "bench" / "fluid_random.py"
    spec = importlib.util.spec_from_file_location("fluid_random", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flows_without_estimates_match_the_simulator_on_random_fabrics() -> None:
    """Seeds 0-99 of `bench/fluid_random.py`, 1 ms each: every flow whose fluid rate rests on
    the closed form alone (no `estimates`) is within 2 % of the simulator (5 % where the
    simulator names a window), and such flows are not a token few: over seeds 0-2099 they
    were 43-53 % of each set's flows and 3 of 2,560 missed (none of 238 on seeds 1900-2099,
    out of sample), against 213 of 2,776 flows with estimates (with random host throttles, 9
    of 510 without). The flows' 90 % bands against
    the simulator (fitted on seeds 100-1699 and `--host` 100-699) hold 85 % of the
    simulator's rates or more."""
    import random

    fr = _random_fabrics()
    plain, total, off, inside = 0, 0, [], 0
    for seed in range(100):
        text = fr.fabric(random.Random(seed), "1ms")
        des = run(load_scenario(text))
        fluid = _fluid(text)
        for d, f in zip(des.flows, fluid["flows"], strict=True):
            total += 1
            assert isinstance(f["estimates"], list) and all(isinstance(e, str) for e in f["estimates"])
            low, high = f["throughput_band_gbps"]
            inside += low <= d["throughput_gbps"] <= high
            if f["estimates"] or d["throughput_gbps"] <= 0:
                continue
            plain += 1
            error = (f["throughput_gbps"] - d["throughput_gbps"]) / d["throughput_gbps"]
            tolerance = 0.05 if d["bottleneck"]["kind"] in WINDOW_KINDS else 0.02
            if abs(error) > tolerance:
                off.append((seed, d["name"], f"{error:+.2%}"))
    assert not off, off
    assert plain >= 0.4 * total, f"{plain} of {total} flows without estimates"
    # The 90 % bands, fitted on other seeds, cover these too (224 of 238).
    assert inside >= 0.85 * total, f"{inside} of {total} flows inside their bands"


#: Random fabric `--host` seed 266: two readers of one 4 KiB transfer at a time and two
#: "both" endpoints with 128 KiB of reads in flight each, through a root complex whose
#: shared data path (5 GB/s) is slower than the links, its posted-write sink 2 GB/s.
WRITES_BEHIND_EVERY_THROTTLE = """
[simulation]
duration = "1ms"
warmup = "20us"
[pcie]
mps = 128
mrrs = 4096
[[root_complex]]
name = "rc"
memory_read_latency = "200ns"
completion = "rcb"
posted_write_rate = "2GB/s"
read_bandwidth = "20GB/s"
data_path_bandwidth = "5GB/s"
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 256
[[link]]
between = ["rc", "ep0"]
gen = 4
width = 16
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "4KiB"
outstanding = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "ep1"]
gen = 5
width = 4
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "4KiB"
outstanding = 1
rate = "8GB/s"
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 32
[[link]]
between = ["rc", "ep2"]
gen = 2
width = 4
[[workload]]
name = "w2"
kind = "dma"
endpoint = "ep2"
direction = "both"
transfer_size = "64KiB"
outstanding = 8
rate = "1GB/s"
[[endpoint]]
name = "ep3"
kind = "dma"
tags = 32
[[link]]
between = ["rc", "ep3"]
gen = 3
width = 8
[[workload]]
name = "w3"
kind = "dma"
endpoint = "ep3"
direction = "both"
transfer_size = "64KiB"
outstanding = 8
"""


def test_a_writes_credits_wait_behind_every_throttle_it_books() -> None:
    """A write's posted credits waited behind the root complex's slowest write throttle
    alone (its 2 GB/s sink), so the writes took the sink's whole rate and the data path was
    shared max-min: the small readers came out at 6 Gb/s against the simulator's 0.87
    (+590 %). They wait behind the data path's queue too, which the large readers' windows
    keep long, so the data path is one FIFO shared by the windows: each flow within 5 %."""
    des = run(load_scenario(WRITES_BEHIND_EVERY_THROTTLE))
    fluid = _fluid(WRITES_BEHIND_EVERY_THROTTLE)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert abs(f["throughput_gbps"] / d["throughput_gbps"] - 1) < 0.05, (d, f)
    assert fluid["flows"][0]["bottleneck"]["resource"] == "rc data path (reads and writes)"


#: A greedy writer and two paced flows behind it into a full memory (random fabric `--host`
#: seed 1372's shape), shared with the Rust tests.
PACED_WRITER = (Path(__file__).parent / "data" / "paced_writer_in_a_shared_buffer.toml").read_text()


def test_paced_flows_meet_their_rates_beside_a_greedy_writer_in_a_shared_buffer() -> None:
    """The root complex's posted buffer is full of the greedy writer's TLPs, but sw0's round
    robin gives the paced writer a credit whenever it has a write: the simulator meets
    both paced flows' rates (8 and 4 Gb/s) and gives the greedy writer the rest of the
    memory. The buffer split by the flows' rates alone held the paced writer below its rate
    and its backlog held both readers (-34 and -61 %)."""
    des, fluid = _both(PACED_WRITER, 0.02)
    for d, f in zip(des.flows, fluid["flows"], strict=True):
        assert f["bottleneck"]["kind"] == d["bottleneck"]["kind"]


#: A fabric whose fluid solve cycles through four rounds without settling (random fabric
#: seed 132).
OSCILLATING = (Path(__file__).parent / "data" / "oscillating_solve.toml").read_text()


def test_a_solve_that_never_settles_comes_to_the_mean_of_its_cycle() -> None:
    """The 4-tag reader `w3` waits behind another stream's backlog in one round and not in
    the next; the solve's last round gave it +288 % against the simulator. With each limit
    damped toward the mean of what the cycle's rounds give it, every flow is within 15 %
    (w3 about -9 %, the others within 1 %)."""
    _both(OSCILLATING, 0.15)


#: A writer whose posted credits wait behind another reader's bursts at the root complex's
#: data path (random fabric `--host` seed 1541).
CREDITS_BEHIND_BURSTS = (Path(__file__).parent / "data" / "posted_credits_behind_read_bursts.toml").read_text()


def test_posted_credits_held_behind_read_bursts_are_named_and_inside_the_band() -> None:
    """The fluid engine gives the writer its link (the bursts are not timed by the solve);
    the simulator's is 2.6 % lower. The writer's estimate names the wait and its band covers
    the simulator's figure; without the estimate the flow had the closed form's 0.15 % band."""
    des = run(load_scenario(CREDITS_BEHIND_BURSTS))
    fluid = _fluid(CREDITS_BEHIND_BURSTS)
    w0 = fluid["flows"][0]
    assert any(e.startswith("burst: its posted credits wait behind rc data path") for e in w0["estimates"]), w0
    low, high = w0["throughput_band_gbps"]
    assert low <= des.flows[0]["throughput_gbps"] <= high, (des.flows[0], w0)
    assert des.flows[0]["throughput_gbps"] < 0.99 * w0["throughput_gbps"]


POINTER = (Path(__file__).parent / "data" / "round_robin_pointer_starves_a_writer.toml").read_text()


def test_writers_a_round_robin_serves_in_credit_timed_turns_name_the_pointer() -> None:
    """The simulator gives one of three writers behind a switch's credit-blocked egress
    almost nothing (a reader's MRds move the round robin past it whenever the posted credits
    are out); the fluid engine gives them a third each and names each writer's `pointer`
    estimate, whose band is wide. Without the reader's MRds the turns are the writers' own
    and nothing names a pointer."""
    des = run(load_scenario(POINTER))
    rates = {f["name"]: f["throughput_gbps"] for f in des.flows}
    assert rates["w1"] < 0.25 * min(rates["w0"], rates["w3"]), rates
    fluid = {f["name"]: f for f in _fluid(POINTER)["flows"]}
    for w in ("w0", "w1", "w3"):
        assert any(e.startswith("pointer: waits at sw0-sw1 up") for e in fluid[w]["estimates"]), fluid[w]
        low, high = fluid[w]["throughput_band_gbps"]
        assert high / low > 1.5, (w, low, high)
    assert not any(e.startswith("pointer:") for e in fluid["w2"]["estimates"]), fluid["w2"]
    writes_only = POINTER.replace('direction = "read"', 'direction = "write"')
    for f in _fluid(writes_only)["flows"]:
        assert not any(e.startswith("pointer:") for e in f["estimates"]), f


BURSTS_AT_A_LINK = (Path(__file__).parent / "data" / "completions_behind_completion_bursts.toml").read_text()


def test_completions_behind_other_readers_completion_bursts_are_named() -> None:
    """A 4-tag reader's completions wait at a switch's Gen2 x1 egress behind the bursts of
    other readers' 4 KiB transfers, at a link neither engine finds full: the simulator's
    reader is far below the fluid engine's, which names the wait (untimed, so the fluid
    figure stays high) on that reader alone."""
    des = run(load_scenario(BURSTS_AT_A_LINK))
    fluid = _fluid(BURSTS_AT_A_LINK)["flows"]
    assert des.flows[0]["throughput_gbps"] < 0.8 * fluid[0]["throughput_gbps"], (des.flows[0], fluid[0])
    named = [any(e.startswith("burst: its completions cross sw0-sw2 down") for e in f["estimates"]) for f in fluid]
    assert named == [True, False, False], named
