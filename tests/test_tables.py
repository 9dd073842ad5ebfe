"""Tables on a narrow terminal: numbers are never cut; columns that do not fit are named."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlpsim.output import COLUMN_FRAME, cell_text, fit_columns
from tlpsim.validation import display_unit

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "scenarios" / "gen5-8gpu-server.toml"
ACS = ROOT / "scenarios" / "gen5-8gpu-acs.toml"
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def terminal_cli(columns: int, *args: str) -> str:
    """The CLI's stdout as a terminal of ``columns`` characters shows it (escapes removed)."""
    env = {**os.environ, "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": str(columns)}
    proc = subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return ANSI.sub("", proc.stdout)


@pytest.mark.parametrize("columns", [80, 60])
def test_run_table_keeps_every_number_whole(columns):
    shown = terminal_cli(columns, "run", str(GALLERY))
    assert "…" not in shown
    flows = json.loads(subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", "run", str(GALLERY), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout)["flows"]  # fmt: skip
    assert_whole(shown, flows, [
        ("bytes", "bytes", ","), ("throughput_gbps", "Gb/s", ".3f"), ("throughput_gbytes_per_s", "GB/s", ".3f"),
        ("latency_ns_mean", "first byte mean ns", ".1f"), ("latency_ns_p50", "p50 ns", ".0f"),
        ("latency_ns_p99", "p99 ns", ".0f"), ("requests", "requests", ","),
    ])  # fmt: skip
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert "not shown at" in shown


def cli_json(*args: str):
    """The CLI's JSON output for ``args`` (``--format json`` added)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", *args, "--format", "json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def left_out(shown: str) -> set[str]:
    """The column headings the "not shown at N columns" lines name (wrapped lines joined)."""
    flat = " ".join(shown.split())
    return {h.strip() for m in re.finditer(r"not shown at \d+ columns: (.*?) \(a wider", flat) for h in m[1].split(",")}


def assert_whole(shown: str, rows: list[dict], columns: list[tuple[str, str, str]]) -> None:
    """Every value of every column the table shows appears in ``shown`` as the table formats
    it, whole: no ellipsis, and a number never cut or wrapped."""
    assert "…" not in shown
    hidden = left_out(shown)
    checked = 0
    for field, heading, spec in columns:
        if heading in hidden:
            continue
        for row in rows:
            if isinstance(row.get(field), (int, float)) and not isinstance(row[field], bool):
                assert cell_text(row[field], spec) in shown, (field, row[field])
                checked += 1
    assert checked, "no number of the JSON output was checked"


LINK_COLUMNS = [
    ("payload_bytes", "payload B", ""), ("tlp_wire_bytes", "TLP wire B", ""), ("write_gbps", "write Gb/s", ".3f"),
    ("write_gbytes_per_s", "write GB/s", ".3f"), ("read_gbps", "read Gb/s", ".3f"),
    ("read_gbytes_per_s", "read GB/s", ".3f"), ("efficiency", "efficiency", "%"), ("dllp_fraction", "DLLP share", "%"),
]  # fmt: skip


@pytest.mark.parametrize("columns", [80, 60])
def test_link_table_keeps_every_number_whole(columns):
    args = ("link", "--gen", "5", "--width", "16", "--mps", "256")
    shown = terminal_cli(columns, *args)
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert_whole(shown, cli_json(*args), LINK_COLUMNS)


@pytest.mark.parametrize("columns", [80, 60])
def test_a_narrow_link_table_turns_on_its_side_and_drops_nothing(columns):
    args = ("link", "--gen", "5", "--width", "16", "--mps", "256", "--payload", "64,256,4096")
    shown = terminal_cli(columns, *args)
    assert "not shown at" not in shown
    for heading in ("write Gb/s", "read GB/s", "efficiency", "DLLP share"):
        assert heading in shown
    assert_whole(shown, cli_json(*args), LINK_COLUMNS)


VALIDATE_COLUMNS = [("published", "published", ".6g"), ("simulated", "simulated", ".6g"), ("error", "error", "+.2%")]


@pytest.mark.parametrize("columns", [80, 60])
def test_validate_table_keeps_every_number_whole(columns):
    shown = terminal_cli(columns, "validate", "--only", "modern")
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert_whole(shown, cli_json("validate", "--only", "modern"), VALIDATE_COLUMNS)


@pytest.mark.parametrize("columns", [80, 60])
def test_compare_tables_keep_every_number_whole(columns):
    shown = terminal_cli(columns, "compare", str(GALLERY), str(ACS))
    assert max(len(line) for line in shown.splitlines()) <= columns
    cmp = cli_json("compare", str(GALLERY), str(ACS))
    assert_whole(shown, cmp["flows"], [
        ("a_gbps", "A Gb/s", ".3f"), ("b_gbps", "B Gb/s", ".3f"), ("delta_gbps", "delta Gb/s", "+.3f"),
        ("change", "change", "+.2%"),
    ])  # fmt: skip
    busy = [r for r in cmp["links"] if max(r["a_utilization"] or 0, r["b_utilization"] or 0) >= 0.001]
    assert_whole(shown, busy, [
        ("a_utilization", "A utilization", "%"), ("b_utilization", "B utilization", "%"),
        ("a_payload_gbps", "A payload Gb/s", ".3f"), ("b_payload_gbps", "B payload Gb/s", ".3f"),
    ])  # fmt: skip


def test_a_wide_terminal_shows_every_column():
    shown = terminal_cli(200, "run", str(GALLERY))
    assert "not shown at" not in shown
    assert "requests" in shown


@given(
    st.lists(st.tuples(st.booleans(), st.text(alphabet="abc de", min_size=1, max_size=20)), min_size=1, max_size=12),
    st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=5),
    st.integers(min_value=20, max_value=200),
    st.integers(min_value=1, max_value=3),
)
def test_fitted_columns_fit_and_never_cut_a_number(spec, values, width, keys):
    columns = [("f", (" " if text else "") + heading, "") for text, heading in spec]
    cells = [[f"{v:,}" for _ in columns] for v in values]
    keep, widths = fit_columns(columns, cells, width, keys)
    assert set(range(min(keys, len(columns)))) <= set(keep)
    for i in keep:
        if not columns[i][1].startswith(" "):
            assert widths[i] >= max(len(row[i]) for row in cells)
    if len(keep) > keys:
        assert 1 + sum(widths[i] + COLUMN_FRAME for i in keep) <= width


def table_blocks(shown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every table in ``shown`` as (headings, lines): the headings with their wrapped lines
    joined, and each line of the body split into its cells (see ``rows_of``)."""
    blocks, lines = [], shown.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("┏"):
            i += 1
            continue
        head, body = [], []
        i += 1
        while not lines[i].startswith("┡"):
            head.append([c.strip() for c in lines[i].strip("┃").split("┃")])
            i += 1
        i += 1
        while not lines[i].startswith("└"):
            body.append([c.strip() for c in lines[i].strip("│").split("│")])
            i += 1
        headings = [" ".join(filter(None, (h[j] for h in head))) for j in range(len(head[0]))]
        blocks.append((headings, body))
    return blocks


def rows_of(headings: list[str], body: list[list[str]], anchor: str) -> list[dict[str, str]]:
    """The table's rows, each a heading -> text dict; a line with text under ``anchor`` (a
    numeric column, on a row's first line only) starts a row, the lines below continue it."""
    at = headings.index(anchor)
    rows: list[list[list[str]]] = []
    for line in body:
        if line[at] or not rows:
            rows.append([[] for _ in headings])
        for j, text in enumerate(line):
            if text:
                rows[-1][j].append(text)
    return [{h: " ".join(cell[j]) for j, h in enumerate(headings)} for cell in rows]


@pytest.mark.parametrize("columns", [80, 60])
def test_a_narrow_links_table_keeps_each_link_direction(columns):
    shown = terminal_cli(columns, "run", str(GALLERY))
    assert "dir" not in left_out(shown)
    links = [(h, b) for h, b in table_blocks(shown) if h[0] == "link"]
    assert links, shown
    headings, body = links[0]
    rows = rows_of(headings, body, "utilization")
    expected = {(r["name"], r["direction"]) for r in cli_json("run", str(GALLERY))["links"]}
    assert {(r["link"], r["dir"]) for r in rows} == expected


VALIDATE_KEYS = ("system", "table", "series", "column", "unit")


@pytest.mark.parametrize("columns", [80, 60])
def test_a_narrow_validate_table_keeps_what_identifies_each_row(columns):
    shown = terminal_cli(columns, "validate", "--only", "ntb")
    assert not set(VALIDATE_KEYS) & left_out(shown)
    assert max(len(line) for line in shown.splitlines()) <= columns
    headings, body = table_blocks(shown)[0]
    rows = rows_of(headings, body, "published")
    published = cli_json("validate", "--only", "ntb")
    assert len(rows) == len(published)
    # Every identifying field of every row is in the table, whole (joined into one column
    # or each in its own), wrapping aside.
    keys = [h for h in headings if h not in ("published", "simulated", "error", "role")]
    assert " ".join(keys).replace(" / ", " ").split() == list(VALIDATE_KEYS)

    def bare(text: str) -> str:  # wrapping drops spaces; the joined column adds " / "
        return "".join(text.split()).replace("/", "")

    for row, expected in zip(rows, published, strict=True):
        # The table spells each rate one way (validation.display_unit); JSON keeps the published one.
        expected = {**expected, "unit": display_unit(expected["unit"])}
        assert bare("".join(row[h] for h in keys)) == bare("".join(str(expected[k]) for k in VALIDATE_KEYS))
