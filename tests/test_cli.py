"""The tlpsim command line as a user runs it."""

import csv
import io

import pytest

DESIGN_LINK_FIELDS = [
    "gen", "width", "mps", "payload_bytes", "raw_gbps", "encoded_gbps", "tlp_wire_bytes",
    "write_gbps", "read_gbps", "efficiency",
]  # fmt: skip


def test_link_json_rows_have_design_fields(cli_json):
    rows = cli_json("link", "--gen", "1", "--width", "8", "--mps", "128", "--payload", "64,128,256,512,1024")
    assert [r["payload_bytes"] for r in rows] == [64, 128, 256, 512, 1024]
    for row in rows:
        assert list(row)[: len(DESIGN_LINK_FIELDS)] == DESIGN_LINK_FIELDS
        assert row["gen"] == 1 and row["width"] == 8 and row["mps"] == 128
    assert rows[0]["write_gbps"] < rows[1]["write_gbps"]


def test_link_csv(cli):
    proc = cli("link", "--gen", "3", "--width", "4", "--payload", "4KiB", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 1 and rows[0]["payload_bytes"] == "4096"


def test_link_table_is_the_default(cli):
    proc = cli("link", "--gen", "2", "--width", "4")
    assert proc.returncode == 0
    assert "write Gb/s" in proc.stdout and "…" not in proc.stdout


def test_message_segmentation(cli_json):
    rows = cli_json(
        "link", "--gen", "1", "--width", "4", "--addressing", "32", "--dllp", "none", "--no-skp",
        "--message", "16384,512", "--header", "90", "--payload", "64",
    )  # fmt: skip
    assert [r["message_bytes"] for r in rows] == [16384, 512]
    assert rows[0]["message_gbps"] == pytest.approx(6.05, abs=0.02)
    assert rows[1]["reduction"] == pytest.approx(0.21, abs=0.015)


def test_sizes_are_written_as_in_scenario_files(cli):
    proc = cli("link", "--gen", "1", "--width", "1", "--payload", "4KiB,4KB,1GiB,512B", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()[1:]
    assert [r.split(",")[3] for r in rows] == ["4096", "4000", "1073741824", "512"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--gen", "8", "--width", "1"], "1, 2, 3, 4, 5, 6, 7"),
        (["--gen", "1", "--width", "3"], "1, 2, 4, 8, 12, 16, 32"),
        (["--gen", "1", "--width", "1", "--mps", "100"], "128, 256"),
        (["--gen", "1", "--width", "1", "--rcb", "32"], "64, 128"),
        (["--gen", "1", "--width", "1", "--payload", "0"], "payload 0"),
        (["--gen", "1", "--width", "1", "--payload", "lots"], 'payload "lots" is not allowed'),
        (["--gen", "one", "--width", "1"], "--gen"),
        (["--width", "1"], "Missing option"),
        (["--gen", "1", "--width", "1", "--format", "xml"], "--format"),
    ],
)
def test_bad_arguments_one_line_exit_2(cli, args, words):
    proc = cli("link", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", [[], ["link"], ["validate"]])
def test_help_everywhere(cli, command):
    proc = cli(*command, "--help")
    assert proc.returncode == 0
    assert "--format" in proc.stdout or not command
