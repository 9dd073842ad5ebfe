"""`tlpsim import pcie-bench`: the result files of a pcie-bench directory as one table."""

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tlpsim
from tlpsim.importers import format_size, parse_host_name, parse_size, read_pcie_bench

DATA = Path(__file__).resolve().parent.parent / "data" / "pcie-bench"
HOSTS = sorted(p.name for p in DATA.iterdir() if p.is_dir())
BDW = "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430"
HSW = "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"

# Rows of data (measurements, CDF points) and result files per directory, counted with
# `grep -c` over the files: six directories ran every test, three fewer.
COUNTS = {
    f"{BDW}-s0-s0-s0": (2472, 1885, 30),
    f"{BDW}-s0-s0-s0-iommu-nosp": (2472, 1519, 30),
    f"{BDW}-s0-s0-s1": (2472, 844, 30),
    f"{BDW}-s0-s1-s0": (924, 903, 21),
    f"{BDW}-s0-s1-s1": (2472, 998, 30),
    f"{BDW}-s0-s1-s1-iommu-nosp": (924, 4801, 21),
    HSW: (2472, 604, 30),
    f"{HSW}-iommu": (2052, 857, 28),
    f"{HSW}-iommu-nosp": (2052, 1160, 28),
}


@pytest.fixture(scope="module")
def imported():
    """Every directory, read once."""
    return {name: tlpsim.import_pcie_bench(DATA / name) for name in HOSTS}


def test_the_nine_directories_are_all_here():
    assert sorted(COUNTS) == HOSTS


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_row_counts(imported, name):
    data = imported[name]
    assert (len(data.measurements), len(data.cdf), len(data.files)) == COUNTS[name]
    assert all(len(r) == len(data.measurements[0]) for r in data.measurements)
    df = data.to_pandas()
    assert len(df) == COUNTS[name][0] and df["test"].notna().all()
    assert set(df["pattern"]) <= {"Seq", "Rand"}
    assert set(df["cache"]) <= {"HWarm", "DWarm", "DThrash", "Cold"}


def test_hand_checked_rows(imported):
    rows = imported[f"{BDW}-s0-s0-s0"].measurements
    # bw_dma_sz_sweep.txt line 2:
    # BW_DMA_RD Rand HWarm 0 0 8KB 16 150139456 125.12ms 128MB 8388608 8.582 67046530.4
    bw = next(r for r in rows if r["file"] == "bw_dma_sz_sweep.txt" and r["line"] == 2)
    assert bw["test"] == "BW_DMA_RD" and bw["pattern"] == "Rand" and bw["cache"] == "HWarm"
    assert (bw["host_offset"], bw["device_offset"], bw["window_bytes"], bw["transfer_bytes"]) == (0, 0, 8192, 16)
    assert (bw["time_cycles"], bw["total_bytes"], bw["transactions"]) == (150139456, 134217728, 8388608)
    assert bw["time_s"] == pytest.approx(0.12512)
    assert (bw["bw_gbps"], bw["transactions_per_s"]) == (8.582, 67046530.4)
    assert bw["latency_avg_ns"] is None
    # lat_cmd_details.txt line 2: LAT_CMD_RD Rand Cold 0 0 8KB 8, then in ns
    # 665.0 471.3 466 453 1026 480 813, 0 outliers, 16777216 samples.
    lat = next(r for r in rows if r["file"] == "lat_cmd_details.txt" and r["line"] == 2)
    assert (lat["test"], lat["window_bytes"], lat["transfer_bytes"]) == ("LAT_CMD_RD", 8192, 8)
    got = [lat[f"latency_{k}_ns"] for k in ("avg", "median", "min", "max", "p95", "p99_9")]
    assert got == [471.3, 466, 453, 1026, 480, 813]
    assert (lat["tavg_ns"], lat["latency_avg_cycles"], lat["outliers"], lat["samples"]) == (665.0, 565.5, 0, 16777216)
    assert lat["bw_gbps"] is None
    # A 64 MB window is 64 MiB.
    assert any(r["window_bytes"] == 64 << 20 for r in rows if r["file"] == "lat_cmd_details.txt")
    # The CDF's windows are bytes, its cache words spelt as the results spell them.
    cdf = imported[f"{BDW}-s0-s0-s0"].cdf[0]
    assert (cdf["file"], cdf["test"], cdf["transfer_bytes"], cdf["window_bytes"], cdf["cache"]) == (
        "lat_cmd_details_cdf.txt", "LAT_CMD_RD", 8, 8192, "Cold",
    )  # fmt: skip
    assert (cdf["latency_cycles"], cdf["latency_ns"], cdf["cumulative_fraction"]) == (544, 453, 0.0)


