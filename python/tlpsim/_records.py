"""Result records built from the core's dicts, tolerant of fields the core adds later."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, TypeVar

R = TypeVar("R", bound="CoreRecord")


class CoreRecord:
    """Mixin for a dataclass filled from a core dict.

    :meth:`from_dict` keeps the fields the dataclass names and puts any other key (a field
    a newer core adds) in the record's ``extra`` mapping, so that this front still reads a
    newer core's results; :meth:`to_dict` gives them back after the named fields. The
    dataclass declares ``extra: dict[str, Any] = field(default_factory=dict, hash=False)``
    as its last field.
    """

    extra: dict[str, Any]

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of ``data``: named fields as attributes, any other key in ``extra``."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The record as plain data: the named fields, then any field only the core knows."""
        out = dataclasses.asdict(self)
        out.update(out.pop("extra"))
        return out


def finite(data):
    """``data`` with every NaN or infinite float (at any depth of dicts, lists and tuples)
    as None: JSON has no NaN, and ``NaN`` in a file breaks every strict JSON reader."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data
