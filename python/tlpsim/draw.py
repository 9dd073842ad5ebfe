"""Topology pictures (``tlpsim draw``): a scenario's root complexes, socket links, switches
and endpoints as a Graphviz graph, each link labelled with its generation and width; with a
run's results, links coloured by utilisation and each flow's bottleneck marked.

Building the graph (:func:`topology_graph`, from ``Scenario.topology_json`` and a run's
``to_dict()``) is apart from rendering it (:func:`render`, which needs Graphviz's ``dot``
program), so the graph can be built and checked without either a run or ``dot``."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from tlpsim._core import ConfigError

__all__ = [
    "FORMATS",
    "KIND_STYLES",
    "Placement",
    "bottleneck_places",
    "check_dot",
    "link_utilisation",
    "picture_format",
    "render",
    "topology_graph",
    "utilisation_colour",
]

#: Picture formats by file extension: what ``dot -T`` makes of the graph (``dot``: the
#: graph's own source, which needs no Graphviz program).
FORMATS = {".svg": "svg", ".png": "png", ".dot": "dot"}

#: How each node kind is drawn: (Graphviz shape, fill colour, the word under its name).
KIND_STYLES: dict[str, tuple[str, str, str]] = {
    "root_complex": ("box3d", "#bbdefb", "root complex"),
    "switch": ("box", "#c8e6c9", "switch"),
    "ntb": ("hexagon", "#b2dfdb", "NTB"),
    "gpu": ("box", "#e1bee7", "GPU"),
    "nvme": ("cylinder", "#ffe0b2", "NVMe drive"),
    "storage": ("cylinder", "#ffccbc", "storage"),
    "nic": ("box", "#f8bbd0", "NIC"),
    "dma": ("box", "#d7ccc8", "DMA endpoint"),
    "memory": ("box", "#eeeeee", "memory endpoint"),
}

#: Kinds that route TLPs on (ranked by depth); every other kind is an endpoint, drawn in the
#: bottom row of its root complex's hierarchy.
_FABRIC = ("root_complex", "switch", "ntb")

#: Utilisation colours: the first band whose floor a link's busier direction reaches.
UTILISATION_SCALE = ((0.9, "#d32f2f", "90 % or more"), (0.5, "#f39c12", "50 to 90 %"), (0.0, "#9e9e9e", "under 50 %"))

#: Colour of links without a run, of the bottleneck marks and of the socket links.
_PLAIN, _MARK, _SOCKET = "#455a64", "#c62828", "#1a237e"

#: Text font: sans serif wherever the picture is read (Graphviz measures it with its own).
_FONT = "Helvetica,Arial,sans-serif"

#: Flow names listed on one line of a bottleneck mark.
_NAMES_PER_LINE = 3


def picture_format(path: Path) -> str:
    """The picture format ``path``'s extension asks for; ConfigError naming the allowed
    ones otherwise."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        allowed = ", ".join(FORMATS)
        what = f"extension {path.suffix}" if path.suffix else "no extension"
        raise ConfigError(f"{path}: cannot draw a picture with {what}; allowed: {allowed} (e.g. -o topology.svg)")
    return fmt


def check_dot() -> None:
    """Refuses, in one line, to go on without Graphviz's ``dot`` program on PATH."""
    if shutil.which("dot") is None:
        raise ConfigError(
            "Graphviz's `dot` is not installed; install it with `apt-get install graphviz` (or your OS's package), "
            "or write -o FILE.dot to get the graph's source"
        )


def utilisation_colour(busy: float) -> str:
    """The colour of a link direction busy ``busy`` of the time (see UTILISATION_SCALE)."""
    return next(colour for floor, colour, _ in UTILISATION_SCALE if busy >= floor)


def link_utilisation(links: list[Mapping[str, Any]]) -> dict[str, tuple[float, str]]:
    """Per link name, its busier direction's utilisation and that direction (``up`` or
    ``down``; the first listed of equals)."""
    busiest: dict[str, tuple[float, str]] = {}
    for row in links:
        busy = row.get("utilization") or 0.0
        if row["name"] not in busiest or busy > busiest[row["name"]][0]:
            busiest[row["name"]] = (busy, row["direction"])
    return busiest


class Placement:
    """Where each flow's bottleneck goes in the picture: on a link (``links``), a socket
    link (``sockets``) or a node (``nodes``), each a name to the flows it limits, or, where
    no element of the picture is it, a line in the legend (``elsewhere``). A flow limited by
    its own offered rate is listed on its requester (``own_rate``)."""

    def __init__(self) -> None:
        self.links: dict[str, list[str]] = {}
        self.sockets: dict[str, list[str]] = {}
        self.nodes: dict[str, list[str]] = {}
        self.own_rate: dict[str, list[str]] = {}
        self.elsewhere: list[str] = []