def test_the_gbps_column_holds_gigabits(imported):
    # "BW (GB/s)" is Bytes x 8 / Time / 1e9 on every row of every directory (to the
    # file's rounding: three decimals of the rate, two of the milliseconds).
    for data in imported.values():
        for r in data.measurements:
            if r["bw_gbps"] is not None:
                assert r["total_bytes"] * 8 / r["time_s"] / 1e9 == pytest.approx(r["bw_gbps"], rel=2e-4, abs=2e-3)
                assert r["total_bytes"] == r["transactions"] * r["transfer_bytes"]
                # The card counts cycles at 1.2 GHz, as its name says.
                assert r["transactions"] / (r["time_cycles"] / 1.2e9) == pytest.approx(r["transactions_per_s"])


def test_host_metadata_from_the_names(imported):
    h = imported[f"{BDW}-s0-s1-s0"].host
    assert h == {
        "name": f"{BDW}-s0-s1-s0", "card": "nfp6000-1.2GHz", "card_clock_ghz": 1.2, "cpu": "bdw-Xeon-E5-2630v4",
        "cpu_arch": "bdw", "cpu_arch_name": "Broadwell", "model": "dell-t430", "device_socket": 0,
        "memory_socket": 1, "warming_socket": 0, "remote_memory": True, "iommu": False,
        "iommu_super_pages": None, "misc": [],
    }  # fmt: skip
    nosp = imported[f"{BDW}-s0-s1-s1-iommu-nosp"].host
    assert (nosp["iommu"], nosp["iommu_super_pages"], nosp["warming_socket"]) == (True, False, 1)
    hsw = imported[f"{HSW}-iommu"].host
    assert (hsw["cpu"], hsw["model"], hsw["device_socket"], hsw["iommu"], hsw["iommu_super_pages"]) == (
        "hsw-Xeon-E5-2620v3", "dell-t630", None, True, True,
    )  # fmt: skip
    assert imported[HSW].host["iommu"] is False


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        (
            "nfp6000-1.2GHz_snb-Xeon-E5-2630_hp-z440_s1-s0-s1_iommu",
            {"cpu": "snb-Xeon-E5-2630", "cpu_arch_name": "Sandy Bridge", "model": "hp-z440",
             "device_socket": 1, "memory_socket": 0, "remote_memory": True, "iommu": True, "iommu_super_pages": True},
        ),
        (
            "netfpga-sume_hsw-Xeon-E5-2637v3_dell-r730_gen2x4",
            {"card_clock_ghz": None, "model": "dell-r730", "iommu": False, "misc": ["gen2x4"]},
        ),
        ("mystery", {"card": "mystery", "cpu": None, "model": None, "device_socket": None, "iommu": False}),
    ],
)  # fmt: skip
def test_host_names_that_follow_the_convention(name, expect):
    host = parse_host_name(name)
    assert {k: host[k] for k in expect} == expect


