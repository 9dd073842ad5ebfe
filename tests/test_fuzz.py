"""A mangled-scenario fuzz: 5,000 seeded mutations of the shipped scenario files (lines
deleted, repeated, swapped or cut off, values replaced by wrong types, huge or negative
numbers, NaN, control characters, stray characters). Every case either loads (and then runs
3 us) or fails with the scenario error: one line, bounded length; never a panic, another
exception or a hang."""

import random
from pathlib import Path

import pytest

import tlpsim
from tlpsim import ConfigError, ScenarioError

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [p.read_text() for p in sorted((ROOT / "scenarios").glob("*.toml"))]
CASES = 5_000

#: Values a mutation puts in place of a key's value.
ODD_VALUES = [
    "-1", "0", "1e308", "nan", "inf", "-inf", '""', '"\\u001b[31m"', '"\\n"', '"é"', "[]", "{}", "true",
    '"1us"', '"4KiB"', "99999999999999999999", "-0.0", '"\\u0000"', "1.5", '"-5ns"', '"0ns"', '"1e400GB/s"',
    '"' + "x" * 5000 + '"', "[1, 2, 3]", '{ ph = -1 }', '"infinite"', "2048", "4097",
]  # fmt: skip


def mangle(rng: random.Random, text: str) -> str:
    """``text`` with one to three random mutations."""
    lines = text.splitlines()
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(7)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op in (3, 4) and "=" in lines[i]:
            lines[i] = lines[i].split("=")[0] + "= " + rng.choice(ODD_VALUES)
        elif op == 5:
            lines = lines[:i]
        else:
            p = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:p] + chr(rng.randrange(1, 0x250)) + lines[i][p:]
    return "\n".join(lines)


def check_one_line(error: Exception) -> None:
    message = str(error)
    assert "\n" not in message and "\x1b" not in message, repr(message[:200])
    assert len(message) <= 1_200, len(message)


@pytest.mark.parametrize("seed", range(5))
def test_mangled_scenarios_give_one_line_or_run(seed):
    rng = random.Random(seed)
    loaded = 0
    for _ in range(CASES // 5):
        text = mangle(rng, rng.choice(SOURCES))
        try:
            tlpsim.load_scenario(text)
            short = tlpsim.load_scenario(text, values={"simulation.warmup": "1us", "simulation.duration": "3us"})
        except (ScenarioError, ConfigError) as e:
            check_one_line(e)
            continue
        loaded += 1
        try:
            tlpsim.run(short)
        except tlpsim.SimulationError as e:
            check_one_line(e)
    assert loaded > 0


def test_a_comment_line_is_toml_text_not_a_path():
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario("\n# a comment only")
    assert "cannot read the file" not in str(e.value)


def test_mangled_files_give_the_cli_one_line_and_no_traceback(cli, tmp_path):
    rng = random.Random(99)
    for case in range(20):
        path = tmp_path / f"m{case}.toml"
        path.write_text(mangle(rng, rng.choice(SOURCES)))
        proc = cli("run", str(path), "--set", "simulation.duration=3us")
        assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr, proc.stderr[-500:]
        if proc.returncode != 0:
            assert proc.returncode in (2, 3), proc.returncode
            assert proc.stderr.count("\n") == 1, proc.stderr[-500:]
