"""Two runs side by side (``tlpsim compare A.toml B.toml``): throughput per flow, utilisation
per link direction and the bottleneck verdicts of both, matched by name, with the changes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tlpsim.simulate import RunResult, Scenario, run

__all__ = ["Comparison", "compare", "compare_results"]

#: Where a flow or link is found: in both runs, or in one only.
BOTH, A_ONLY, B_ONLY = "both", "A only", "B only"


def _verdict(flow: dict[str, Any] | None) -> str | None:
    """A flow's bottleneck in a few words: ``link (rc-sw1 down)``."""
    if flow is None:
        return None
    b = flow["bottleneck"]
    return f"{b['kind'].replace('_', ' ')} ({b['resource'] or 'none'})"


def _change(a: float | None, b: float | None) -> tuple[float | None, float | None]:
    """(b - a, (b - a) / a): None where a side is missing, the fraction None where a is 0."""
    if a is None or b is None:
        return None, None
    return b - a, (b - a) / a if a else None


def _where(a: Any, b: Any) -> str:
    return BOTH if a is not None and b is not None else A_ONLY if a is not None else B_ONLY


def _matched(a: list[dict], b: list[dict], key) -> list[tuple[dict | None, dict | None]]:
    """Rows of two runs paired by ``key``: A's order first, then those only B has."""
    by_b = {key(r): r for r in b}
    seen = {key(r) for r in a}
    return [(r, by_b.get(key(r))) for r in a] + [(None, r) for r in b if key(r) not in seen]


@dataclass(frozen=True)
class Comparison:
    """Two runs, A and B, side by side. ``flows``: per flow name, throughput in both (Gb/s),
    the change (``delta_gbps``, and ``change`` as a fraction of A) and both bottleneck
    verdicts; ``links``: per link direction, utilisation and payload rate in both, with the
    change. ``in`` says ``both``, ``A only`` or ``B only``; a side's values are None where
    its run lacks the row."""

    a: str
    b: str
    flows: list[dict[str, Any]]
    links: list[dict[str, Any]]
    a_audit_passed: bool
    b_audit_passed: bool

    def to_dict(self) -> dict[str, Any]:
        """The comparison as plain JSON-ready data."""
        return {
            "a": self.a,
            "b": self.b,
            "flows": [dict(f) for f in self.flows],
            "links": [dict(link) for link in self.links],
            "audit_passed": {"a": self.a_audit_passed, "b": self.b_audit_passed},
        }


def compare_results(a: RunResult, b: RunResult, a_name: str = "A", b_name: str = "B") -> Comparison:
    """Compares two run results, matching flows by name and links by name and direction."""
    flows = []
    for fa, fb in _matched(a.flows, b.flows, lambda f: f["name"]):
        ga = fa["throughput_gbps"] if fa else None
        gb = fb["throughput_gbps"] if fb else None
        delta, change = _change(ga, gb)
        flows.append({
            "name": (fa or fb)["name"], "in": _where(fa, fb), "a_gbps": ga, "b_gbps": gb,
            "delta_gbps": delta, "change": change, "a_bottleneck": _verdict(fa), "b_bottleneck": _verdict(fb),
        })  # fmt: skip
    links = []
    for la, lb in _matched(a.links, b.links, lambda r: (r["name"], r["direction"])):
        ua = la["utilization"] if la else None
        ub = lb["utilization"] if lb else None
        pa = la["payload_gbps"] if la else None
        pb = lb["payload_gbps"] if lb else None
        links.append({
            "name": (la or lb)["name"], "direction": (la or lb)["direction"], "in": _where(la, lb),
            "a_utilization": ua, "b_utilization": ub, "delta_utilization": _change(ua, ub)[0],
            "a_payload_gbps": pa, "b_payload_gbps": pb, "delta_payload_gbps": _change(pa, pb)[0],
        })  # fmt: skip
    return Comparison(a_name, b_name, flows, links, bool(a.audit.get("passed")), bool(b.audit.get("passed")))


def compare(
    a: Scenario | str | os.PathLike[str], b: Scenario | str | os.PathLike[str], a_name: str = "A", b_name: str = "B"
) -> Comparison:
    """Runs two scenarios (loaded, paths or TOML text) and compares their results (see
    :func:`compare_results`)."""
    return compare_results(run(a), run(b), a_name, b_name)
