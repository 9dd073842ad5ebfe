"""Scenario errors as a user sees them: one line with a reason, keys that reach any element,
and lists of words that come from the code, not from the help text."""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def test_a_control_character_in_a_comment_gets_a_reason(cli):
    proc = cli("run", str(DATA / "ctrl_in_comment.toml"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "the control character \\u{1b} at column 16 is not allowed" in proc.stderr
    assert "delete it" in proc.stderr


def test_a_file_ending_after_equals_gets_a_reason(cli):
    proc = cli("run", str(DATA / "truncated_value.toml"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.rstrip().endswith('the value after `=` is missing; write one, e.g. 8, "4KiB" or true')


def test_an_ambiguous_set_key_is_refused_listing_what_it_names(cli):
    proc = cli("run", str(DATA / "ambiguous_link_key.toml"), "--set", "link.a-b-c.width=1")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "link.a-b-c.width=1: the key is ambiguous: it names link[a,b-c].width and link[a-b,c].width" in proc.stderr


def test_a_link_named_by_its_ends_is_the_one_changed():
    import tlpsim

    path = DATA / "ambiguous_link_key.toml"
    base = {f["name"]: f["throughput_gbps"] for f in tlpsim.run(tlpsim.load_scenario(path)).flows}
    narrow = tlpsim.load_scenario(path, values={"link[a-b,c].width": 1})
    after = {f["name"]: f["throughput_gbps"] for f in tlpsim.run(narrow).flows}
    # w2 runs over a-b -> c, w1 over a -> b-c: only w2 slows.
    assert after["w2"] < base["w2"] / 2 and after["w1"] == base["w1"]
    swept = tlpsim.sweep(path, {"link[a,b-c].width": [1, 4]}, jobs=1).rows
    w1 = [r["throughput_gbps"] for r in swept if r["flow"] == "w1"]
    w2 = [r["throughput_gbps"] for r in swept if r["flow"] == "w2"]
    assert w1[0] < w1[1] / 2 and w2[0] == w2[1]


def test_an_error_after_a_set_names_the_key_not_a_rewritten_line(cli):
    proc = cli("run", str(DATA / "ambiguous_link_key.toml"), "--set", "pcie.gen=x")
    assert proc.returncode == 2
    assert "pcie.gen=x: [pcie]: invalid type" in proc.stderr and "line " not in proc.stderr


def test_a_misspelt_set_name_gets_the_closest(cli):
    proc = cli("run", str(DATA / "ambiguous_link_key.toml"), "--set", "workload.w3.outstanding=2")
    assert proc.returncode == 2
    assert proc.stderr.rstrip().endswith('no [[workload]] named "w3"; the scenario has w1, w2; did you mean "w1"?')


def test_validate_help_lists_every_system_the_code_has(cli, monkeypatch):
    from tlpsim import _core
    from tlpsim.validation import systems

    monkeypatch.setenv("COLUMNS", "400")
    proc = cli("validate", "--help")
    assert proc.returncode == 0
    assert systems() == _core.systems() and {"modern", "pciebench"} <= set(systems())
    assert f"One system: {', '.join(systems())}." in proc.stdout


def test_the_bracket_keys_are_in_the_help_and_the_readme(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    readme = (DATA.parent.parent / "README.md").read_text()
    for command in ("run", "sweep"):
        out = cli(command, "--help").stdout
        assert "link[UP,DOWN].KEY" in out and "SECTION[NAME].KEY" in out, command
    assert "`link[UP,DOWN].KEY`" in readme and "`SECTION[NAME].KEY`" in readme
