"""Forward progress from the CLI: a starved flow is named on stderr and in the result, and
completion timeouts are a flow field and a column when a requester gave up a read."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARVED = ROOT / "crates" / "tlpsim" / "tests" / "scenarios" / "starved-scratchpad-read.toml"


def test_a_starved_read_is_named_with_what_it_waits_for_and_the_run_still_reports(cli):
    # Before: exit 0, the read flow moved 0 bytes, and its verdict blamed the PH credits
    # its neighbour's writes waited for; nothing said it never completed a request.
    proc = cli("run", str(STARVED), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    spad = next(f for f in result["flows"] if f["name"] == "spad")
    assert (spad["bytes"], spad["starved"], spad["starved_on"]) == (0, True, "rc shared outbound queue")
    assert spad["bottleneck"]["kind"] == "starved"
    assert [s["flow"] for s in result["starved"]] == ["spad"]
    assert result["starved"][0]["until_us"] is None
    warnings = [line for line in proc.stderr.splitlines() if "starved" in line]
    assert warnings == [
        "tlpsim: warning: flow spad starved: it completed nothing from 0.000 us to the end (4,000.000 us): "
        "its MRd waits in rc's shared outbound queue: posted writes, which may pass it, keep going first"
    ]
    table = cli("run", str(STARVED))
    assert table.returncode == 0
    assert "spad: limited by starved (rc shared outbound queue)" in " ".join(table.stdout.split())
    assert "completion timeouts" not in table.stdout


def test_completion_timeouts_are_counted_shown_and_checked_against_the_spec(cli):
    proc = cli("run", str(STARVED), "--set", "root_complex.rc.completion_timeout=1ms", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    flows = {f["name"]: f for f in json.loads(proc.stdout)["flows"]}
    assert (flows["spad"]["completion_timeouts"], flows["stream"]["completion_timeouts"]) == (4, 0)
    table = cli("run", str(STARVED), "--set", "root_complex.rc.completion_timeout=1ms")
    assert "completion timeouts" in " ".join(table.stdout.split())
    bad = cli("run", str(STARVED), "--set", "root_complex.rc.completion_timeout=10us")
    assert bad.returncode == 2
    (line,) = bad.stderr.strip().splitlines()
    assert "completion_timeout" in line and "50us to 64s" in line and '"off"' in line
