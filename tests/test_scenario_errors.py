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