def test_pandas_tables(imported):
    data = imported[HSW]
    df = data.to_pandas()
    reads = df[(df.test == "BW_DMA_RD") & (df.file == "bw_dma_sz_sweep.txt")]
    assert reads.transfer_bytes.is_monotonic_increasing and reads.bw_gbps.max() > 40
    assert list(data.to_pandas("cdf").columns[:6]) == [
        "file",
        "line",
        "test",
        "cache",
        "window_bytes",
        "transfer_bytes",
    ]
    assert data.to_pandas("host").iloc[0]["model"] == "dell-t630"
    with pytest.raises(ValueError, match="allowed: measurements, cdf, host"):
        data.to_pandas("links")


HEADER = "      Test  PAT   Cache HO DO WinSZ   SZ     Time(cyc)      Time    Bytes     Trans   BW (GB/s)    Trans/s\n"
GOOD = " BW_DMA_RD  Seq   HWarm  0  0   8KB   64     158209712  131.84ms    512MB   8388608      32.577 63626496.0\n"


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"bw_x.txt": HEADER + GOOD + GOOD.replace(" 63626496.0", "")}, "bw_x.txt:3: 12 values where the header"),
        ({"bw_x.txt": HEADER + GOOD.replace("8KB", "8XB")}, "bw_x.txt:2: column WinSZ: '8XB' is not a size"),
        ({"bw_x.txt": HEADER + GOOD.replace("131.84ms", "soon")}, "bw_x.txt:2: column Time: 'soon' is not a duration"),
        ({"lat_x.txt": "hello world\n1 2\n"}, "lat_x.txt:1: the first line names no column pcie-bench writes"),
        ({"lat_x.txt": "\n\n"}, "lat_x.txt: the file is empty"),
        ({"lat_x_cdf.txt": "  cycles   ns  cdf\n 544 453 0.1\n"}, "lat_x_cdf.txt:2: a point before any section"),
        ({"notes.txt": "x"}, "no pcie-bench result files (bw_*.txt, lat_*.txt)"),
    ],
)
def test_malformed_files_give_one_clear_error(tmp_path, files, words):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(tlpsim.ImportFileError) as e:
        tlpsim.import_pcie_bench(tmp_path)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_unknown_columns_are_kept(tmp_path):
    (tmp_path / "bw_new.txt").write_text(HEADER.rstrip("\n") + "  Power(W)\n" + GOOD.rstrip("\n") + "  7.5\n")
    (row,) = tlpsim.import_pcie_bench(tmp_path).measurements
    assert row["power_w"] == 7.5 and row["bw_gbps"] == 32.577


def test_cli_formats(cli):
    directory = str(DATA / f"{HSW}-iommu")
    proc = cli("import", "pcie-bench", directory, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"directory", "host", "files", "notes", "measurements", "cdf", "machine"}
    assert doc["notes"] == []
    assert len(doc["measurements"]) == 2052 and doc["host"]["iommu"] is True
    # The machine facts come from the sys-*.txt files, each with its source.
    assert doc["machine"]["llc_bytes"] == {"value": "15MiB", "source": "sys-cpuinfo.txt: cache size"}
    assert all(set(f) == {"value", "source"} for f in doc["machine"].values())
    proc = cli("import", "pcie-bench", directory, "--format", "csv", "--cdf")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 857 and rows[0]["cumulative_fraction"] == "0.0"
    proc = cli("import", "pcie-bench", directory, "--cdf")
    assert proc.returncode == 0 and "IOMMU on" in proc.stdout and "cumulative" in proc.stdout
    assert "machine facts" in proc.stdout and "sys-cpuinfo.txt: cache size" in proc.stdout