def _prefixed(resource: str, names: list[str]) -> str | None:
    """The longest of ``names`` that ``resource`` is, or starts with followed by a space."""
    hits = [n for n in names if resource == n or resource.startswith(n + " ")]
    return max(hits, key=len) if hits else None


def _socket_of(resource: str, sockets: list[Mapping[str, Any]]) -> str | None:
    """The name of the socket link one of whose directions ``resource`` is (the core names
    them ``"rc0->rc1 socket link"``), if any."""
    for socket in sockets:
        a, b = socket["between"]
        if resource in (f"{a}->{b} socket link", f"{b}->{a} socket link"):
            return socket["name"]
    return None


def bottleneck_places(topology: Mapping[str, Any], flows: list[Mapping[str, Any]]) -> Placement:
    """Places each flow's bottleneck verdict (``flows[].bottleneck``: kind, resource) on the
    element of ``topology`` it names: a link direction (``rc-sw0 down``), a transmitter's
    credits, replay buffer or sequence numbers (``sw -> gpu0 PH credits``: the link between
    the two), a socket link, or a node's resource (``rc memory``, ``nvme0 media (read)``);
    a requester-side limit (read requests, I/Os in flight, engines, completion timeout)
    goes on the flow's source, its own offered rate on its source as ``own_rate``."""
    place = Placement()
    links = {link["name"] for link in topology["links"]}
    ends = {frozenset((link["up"], link["down"])): link["name"] for link in topology["links"]}
    sockets = list(topology.get("socket_links") or [])
    nodes = [n["name"] for n in topology["nodes"]]
    sources = {w["name"]: w["source"] for w in topology["workloads"]}
    for flow in flows:
        name, verdict = flow["name"], flow.get("bottleneck") or {}
        kind, resource = verdict.get("kind", ""), verdict.get("resource") or ""
        source = flow.get("source") or sources.get(name)
        link, _, direction = resource.rpartition(" ")
        tx, arrow, rest = resource.partition(" -> ")
        rx = _prefixed(rest, nodes) if arrow else None
        if kind == "offered_load":
            if source in nodes:
                place.own_rate.setdefault(source, []).append(name)
            else:
                place.elsewhere.append(f"{name}: its own offered rate")
        elif link in links and direction in ("up", "down"):
            place.links.setdefault(link, []).append(name)
        elif rx is not None and frozenset((tx, rx)) in ends:
            place.links.setdefault(ends[frozenset((tx, rx))], []).append(name)
        elif (socket := _socket_of(resource, sockets)) is not None:
            place.sockets.setdefault(socket, []).append(name)
        elif (node := _prefixed(resource, nodes)) is not None:
            place.nodes.setdefault(node, []).append(name)
        elif kind in ("requests", "iodepth", "completion_timeout", "dma_engines") and source in nodes:
            place.nodes.setdefault(source, []).append(name)
        else:
            place.elsewhere.append(f"{name}: {kind.replace('_', ' ')} ({resource or 'none'})")
    return place


def _names(flows: list[str]) -> str:
    """Flow names, escaped for an HTML label, a few to a line."""
    lines = [flows[i : i + _NAMES_PER_LINE] for i in range(0, len(flows), _NAMES_PER_LINE)]
    return "<BR/>".join(escape(", ".join(line)) for line in lines)


def _mark(flows: list[str], what: str = "bottleneck of") -> str:
    """The bold red line that marks an element as the bottleneck of ``flows``."""
    return f'<BR/><FONT COLOR="{_MARK}" POINT-SIZE="10"><B>&#9650; {what}: {_names(flows)}</B></FONT>'


def _depths(topology: Mapping[str, Any]) -> dict[str, int]:
    """Each node's depth below the top of its tree (a node no link has below another: 0)."""
    below: dict[str, list[str]] = {}
    for link in topology["links"]:
        below.setdefault(link["up"], []).append(link["down"])
    tops = {n["name"] for n in topology["nodes"]} - {link["down"] for link in topology["links"]}
    depth = dict.fromkeys(tops, 0)
    todo = [n["name"] for n in topology["nodes"] if n["name"] in tops]
    while todo:
        node = todo.pop()
        for child in below.get(node, []):
            if child not in depth:
                depth[child] = depth[node] + 1
                todo.append(child)
    return depth


