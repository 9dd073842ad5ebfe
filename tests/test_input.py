"""What the CLI does with input that is not a scenario: a device, names holding escapes or
megabytes. Always one short line on stderr, never a hang or a flood."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "scenarios" / "t5220-two-switches.toml").read_text()


def with_bad_link(tmp_path: Path, name_toml: str) -> Path:
    """The example with one more link to a node that does not exist, named by ``name_toml``."""
    path = tmp_path / "bad.toml"
    path.write_text(EXAMPLE + f'\n[[link]]\nbetween = ["rc", "{name_toml}"]\ngen = 1\nwidth = 1\n')
    return path


def test_a_device_that_never_ends_is_refused_in_one_line(cli):
    proc = cli("run", "/dev/zero")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "over 64 MiB" in proc.stderr and "/dev/zero" in proc.stderr


def test_a_newline_or_escape_in_a_name_is_escaped(cli, tmp_path):
    proc = cli("run", str(with_bad_link(tmp_path, r"e\nx\u001b[31mred")))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "\x1b" not in proc.stderr
    assert r"e\nx\u{1b}[31mred" in proc.stderr
    assert "is not a node" in proc.stderr


def test_a_huge_name_gives_a_short_line(cli, tmp_path):
    proc = cli("run", str(with_bad_link(tmp_path, "y" * 10_000_000)))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert len(proc.stderr) < 1_000
    assert "(10000002 characters)" in proc.stderr and "is not a node" in proc.stderr


def test_ctrl_c_while_a_big_scenario_loads_stops_with_one_line(interrupt, tmp_path):
    # 262,144 [[host_bridge]] sections (18 MB) take about 2 s to load and run; Ctrl-C at 1 s
    # lands in the load. Before, 65,536 of them loaded in 14 s and Ctrl-C waited for it.
    section = '[[host_bridge]]\nname = "hb{}"\nbandwidth = "2GB/s"\nlatency = "100ns"\n'
    sections = "".join(section.format(i) for i in range(262_144))
    path = tmp_path / "big.toml"
    path.write_text(
        '[simulation]\nduration = "1us"\n[[root_complex]]\nname = "rc"\nhost_bridge = "hb0"\n'
        '[[endpoint]]\nname = "ep"\nkind = "dma"\n[[link]]\nbetween = ["rc", "ep"]\nwidth = 8\n'
        '[[workload]]\nname = "w"\nkind = "dma"\nendpoint = "ep"\ndirection = "read"\n'
        'transfer_size = "4KiB"\n' + sections
    )
    proc, took = interrupt("run", str(path), after=1.0)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "tlpsim: interrupted\n", "")
    assert took < 10, took


def test_every_input_of_the_cli_is_capped_like_a_scenario(cli, tmp_path):
    # /dev/urandom was read whole: 7.6 GB in 53 s, then a MemoryError traceback.
    lspci = next((ROOT / "data" / "pcie-bench").glob("*/sys-lspci.txt"))
    for argv in (
        ["import", "lspci", "/dev/zero"],
        ["import", "lspci", "/dev/urandom"],
        ["import", "lspci", str(lspci), "--tree", "/dev/zero"],
    ):
        proc = cli(*argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "over 64 MiB" in proc.stderr and "/dev/" in proc.stderr, proc.stderr


def just_over_the_cap(path: Path) -> Path:
    """``path`` made a sparse file one byte over :data:`tlpsim.files.MAX_INPUT_BYTES`."""
    from tlpsim.files import MAX_INPUT_BYTES

    with path.open("wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)
    return path


def test_a_file_just_over_the_cap_is_refused_and_one_at_it_is_read(tmp_path):
    import tlpsim
    from tlpsim.files import MAX_INPUT_BYTES
    from tlpsim.importers import ImportFileError

    big = just_over_the_cap(tmp_path / "lspci.txt")
    with pytest.raises(ImportFileError, match=r"lspci.txt: the file is over 64 MiB, too big for"):
        tlpsim.import_lspci(big)
    bench = tmp_path / "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
    bench.mkdir()
    just_over_the_cap(bench / "bw_dma_sz_sweep.txt")
    with pytest.raises(ImportFileError, match=r"bw_dma_sz_sweep.txt: the file is over 64 MiB"):
        tlpsim.import_pcie_bench(bench)
    # At the cap is still read (and refused for what it holds, not for its size).
    with big.open("r+b") as f:
        f.truncate(MAX_INPUT_BYTES)
    with pytest.raises(ImportFileError) as e:
        tlpsim.import_lspci(big)
    assert "over 64 MiB" not in str(e.value)


def test_a_sweep_points_file_over_its_cap_is_refused_in_one_line(tmp_path, monkeypatch):
    import tlpsim
    from tlpsim import ConfigError, sweep_file

    scenario = tmp_path / "s.toml"
    scenario.write_text(EXAMPLE)
    points = tmp_path / "p.jsonl"
    tlpsim.sweep(scenario, {"pcie.mps": [128]}, jobs=1, output=points)
    monkeypatch.setattr(sweep_file, "MAX_SWEEP_FILE_BYTES", points.stat().st_size - 1)
    with pytest.raises(ConfigError, match=r"p.jsonl: the file is over .* too big for a sweep points file"):
        tlpsim.sweep(scenario, {"pcie.mps": [128]}, jobs=1, output=points, resume=True)
