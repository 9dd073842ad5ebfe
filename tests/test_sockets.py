"""Two sockets: a [[socket_link]] between two root complexes, the copies and DMAs that cross
it, and the one model of remote access it shares with ``memory_socket = "remote"``."""

from __future__ import annotations

import json

import pytest

import tlpsim

BASE = """
[simulation]
duration = "60us"
warmup = "10us"

[pcie]
gen = 5
width = 16
mps = 256
mrrs = 512

[[root_complex]]
name = "rc0"
memory_read_latency = "650ns"
completion = "mps"
p2p = "forward"

[[root_complex]]
name = "rc1"
memory_read_latency = "650ns"
completion = "mps"
p2p = "forward"

[[switch]]
name = "sw1"
forwarding = "cut-through"
latency = "120ns"

[[socket_link]]
between = ["rc0", "rc1"]
bandwidth = "{bw}"

[[endpoint]]
name = "gpu0"
kind = "gpu"

[[endpoint]]
name = "gpu1"
kind = "gpu"

[[endpoint]]
name = "dma0"
kind = "dma"
tags = 256

[[link]]
between = ["rc0", "gpu0"]

[[link]]
between = ["rc0", "dma0"]

[[link]]
between = ["rc1", "sw1"]

[[link]]
between = ["sw1", "gpu1"]
"""

P2P_WRITE = """
[[workload]]
name = "copy"
kind = "memcpy"
endpoint = "gpu0"
target = "gpu1"
size = "1MiB"
"""

#: Payload GB/s of a Gen5 x16 link carrying 256 B posted writes (the closed form).
WRITE_LIMIT = tlpsim.link_bandwidth(gen=5, width=16, mps=256).write_gbytes_per_s


def run(text: str):
    return tlpsim.run(tlpsim.load_scenario(text))


def flow(result, name: str) -> dict:
    return next(f for f in result.flows if f["name"] == name)


@pytest.mark.parametrize("bw", [20.0, 30.0, 128.0])
def test_cross_socket_copy_runs_at_the_smaller_of_socket_link_and_gpu_link(bw):
    r = run(BASE.format(bw=f"{bw}GB/s") + P2P_WRITE)
    f = flow(r, "copy")
    expect = min(bw, WRITE_LIMIT)
    assert f["throughput_gbytes_per_s"] == pytest.approx(expect, rel=0.02)
    if bw < WRITE_LIMIT:
        assert f["bottleneck"]["kind"] == "socket_link"
        assert f["bottleneck"]["resource"] == "rc0->rc1 socket link"
    else:
        assert f["bottleneck"]["kind"] != "socket_link"
    assert r.audit["passed"]


@pytest.mark.parametrize("bw", [25.0, 128.0])
def test_dma_into_the_other_sockets_memory_runs_at_the_smaller_limit(bw):
    text = BASE.format(bw=f"{bw}GB/s") + (
        '[[workload]]\nname = "w"\nkind = "dma"\nendpoint = "dma0"\nmemory = "rc1"\n'
        'direction = "write"\ntransfer_size = "64KiB"\noutstanding = 8\n'
    )
    r = run(text)
    f = flow(r, "w")
    assert f["target"] == "rc1"
    assert f["throughput_gbytes_per_s"] == pytest.approx(min(bw, WRITE_LIMIT), rel=0.02)
    assert (f["bottleneck"]["kind"] == "socket_link") == (bw < WRITE_LIMIT)
    way = {s["direction"]: s for s in r.socket_links}
    assert way["rc0->rc1"]["payload_gbps"] == pytest.approx(f["throughput_gbps"], rel=0.02)
    assert way["rc1->rc0"]["utilization"] == 0


def test_host_copy_from_the_other_socket_reads_across_the_link():
    text = BASE.format(bw="20GB/s") + (
        '[[workload]]\nname = "h2d"\nkind = "memcpy"\nendpoint = "gpu1"\ndirection = "h2d"\n'
        'memory = "rc0"\nsize = "64MiB"\n'
    )
    f = flow(run(text), "h2d")
    assert f["throughput_gbytes_per_s"] == pytest.approx(20.0, rel=0.02)
    assert f["bottleneck"]["resource"] == "rc0->rc1 socket link"


def test_peer_reads_across_sockets_bring_completions_back_over_the_link():
    text = BASE.format(bw="20GB/s") + P2P_WRITE.replace('size = "1MiB"', 'direction = "read"\nsize = "1MiB"')
    r = run(text)
    f = flow(r, "copy")
    assert f["throughput_gbytes_per_s"] == pytest.approx(20.0, rel=0.02)
    assert f["bottleneck"]["resource"] == "rc1->rc0 socket link"
    assert r.audit["order_violations"] == 0 and r.audit["passed"]


def test_each_root_complexs_p2p_bandwidth_limits_a_cross_socket_copy():
    text = BASE.format(bw="100GB/s").replace(
        'name = "rc1"\nmemory_read_latency = "650ns"\ncompletion = "mps"\np2p = "forward"',
        'name = "rc1"\nmemory_read_latency = "650ns"\ncompletion = "mps"\np2p = "forward"\np2p_bandwidth = "24GB/s"',
    )
    f = flow(run(text + P2P_WRITE), "copy")
    assert f["throughput_gbytes_per_s"] == pytest.approx(24.0, rel=0.02)
    assert f["bottleneck"]["kind"] == "p2p"


