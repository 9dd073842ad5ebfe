"""tlpsim.link_bandwidth and message_bandwidth against the seed reports and the spec."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tlpsim
from tlpsim import ConfigError

SEED = dict(addressing=32, dllp="none", skp=False)


def test_pes24t6_figure2():
    bw = tlpsim.link_bandwidth(1, 8, payload=64, **SEED)
    assert 2 * bw.write_gbps == pytest.approx(24.38, abs=0.01)
    assert bw.efficiency == pytest.approx(64 / 84, rel=1e-12)
    assert bw.tlp_wire_bytes == 84


def test_pes24t6_figure4_four_dllp_bytes_per_tlp():
    bw = tlpsim.link_bandwidth(1, 8, payload=64, addressing=32, dllp=4, skp=False)
    assert 2 * bw.write_gbps == pytest.approx(32 * 64 / 88, rel=1e-12)


def test_ntb_link_and_figure9():
    assert tlpsim.link_bandwidth(1, 4, payload=64, **SEED).write_gbps == pytest.approx(6.10, abs=0.01)
    expected = {16384: (0.008, 0.003), 8192: (0.016, 0.003), 4096: (0.032, 0.003), 512: (0.21, 0.015)}
    for size, (reduction, tol) in expected.items():
        m = tlpsim.message_bandwidth(size, 90, 1, 4, payload=64, **SEED)
        assert m.reduction == pytest.approx(reduction, abs=tol), size
    m = tlpsim.message_bandwidth(16384, 90, 1, 4, payload=64, **SEED)
    assert m.message_gbps == pytest.approx(6.05, abs=0.02)
    assert m.tlps_per_message == math.ceil((16384 + 90) / 64)


def test_pes24n3a_24_lanes():
    bw = tlpsim.link_bandwidth(1, 8)
    assert 3 * 2 * bw.raw_gbps == pytest.approx(120)
    assert 3 * 2 * bw.encoded_gbps == pytest.approx(96)


def test_spec_arithmetic():
    assert tlpsim.link_bandwidth(3, 8).encoded_gbps == pytest.approx(63.02, abs=0.005)
    assert tlpsim.link_bandwidth(5, 16).encoded_gbps == pytest.approx(504.1, abs=0.05)
    g6 = tlpsim.link_bandwidth(6, 16, mps=256, payload=4096, skp=False)
    assert g6.flit
    assert g6.write_gbps == pytest.approx(1024 * 236 / 256 * 256 / (256 + 16), rel=1e-12)


def test_spec_dllp_overhead_gen1_x8_is_small():
    spec = tlpsim.link_bandwidth(1, 8, mps=128)
    none = tlpsim.link_bandwidth(1, 8, mps=128, dllp="none")
    overhead = 1 - spec.write_gbps / none.write_gbps
    assert 0.01 < overhead < 0.05
    assert spec.dllp_fraction == pytest.approx(overhead)


@pytest.mark.parametrize("dllp", ["none", 8.0, 16.0])
def test_dllp_share_is_what_the_write_rate_loses(dllp):
    # Whatever the DLLP policy, the share reported is the share of the capacity lost.
    none = tlpsim.link_bandwidth(1, 8, mps=128, dllp="none")
    bw = tlpsim.link_bandwidth(1, 8, mps=128, dllp=dllp)
    assert bw.dllp_fraction == pytest.approx(1 - bw.write_gbps / none.write_gbps, abs=1e-12)
    assert (bw.dllp_fraction > 0) == (dllp != "none")


@pytest.mark.parametrize(
    "kwargs, allowed",
    [
        (dict(gen=8, width=1), "1, 2, 3, 4, 5, 6, 7"),
        (dict(gen=1, width=3), "1, 2, 4, 8, 12, 16, 32"),
        (dict(gen=1, width=1, mps=100), "128, 256, 512, 1024, 2048, 4096"),
        (dict(gen=1, width=1, rcb=32), "64, 128"),
        (dict(gen=1, width=1, payload=0), "1 to"),
        (dict(gen=1, width=1, payload=-3), "payload -3"),
        (dict(gen=1, width=1, dllp="lots"), "spec, none"),
        (dict(gen=1, width=1, dllp=True), "dllp must be"),
        (dict(gen=1.5, width=1), "gen must be a whole number"),
        (dict(gen=6, width=4, flit=False), "flit mode"),
        (dict(gen=1, width=1, completion="line"), "rcb"),
    ],
)
def test_bad_input_names_allowed_values(kwargs, allowed):
    with pytest.raises(ConfigError, match=None) as info:
        tlpsim.link_bandwidth(**kwargs)
    assert allowed in str(info.value)
    assert isinstance(info.value, ValueError)


def test_to_dict_has_design_fields():
    d = tlpsim.link_bandwidth(1, 8).to_dict()
    for name in ("gen", "width", "mps", "payload_bytes", "raw_gbps", "encoded_gbps", "tlp_wire_bytes",
                 "write_gbps", "read_gbps", "efficiency"):  # fmt: skip
        assert name in d


configs = st.fixed_dictionaries(
    dict(
        gen=st.integers(1, 7),
        width=st.sampled_from([1, 2, 4, 8, 12, 16, 32]),
        mps=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
        mrrs=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
        rcb=st.sampled_from([64, 128]),
        payload=st.one_of(st.none(), st.integers(1, 1 << 20)),
        addressing=st.sampled_from([32, 64]),
        ecrc=st.booleans(),
        dllp=st.one_of(st.sampled_from(["spec", "none"]), st.floats(0, 32)),
        skp=st.booleans(),
        completion=st.sampled_from(["rcb", "mps"]),
    )
)


@settings(max_examples=300, deadline=None)
@given(configs)
def test_bounded_by_encoded_rate(cfg):
    bw = tlpsim.link_bandwidth(**cfg)
    assert 0 < bw.write_gbps <= bw.encoded_gbps
    assert 0 < bw.read_gbps <= bw.encoded_gbps
    assert 0 < bw.efficiency <= 1


@settings(max_examples=200, deadline=None)
@given(configs)
def test_monotone_in_width_and_generation(cfg):
    widths = [1, 2, 4, 8, 12, 16, 32]
    bw = tlpsim.link_bandwidth(**cfg)
    if cfg["width"] != 32:
        wider = tlpsim.link_bandwidth(**dict(cfg, width=widths[widths.index(cfg["width"]) + 1]))
        assert wider.write_gbps > bw.write_gbps and wider.read_gbps > bw.read_gbps
    if cfg["gen"] != 7:
        faster = tlpsim.link_bandwidth(**dict(cfg, gen=cfg["gen"] + 1))
        assert faster.write_gbps > bw.write_gbps and faster.read_gbps > bw.read_gbps
