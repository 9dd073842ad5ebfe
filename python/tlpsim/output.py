"""Rows to the terminal: a rich table, JSON or CSV (the CLI's --format)."""

from __future__ import annotations

import csv
import enum
import io
import json
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from tlpsim._records import finite


class Format(str, enum.Enum):
    """Output formats every command takes."""

    table = "table"
    json = "json"
    csv = "csv"


class Unit(str, enum.Enum):
    """Throughput units the tables take (``--unit``): Gb/s, GB/s (10^9 bytes/s), MB/s (10^6 bytes/s)."""

    gbps = "Gb/s"
    gbytes = "GB/s"
    mbytes = "MB/s"


#: Per unit: its amount in one Gb/s, and the format spec of its table cells.
_UNIT_OF_GBPS = {Unit.gbps: (1.0, ".3f"), Unit.gbytes: (0.125, ".3f"), Unit.mbytes: (125.0, ",.1f")}


def unit_spec(unit: Unit, signed: bool = False) -> str:
    """The format spec a rate in ``unit`` shows with (``signed``: with its sign, for a change)."""
    spec = _UNIT_OF_GBPS[unit][1]
    return "+" + spec if signed else spec


def in_unit(rows: Sequence[dict], fields: Sequence[str], unit: Unit) -> list[dict]:
    """Copies of ``rows`` with each of ``fields``, a rate in Gb/s, in ``unit`` (None stays None)."""
    factor = _UNIT_OF_GBPS[unit][0]
    return [{**r, **{f: r[f] * factor for f in fields if r.get(f) is not None}} for r in rows]


#: A table column: (field, heading, format spec). Format ``%`` shows a fraction as percent,
#: ``pt`` a difference of two fractions as signed percentage points.
Column = tuple[str, str, str]