def test_cli_without_lspci_still_imports_and_says_why(cli, tmp_path):
    (tmp_path / "bw_x.txt").write_text(HEADER + GOOD)
    proc = cli("import", "pcie-bench", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "machine facts not read: no sys-lspci.txt" in proc.stdout
    proc = cli("import", "pcie-bench", str(tmp_path), "--format", "json")
    assert json.loads(proc.stdout)["machine"] is None


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["no-such-dir"], "no-such-dir: no such directory"),
        (["README.md"], "README.md: is a file"),
        (["docs"], "docs: no pcie-bench result files"),
    ],
)
def test_cli_bad_directory_one_line_exit_2(cli, args, words):
    proc = cli("import", "pcie-bench", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in proc.stderr


@given(st.integers(min_value=0, max_value=1 << 50))
def test_sizes_round_trip(n):
    assert parse_size(format_size(n)) == n


@given(st.integers(min_value=0, max_value=1 << 30), st.sampled_from(["", "B", "KB", "MB", "GB", "KiB", "MiB"]))
def test_pcie_bench_sizes_are_binary(k, unit):
    assert parse_size(f"{k}{unit}") == k << {"": 0, "B": 0, "K": 10, "M": 20, "G": 30}[unit[:1]]


@given(st.integers(min_value=1, max_value=1 << 20), st.sampled_from([("KB", 10), ("MB", 20)]))
def test_half_sizes_as_pcie_bench_writes_them(k, unit):
    # pcie-bench writes a window of one and a half MiB "1.5MB".
    assert parse_size(f"{k}.5{unit[0]}") == (2 * k + 1) << (unit[1] - 1)


def strict_json(text: str):
    """``text`` parsed as JSON that has no NaN or Infinity (which Python's reader accepts)."""

    def refuse(constant: str):
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


NAN_MIN = Path(__file__).resolve().parent / "data" / "pciebench_nan_min" / HSW


def test_a_nan_measurement_is_left_out_with_a_note_and_the_json_stays_json(cli):
    # pcie-bench's "nan" in BW (GB/s) was printed as "bw_gbps": NaN, which no strict reader takes.
    proc = cli("import", "pcie-bench", str(NAN_MIN), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = strict_json(proc.stdout)
    assert data["measurements"] == []
    assert data["notes"] == [f"{NAN_MIN}/bw_dma_sz_sweep.txt:2: column BW (GB/s) is nan, not a measurement; "
                             "the line is left out"]  # fmt: skip
    assert proc.stderr == f"tlpsim: note: {data['notes'][0]}\n"


def test_a_non_finite_value_anywhere_leaves_its_line_out():
    head = "Test PAT Cache HO DO WinSZ SZ Time(cyc) Time Bytes Trans BW (GB/s) Trans/s\n"
    line = "BW_DMA_RD Rand HWarm 0 0 8KB {sz} 160968016 134.14ms 512MB 8388608 {bw} {ts}\n"
    values = [(64, "32.0", "6e7"), (128, "inf", "6e7"), (256, "40.0", "-inf"), (512, "41.0", "NaN")]
    text = head + "".join(line.format(sz=sz, bw=bw, ts=ts) for sz, bw, ts in values)
    cdf = "cycles ns cdf\ntest=LAT_DMA_RD trans_sz=64 win_sz=8192 cache=cold\n10 8.3 0.5\n11 nan 0.6\n12 10 1.0\n"
    data = read_pcie_bench(HSW, {"bw_dma_sz_sweep.txt": text, "lat_dma_details_cdf.txt": cdf})
    assert [r["transfer_bytes"] for r in data.measurements] == [64]
    assert [r["latency_cycles"] for r in data.cdf] == [10, 12]
    assert [n.split(": ")[0] for n in data.notes] == [
        f"{HSW}/bw_dma_sz_sweep.txt:3", f"{HSW}/bw_dma_sz_sweep.txt:4", f"{HSW}/bw_dma_sz_sweep.txt:5",
        f"{HSW}/lat_dma_details_cdf.txt:4",
    ]  # fmt: skip
    assert "column Trans/s is -inf" in data.notes[1]


def test_json_output_never_holds_nan_or_infinity(capsys):
    from tlpsim.output import emit_json

    emit_json({"a": float("nan"), "b": [float("inf"), 1.5, {"c": -float("inf")}], "d": (float("nan"),)})
    assert strict_json(capsys.readouterr().out) == {"a": None, "b": [None, 1.5, {"c": None}], "d": [None]}