def _style(kind: str) -> tuple[str, str, str]:
    """How a node of ``kind`` is drawn (a kind this version does not know: a white box)."""
    return KIND_STYLES.get(kind, ("box", "#ffffff", kind.replace("_", " ")))


def _swatch(colour: str, words: str) -> str:
    """A legend row: a box of ``colour`` (none: an empty cell) and ``words`` (HTML) beside it."""
    box = f' BGCOLOR="{colour}"' if colour else ""
    return (
        f'<TR><TD{box} WIDTH="22" HEIGHT="12" FIXEDSIZE="TRUE" BORDER="{int(bool(colour))}" COLOR="#78909c"></TD>'
        f'<TD ALIGN="LEFT">{words}</TD></TR>'
    )


def _legend(kinds: list[str], result: Mapping[str, Any] | None, place: Placement | None) -> str:
    """The legend's HTML label: a swatch per node kind drawn, the utilisation scale and
    each flow's verdict (with a run)."""
    heading = '<TR><TD COLSPAN="2" ALIGN="LEFT"><B>{}</B></TD></TR>'.format
    rows = [heading("legend")]
    for kind in kinds:
        _, fill, word = _style(kind)
        rows.append(_swatch(fill, escape(word)))
    rows.append(_swatch("", "links: generation and width"))
    if result is not None and place is not None:
        rows.append(_swatch("", "utilisation of the busier direction:"))
        rows += [_swatch(colour, words) for _, colour, words in UTILISATION_SCALE]
        rows.append(_swatch("", f'<FONT COLOR="{_MARK}"><B>&#9650; bottleneck of</B></FONT>: what limits those flows'))
        rows.append(heading("flows"))
        for flow in result.get("flows", []):
            b = flow.get("bottleneck") or {}
            rate = flow.get("throughput_gbytes_per_s")
            rate_text = f"{rate:.2f} GB/s" if isinstance(rate, (int, float)) else "no rate"
            verdict = f"{b.get('kind', '').replace('_', ' ')} ({b.get('resource') or 'none'})"
            rows.append(_swatch("", f"{escape(flow['name'])}: {rate_text}, limited by {escape(verdict)}"))
        rows += [_swatch("", f"not on the picture: {escape(text)}") for text in place.elsewhere]
    return f'<<TABLE BORDER="1" COLOR="#90a4ae" CELLBORDER="0" CELLSPACING="2" CELLPADDING="2">{"".join(rows)}</TABLE>>'