def cell_text(value, spec: str) -> str:
    """A value as a table cell shows it: ``spec`` is a format spec, ``%`` or ``pt``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec == "%" and isinstance(value, (int, float)):
        return f"{100 * value:.2f} %"
    if spec == "pt" and isinstance(value, (int, float)):
        return f"{100 * value:+.2f} pt"
    if spec and isinstance(value, (int, float)):
        return format(value, spec)
    return str(value)


def console() -> Console:
    """A console that never truncates a table when output goes to a file or pipe."""
    c = Console()
    return c if c.is_terminal else Console(width=max(c.width, 200))


def emit_json(data) -> None:
    """Prints any JSON-ready value, indented; a NaN or infinite float is printed as null
    (``allow_nan=False`` guards that none gets through)."""
    json.dump(finite(data), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def emit(rows: Sequence[dict], fmt: Format, columns: Sequence[Column], title: str | None = None, keys: int = 1) -> None:
    """Prints ``rows``; ``columns`` chooses and formats the table view's columns.

    JSON and CSV carry every field of every row, names and values unchanged (CSV: the
    columns of all rows in order of first appearance, blank where a row lacks one). Table
    headings that start with a space are left-aligned text columns. The first ``keys``
    columns identify a row (a link and its direction): a narrow terminal never drops them.
    """
    if fmt is Format.json:
        emit_json(list(rows))
    elif fmt is Format.csv:
        if not rows:
            return
        buf = io.StringIO()
        fields: dict[str, None] = {}
        for row in rows:
            fields.update(dict.fromkeys(row))
        writer = csv.DictWriter(buf, fieldnames=list(fields), restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buf.getvalue())
    else:
        out = console()
        cells = [[cell_text(row[f], spec) for f, _, spec in columns] for row in rows]
        _print_table(out, title, columns, cells, keys)


#: What separates the values of the columns that identify a row when they share one column.
KEY_JOIN = " / "


def _print_table(
    out: Console, title: str | None, columns: Sequence[Column], cells: list[list[str]], keys: int = 1
) -> None:
    """Prints ``cells`` under ``columns`` in ``out.width`` characters (see ``fit_columns``);
    the first ``keys`` columns identify a row and are never left out.

    When columns would be left out but the table turned on its side (one line per column,
    one column per row) fits whole, that is printed instead. Else, when the identifying
    columns joined into one (``system / table / ...``, at least ``KEY_MIN_WIDTH`` wide) leave
    room for more of the others, that is printed. A dim line names the columns left out.
    """
    keep, widths = fit_columns(columns, cells, out.width, keys)
    if len(keep) < len(columns) and cells:
        side = [("", " " + columns[0][1].strip(), "")] + [("", row[0], "") for row in cells]
        side_cells = [[columns[i][1].strip()] + [row[i] for row in cells] for i in range(1, len(columns))]
        side_keep, side_widths = fit_columns(side, side_cells, out.width)
        if len(side_keep) == len(side):
            columns, cells, keep, widths = side, side_cells, side_keep, side_widths
        elif keys > 1:
            joined = [("", " " + KEY_JOIN.join(c[1].strip() for c in columns[:keys]), ""), *columns[keys:]]
            joined_cells = [[KEY_JOIN.join(row[:keys]), *row[keys:]] for row in cells]
            joined_keep, joined_widths = fit_columns(joined, joined_cells, out.width, 1, KEY_MIN_WIDTH)
            if len(joined_keep) - 1 > len(keep) - keys:
                columns, cells, keep, widths = joined, joined_cells, joined_keep, joined_widths
    table = Table(title=title, header_style="bold")
    for i in keep:
        heading = columns[i][1]
        text = heading.startswith(" ")
        table.add_column(heading.strip(), justify="left" if text else "right", width=widths[i], overflow="fold")
    for row in cells:
        table.add_row(*(row[i] for i in keep))
    out.print(table)
    dropped = [columns[i][1].strip() for i in range(len(columns)) if i not in keep]
    if dropped:
        out.print(
            f"not shown at {out.width} columns: {', '.join(dropped)} (a wider terminal, or --format csv or json, "
            "shows every column)",
            style="dim", highlight=False, markup=False,
        )  # fmt: skip


#: The narrowest a text column is squeezed to before columns are dropped (it wraps to fit).
TEXT_MIN_WIDTH = 8

#: The narrowest the identifying columns joined into one are squeezed to (they wrap to fit).
KEY_MIN_WIDTH = 20

#: Characters a table spends per column besides its content (padding each side, one rule).
COLUMN_FRAME = 3


def fit_columns(
    columns: Sequence[Column],
    cells: Sequence[Sequence[str]],
    width: int,
    keys: int = 1,
    key_width: int = TEXT_MIN_WIDTH,
) -> tuple[list[int], list[int]]:
    """The columns that fit ``width`` characters and each one's content width.

    A number is never cut or wrapped: a numeric column is as wide as its widest value. Text
    columns wrap, down to ``TEXT_MIN_WIDTH`` (the first ``keys`` down to ``key_width``);
    headings wrap at spaces. When even that is too wide, columns are dropped: text columns
    from the right, then numbers from the right; the first ``keys`` columns, which identify
    the row, stay.
    """
    n = len(columns)
    keys = max(1, min(keys, n))
    text = [columns[i][1].startswith(" ") for i in range(n)]
    widest = [max([len(row[i]) for row in cells] + [1]) for i in range(n)]
    heading_word = [max(len(w) for w in (columns[i][1].split() or [""])) for i in range(n)]
    natural = [max(widest[i], len(columns[i][1].strip()) if text[i] else widest[i]) for i in range(n)]
    least = [
        min(natural[i], key_width if i < keys else TEXT_MIN_WIDTH) if text[i]
        else max(widest[i], min(heading_word[i], 6))
        for i in range(n)
    ]  # fmt: skip
    keep = list(range(n))
    # Text columns go first, from the right, then numbers from the right.
    order = [i for i in reversed(range(keys, n)) if text[i]] + [i for i in reversed(range(keys, n)) if not text[i]]
    while order and 1 + sum(least[i] + COLUMN_FRAME for i in keep) > width:
        keep.remove(order.pop(0))
    widths = list(least)
    # The identifying columns stay even when they alone are too wide: never less than nothing to spare.
    spare = max(width - 1 - sum(widths[i] + COLUMN_FRAME for i in keep), 0)
    # Spare room goes first to numeric headings (a whole word per line), then evenly to text.
    for i in keep:
        if not text[i] and spare > 0:
            grow = min(spare, max(heading_word[i] - widths[i], 0))
            widths[i] += grow
            spare -= grow
    short = [i for i in keep if text[i] and widths[i] < natural[i]]
    while spare > 0 and short:
        i = min(short, key=lambda j: widths[j])
        widths[i] += 1
        spare -= 1
        if widths[i] >= natural[i]:
            short.remove(i)
    # What is left keeps headings on one line.
    for i in keep:
        grow = min(spare, max(len(columns[i][1].strip()) - widths[i], 0))
        widths[i] += grow
        spare -= grow
    return keep, widths
