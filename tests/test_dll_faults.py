"""The data link layer under faults from the CLI: a lost UpdateFC is no deadlock, retrains are
counted and shown, and a bit error rate of 1e-300 runs as none."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "scenarios" / "t5220-two-switches.toml").read_text()
CREDITS = "credits = { ph = 1, pd = 8, nph = 1, npd = 1, cplh = 1, cpld = 8 }\n"


def starved(tmp_path: Path, seed: int = 25, duration: str = "200us") -> Path:
    """The example with one header credit per type on sw2 and ex and BER 1e-3 on every link."""
    text = (
        EXAMPLE.replace("seed = 7", f"seed = {seed}")
        .replace('duration = "200us"', f'duration = "{duration}"')
        .replace('name = "sw2"\n', f'name = "sw2"\n{CREDITS}')
        .replace('name = "ex"\n', f'name = "ex"\n{CREDITS}')
        .replace("width = 8\n", "width = 8\nber = 1e-3\n")
    )
    path = tmp_path / f"starved-{seed}-{duration}.toml"
    path.write_text(text)
    return path


def test_a_lost_update_fc_ends_with_data_not_a_credit_deadlock(cli, tmp_path):
    # It ended with exit 3, "credit deadlock at 150.000 us ... CplH credits", at 200 us.
    for duration in ("200us", "300us"):
        proc = cli("run", str(starved(tmp_path, duration=duration)), "--format", "json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["flows"][0]["bytes"] > 0


def test_retrains_are_a_link_field_and_a_column_only_when_a_link_retrained(cli, tmp_path):
    path = starved(tmp_path, duration="300us")
    proc = cli("run", str(path), "--format", "json")
    links = json.loads(proc.stdout)["links"]
    assert all("retrains" in link for link in links)
    assert sum(link["retrains"] for link in links) > 0
    table = cli("run", str(path))
    assert table.returncode == 0, table.stderr
    assert "retrains" in table.stdout
    clean = tmp_path / "clean.toml"
    clean.write_text(EXAMPLE)
    plain = cli("run", str(clean))
    assert plain.returncode == 0 and "retrains" not in plain.stdout


def test_a_bit_error_rate_of_1e_300_gives_the_results_of_none(cli, tmp_path):
    runs = []
    for ber in ("0", "1e-300"):
        path = tmp_path / f"ber-{ber}.toml"
        path.write_text(EXAMPLE.replace("mps = 128", f"mps = 128\nber = {ber}"))
        proc = cli("run", str(path), "--format", "json")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        result.pop("wall_s")
        runs.append(result)
    assert runs[0] == runs[1]


def test_a_bad_recovery_time_is_one_line(cli, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(EXAMPLE.replace("width = 8\n", 'width = 8\nrecovery = "soon"\n', 1))
    proc = cli("run", str(path))
    assert proc.returncode == 2 and "recovery" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