def topology_graph(topology: Mapping[str, Any], result: Mapping[str, Any] | None = None, title: str = "") -> Any:
    """The picture of ``topology`` (``Scenario.topology_json`` parsed: ``nodes``, ``links``,
    ``workloads``, optional ``socket_links``) as a ``graphviz.Digraph``: one cluster per
    root complex, fabric nodes ranked by depth, endpoints in the bottom row of their
    cluster, each link labelled ``GenG xW``. With ``result`` (a run's ``to_dict()``) each
    link also shows its busier direction's utilisation, coloured, and each flow's
    bottleneck carries a red mark listing the flows it limits."""
    import graphviz

    graph = graphviz.Digraph(name="topology")
    graph.attr(rankdir="TB", nodesep="0.2", ranksep="0.6", fontname=_FONT, newrank="true", compound="true")
    if title:
        graph.attr(label=f"<<B>{escape(title)}</B>>", labelloc="t", fontsize="18")
    graph.attr("node", fontname=_FONT, fontsize="12", style="filled", penwidth="1.2", color="#37474f")
    graph.attr("edge", fontname=_FONT, fontsize="10", dir="none", color=_PLAIN)
    busy = link_utilisation(result.get("links", [])) if result is not None else {}
    place = bottleneck_places(topology, result.get("flows", [])) if result is not None else None
    resources = result.get("resources", []) if result is not None else []

    nodes = {n["name"]: n for n in topology["nodes"]}
    # Graphviz ids apart from the names: a name may hold a colon (a port in DOT) or be "legend".
    ids = {name: f"n{i}" for i, name in enumerate(nodes)}
    depth = _depths(topology)
    # Endpoints go one row below the deepest switch or NTB of their root complex's cluster.
    bottom: dict[str, int] = {}
    for n in nodes.values():
        if n["kind"] in _FABRIC:
            bottom[n["root_complex"]] = max(bottom.get(n["root_complex"], 0), depth.get(n["name"], 0) + 1)

    clusters: dict[str, list[dict]] = {}
    for n in nodes.values():
        clusters.setdefault(n["root_complex"], []).append(n)
    for i, (rc, members) in enumerate(clusters.items()):
        with graph.subgraph(name=f"cluster_{i}") as cluster:
            cluster.attr(label=f"<under {escape(rc)}>", labeljust="l", fontsize="10", fontcolor="#607d8b",
                         style="rounded,filled", fillcolor="#fafafa", color="#b0bec5")  # fmt: skip
            for n in members:
                shape, fill, word = _style(n["kind"])
                label = f'<B>{escape(n["name"])}</B><BR/><FONT POINT-SIZE="9" COLOR="#455a64">{escape(word)}</FONT>'
                border = {}
                if place is not None and n["name"] in place.nodes:
                    label += _mark(place.nodes[n["name"]])
                    border = {"color": _MARK, "penwidth": "3"}
                if place is not None and n["name"] in place.own_rate:
                    label += _mark(place.own_rate[n["name"]], "own rate limits")
                tooltip = f"{n['name']}: {word}"
                own = [r for r in resources if _prefixed(r.get("name", ""), [n["name"]]) and r.get("busy")]
                if own:
                    tooltip += "; " + ", ".join(f"{r['name']} {r['busy'] * 100:.0f} % busy" for r in own)
                cluster.node(ids[n["name"]], label=f"<{label}>", shape=shape, fillcolor=fill, tooltip=tooltip, **border)

    for link in topology["links"]:
        up, down = link["up"], link["down"]
        if up not in nodes or down not in nodes:
            continue
        text = f"Gen{link['gen']} x{link['width']}"
        attrs = {"penwidth": f"{1 + link['width'] / 8:.2f}", "tooltip": f"{link['name']}: {text}"}
        if link["name"] in busy:
            share, direction = busy[link["name"]]
            colour = utilisation_colour(share)
            text += f'<BR/><FONT COLOR="{colour}"><B>{share * 100:.0f}&#160;%</B></FONT>&#160;{direction}'
            attrs.update(color=colour, tooltip=f"{link['name']}: {share * 100:.1f} % busy {direction}")
        label = text
        if place is not None and link["name"] in place.links:
            label += _mark(place.links[link["name"]])
            attrs.update(
                style="bold", tooltip=attrs["tooltip"] + "; bottleneck of " + ", ".join(place.links[link["name"]])
            )
        if nodes[down]["kind"] not in _FABRIC:
            attrs["minlen"] = str(max(1, bottom.get(nodes[down]["root_complex"], 1) - depth.get(up, 0)))
        graph.edge(ids[up], ids[down], label=f"<{label}>", **attrs)

    for socket in topology.get("socket_links") or []:
        a, b = socket["between"]
        if a not in nodes or b not in nodes:
            continue
        text = f"<B>{escape(socket['name'])}</B><BR/>{socket['bandwidth'] / 1e9:.1f} GB/s"
        attrs = {"color": _SOCKET, "tooltip": f"socket link {socket['name']}"}
        used = [r for r in resources if _socket_of(r.get("name", ""), [socket])]
        if used:
            share = max(r.get("busy") or 0.0 for r in used)
            colour = utilisation_colour(share)
            text += f' &#183; <FONT COLOR="{colour}"><B>{share * 100:.0f}&#160;%</B></FONT>'
            attrs["color"] = colour
        if place is not None and socket["name"] in place.sockets:
            text += _mark(place.sockets[socket["name"]])
        graph.edge(ids[a], ids[b], label=f"<{text}>", penwidth="6", style="bold", constraint="false", **attrs)

    kinds = list(dict.fromkeys(n["kind"] for n in nodes.values()))
    graph.node("legend", label=_legend(kinds, result, place), shape="plaintext", style="", fontsize="10")
    # The legend under the deepest row: an invisible edge from a node of the bottom row.
    deepest = max(nodes, key=lambda name: depth.get(name, 0), default=None)
    if deepest is not None:
        graph.edge(ids[deepest], "legend", style="invis")
    return graph


def render(graph: Any, fmt: str) -> bytes:
    """The picture of ``graph`` in ``fmt`` (``svg``, ``png``: laid out by ``dot``; ``dot``:
    the graph's source); one line naming the problem where ``dot`` is missing or fails."""
    if fmt == "dot":
        return graph.source.encode("utf-8")
    import graphviz

    check_dot()
    try:
        return graph.pipe(format=fmt, engine="dot")
    except graphviz.ExecutableNotFound:
        raise ConfigError(
            "Graphviz's `dot` is not installed; install it with `apt-get install graphviz` (or your OS's package)"
        ) from None
    except graphviz.CalledProcessError as e:
        why = (e.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise ConfigError(f"Graphviz's `dot` could not draw the picture: {why[-1] if why else e}") from None