def test_memory_socket_remote_and_a_socket_link_give_one_remote_write_rate():
    """The one-root-complex shorthand (memory_socket = "remote", socket_link_bandwidth) and
    a described second socket (a [[socket_link]] of that bandwidth) are one model."""
    one = """
[simulation]
duration = "60us"
warmup = "10us"
[pcie]
gen = 5
width = 16
mps = 256
[[root_complex]]
name = "rc0"
memory_read_latency = "100ns"
memory_socket = "remote"
socket_link_bandwidth = "22GB/s"
[[endpoint]]
name = "dma0"
kind = "dma"
[[link]]
between = ["rc0", "dma0"]
[[workload]]
name = "w"
kind = "dma"
endpoint = "dma0"
direction = "write"
transfer_size = "64KiB"
outstanding = 8
"""
    two = BASE.format(bw="22GB/s") + (
        '[[workload]]\nname = "w"\nkind = "dma"\nendpoint = "dma0"\nmemory = "rc1"\n'
        'direction = "write"\ntransfer_size = "64KiB"\noutstanding = 8\n'
    )
    a, b = flow(run(one), "w"), flow(run(two), "w")
    assert a["throughput_gbytes_per_s"] == pytest.approx(22.0, rel=0.02)
    assert b["throughput_gbytes_per_s"] == pytest.approx(a["throughput_gbytes_per_s"], rel=0.02)


def test_socket_link_keys_are_settable_and_listed_in_the_topology():
    s = tlpsim.load_scenario(BASE.format(bw="30GB/s") + P2P_WRITE, {"socket_link.rc0-rc1.bandwidth": "10GB/s"})
    topo = json.loads(s.topology_json)
    assert topo["socket_links"] == [
        {"name": "rc0-rc1", "between": ["rc0", "rc1"], "bandwidth": 10e9, "latency_ns": 53.0}
    ]
    assert flow(tlpsim.run(s), "copy")["throughput_gbytes_per_s"] == pytest.approx(10.0, rel=0.02)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda t: t.replace('[[socket_link]]\nbetween = ["rc0", "rc1"]\nbandwidth = "30GB/s"\n', ""),
            'under different root complexes ("rc0" and "rc1") with no [[socket_link]]',
        ),
        (
            lambda t: t.replace('between = ["rc0", "rc1"]\nbandwidth', 'between = ["rc0", "sw1"]\nbandwidth'),
            '"sw1" is a switch; a socket link joins two root complexes',
        ),
        (
            lambda t: t.replace('between = ["rc0", "rc1"]\nbandwidth', 'between = ["rc0", "rc0"]\nbandwidth'),
            "names one root complex twice",
        ),
        (lambda t: t.replace('bandwidth = "30GB/s"', 'bandwidth = "0GB/s"'), "bandwidth"),
        (
            lambda t: t.replace(
                'name = "rc1"\nmemory_read_latency = "650ns"',
                'name = "rc1"\nmemory_read_latency = "650ns"\nmemory_socket = "remote"',
            ),
            'memory = "<root complex>"',
        ),
        (
            lambda t: (
                t + '[[workload]]\nname = "m"\nkind = "memcpy"\nendpoint = "gpu0"\ndirection = "h2d"\nmemory = "gpu1"\n'
            ),
            'memory = "gpu1" is a GPU',
        ),
        (
            lambda t: (
                t + '[[workload]]\nname = "m"\nkind = "dma"\nendpoint = "dma0"\ndirection = "write"\n'
                'transfer_size = "4KiB"\nmemory = "rc1"\ntarget = "rc1"\n'
            ),
            "give memory (the root complex holding the host buffer) or a target, not both",
        ),
    ],
)
def test_socket_mistakes_are_one_line(edit, message):
    with pytest.raises(tlpsim.ScenarioError) as e:
        tlpsim.load_scenario(edit(BASE.format(bw="30GB/s") + P2P_WRITE))
    text = str(e.value)
    assert message in text and "\n" not in text


GALLERY = "scenarios/gen5-2socket-8gpu.toml"


def _switch_and_socket(topo: dict) -> dict[str, tuple[str, str]]:
    """Each GPU's switch and root complex."""
    up = {link["down"]: link["up"] for link in topo["links"]}
    return {n["name"]: (up[n["name"]], n["root_complex"]) for n in topo["nodes"] if n["kind"] == "gpu"}


@pytest.mark.parametrize("socket_bw", [None, 20.0])
def test_gallery_write_matrix_follows_the_closed_form_p2p_and_socket_link(socket_bw):
    """Pairs in one switch run at the GPU link's write closed form, pairs across switches at
    the root complex's p2p_bandwidth (40 GB/s), pairs across sockets at the smaller of that
    and the socket link."""
    from tlpsim.matrix import copy_matrices

    values = {} if socket_bw is None else {"socket_link.rc0-rc1.bandwidth": f"{socket_bw}GB/s"}
    (m,) = copy_matrices(GALLERY, ["device_to_device_write"], values=values, jobs=1)
    where = _switch_and_socket(json.loads(tlpsim.load_scenario(GALLERY).topology_json))
    assert m.rows == m.columns and len(m.rows) == 8
    socket = 128.0 if socket_bw is None else socket_bw
    for i, src in enumerate(m.rows):
        for j, dst in enumerate(m.columns):
            cell = m.matrix[i][j]
            if src == dst:
                assert cell is None
                continue
            if where[src][0] == where[dst][0]:
                expect = WRITE_LIMIT
            elif where[src][1] == where[dst][1]:
                expect = 40.0
            else:
                expect = min(40.0, socket)
            assert cell == pytest.approx(expect, rel=0.02), (src, dst)
