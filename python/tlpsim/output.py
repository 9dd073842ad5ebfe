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


class Format(str, enum.Enum):
    """Output formats every command takes."""

    table = "table"
    json = "json"
    csv = "csv"


#: A table column: (field, heading, format spec). Format ``%`` shows a fraction as percent.
Column = tuple[str, str, str]


def _cell(value, spec: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec == "%" and isinstance(value, (int, float)):
        return f"{100 * value:.2f} %"
    if spec and isinstance(value, (int, float)):
        return format(value, spec)
    return str(value)


def console() -> Console:
    """A console that never truncates a table when output goes to a file or pipe."""
    c = Console()
    return c if c.is_terminal else Console(width=max(c.width, 200))


def emit_json(data) -> None:
    """Prints any JSON-ready value, indented."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def emit(rows: Sequence[dict], fmt: Format, columns: Sequence[Column], title: str | None = None) -> None:
    """Prints ``rows``; ``columns`` chooses and formats the table view's columns.

    JSON and CSV carry every field of every row, names and values unchanged (CSV: the
    columns of all rows in order of first appearance, blank where a row lacks one). Table
    headings that start with a space are left-aligned text columns.
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
        table = Table(title=title, header_style="bold")
        for _, heading, _ in columns:
            table.add_column(heading.strip(), justify="left" if heading.startswith(" ") else "right")
        for row in rows:
            table.add_row(*(_cell(row[f], spec) for f, _, spec in columns))
        console().print(table)
