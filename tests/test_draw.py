"""`tlpsim draw`: a topology picture that names every node and link, coloured by a run's
utilisation with each flow's bottleneck marked, that renders in a browser; and one line for
each mistake."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

import tlpsim
from tlpsim.draw import bottleneck_places, link_utilisation, render, topology_graph, utilisation_colour

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "scenarios" / "gen5-8gpu-server.toml"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DOT = shutil.which("dot")

# Tests that need a tool CI installs fail rather than skip when CI is set.
needs_dot = pytest.mark.skipif(DOT is None and not os.environ.get("CI"), reason="no Graphviz dot here")
needs_chromium = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="no headless chromium")


def svg_texts(path: Path) -> list[str]:
    """The text of every <text> element of an SVG file."""
    return ["".join(t.itertext()) for t in ET.parse(path).iter("{http://www.w3.org/2000/svg}text")]


def topology(scenario: Path) -> dict:
    return json.loads(tlpsim.load_scenario(scenario).topology_json)


def draw(tmp_path: Path, scenario: Path, *args: str, name: str = "picture.svg", env=None):
    out = tmp_path / name
    proc = subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", "draw", str(scenario), "-o", str(out), *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    return proc, out


@needs_dot
@pytest.mark.parametrize("scenario", ["gen5-8gpu-server", "ntb-four-endpoints-to-root", "nvme-gen4-array"])
def test_the_svg_names_every_node_and_labels_every_link(tmp_path, scenario):
    assert DOT, "CI needs Graphviz: .ci/run installs it"
    path = ROOT / "scenarios" / f"{scenario}.toml"
    proc, out = draw(tmp_path, path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"wrote {out}"
    texts = svg_texts(out)
    topo = topology(path)
    for node in topo["nodes"]:
        assert node["name"] in texts, node["name"]
    for link in topo["links"]:
        assert f"Gen{link['gen']} x{link['width']}" in texts
    labels = [t for t in texts if t.startswith("Gen")]
    assert len(labels) == len(topo["links"])
    # No run, no utilisation or bottleneck.
    assert not any("%" in t or "bottleneck" in t for t in texts)


@needs_dot
def test_run_colours_links_by_utilisation_and_marks_each_bottleneck(tmp_path):
    proc, out = draw(tmp_path, SERVER, "--run")
    assert proc.returncode == 0, proc.stderr
    texts = svg_texts(out)
    # Each link's busier direction: rc-sw0 carries the host's writes down at 100 %.
    assert texts.count("100\u00a0%") >= 3
    assert "\u25b2 bottleneck of: p2p-across-rc, h2d-gpu3" in texts
    assert "\u25b2 bottleneck of: h2d-gpu7" in texts
    assert "\u25b2 bottleneck of: p2p-in-switch" in texts
    svg = out.read_text()
    # Saturated links are drawn red, idle ones grey.
    assert f'stroke="{utilisation_colour(1.0)}"' in svg and f'stroke="{utilisation_colour(0.0)}"' in svg
    tooltips = [e.get("{http://www.w3.org/1999/xlink}title") for e in ET.parse(out).iter()]
    assert "rc-sw0: 100.0 % busy down; bottleneck of p2p-across-rc, h2d-gpu3" in tooltips


def test_each_verdict_goes_on_the_element_it_names():
    result = tlpsim.run(tlpsim.load_scenario(SERVER)).to_dict()
    place = bottleneck_places(topology(SERVER), result["flows"])
    assert place.links == {"sw1-gpu5": ["p2p-in-switch"], "rc-sw0": ["p2p-across-rc", "h2d-gpu3"],
                           "rc-sw1": ["h2d-gpu7"]}  # fmt: skip
    assert not (place.nodes or place.own_rate or place.sockets or place.elsewhere)
    busiest = link_utilisation(result["links"])
    assert busiest["rc-sw0"] == (1.0, "down")
    assert busiest["sw0-gpu0"][0] < 0.01


def two_sockets() -> dict:
    """A hand-made two-socket topology, with the socket link the loader will report."""
    return {
        "nodes": [
            {"name": "cpu0", "kind": "root_complex", "root_complex": "cpu0"},
            {"name": "cpu1", "kind": "root_complex", "root_complex": "cpu1"},
            {"name": "sw0", "kind": "switch", "root_complex": "cpu0"},
            {"name": "gpu0", "kind": "gpu", "root_complex": "cpu0"},
            {"name": "nvme0", "kind": "nvme", "root_complex": "cpu0"},
            {"name": "nic1", "kind": "nic", "root_complex": "cpu1"},
        ],
        "links": [
            {"name": "cpu0-sw0", "up": "cpu0", "down": "sw0", "gen": 5, "width": 16},
            {"name": "sw0-gpu0", "up": "sw0", "down": "gpu0", "gen": 5, "width": 16},
            {"name": "sw0-nvme0", "up": "sw0", "down": "nvme0", "gen": 4, "width": 4},
            {"name": "cpu1-nic1", "up": "cpu1", "down": "nic1", "gen": 5, "width": 8},
        ],
        "workloads": [
            {"name": "cross", "source": "gpu0", "target": "cpu1"},
            {"name": "local", "source": "nic1", "target": "cpu1"},
            {"name": "stalled", "source": "gpu0", "target": "cpu0"},
            {"name": "disk", "source": "nvme0", "target": "cpu0"},
            {"name": "window", "source": "gpu0", "target": "cpu0"},
            {"name": "odd", "source": "gpu0", "target": "cpu0"},
        ],
        "socket_links": [{"name": "upi0", "between": ["cpu0", "cpu1"], "bandwidth": 62.4e9, "latency_ns": 120}],
    }


def verdicts() -> list[dict]:
    """One flow per way a verdict names its bottleneck."""
    named = {
        "cross": ("socket_link", "cpu0->cpu1 socket link"),
        "local": ("offered_load", "cpu1-nic1 up"),
        "stalled": ("credits", "sw0 -> gpu0 PH credits"),
        "disk": ("media", "nvme0 media (read)"),
        "window": ("requests", "window read requests"),
        "odd": ("host_bridge", "hb7 host bridge"),
    }
    return [
        {"name": n, "throughput_gbytes_per_s": 1.0, "bottleneck": {"kind": k, "resource": r, "busy": 0.95}}
        for n, (k, r) in named.items()
    ]


def test_verdicts_of_every_shape_find_their_place():
    place = bottleneck_places(two_sockets(), verdicts())
    assert place.sockets == {"upi0": ["cross"]}
    assert place.own_rate == {"nic1": ["local"]}
    assert place.links == {"sw0-gpu0": ["stalled"]}
    assert place.nodes == {"nvme0": ["disk"], "gpu0": ["window"]}
    assert place.elsewhere == ["odd: host bridge (hb7 host bridge)"]


def test_socket_links_are_bold_edges_between_root_complexes_with_their_bandwidth():
    topo = two_sockets()
    result = {
        "flows": verdicts(),
        "links": [],
        "resources": [{"name": "cpu1->cpu0 socket link", "kind": "socket_link", "busy": 0.97}],
    }
    source = topology_graph(topo, result, "two sockets").source
    socket = next(line for line in source.splitlines() if "upi0" in line and "--" not in line and "->" in line)
    # cpu0 and cpu1 are the first two nodes: ids n0 and n1.
    assert socket.strip().startswith("n0 -> n1")
    assert "62.4 GB/s" in socket and "penwidth=6" in socket and "constraint=false" in socket
    assert f'color="{utilisation_colour(0.97)}"' in socket and "bottleneck of: cross" in socket
    # Without the key (one-socket files), no such edge.
    del topo["socket_links"]
    assert "GB/s</" not in topology_graph(topo).source


@needs_dot
def test_a_two_socket_picture_renders_with_its_socket_link(tmp_path):
    out = tmp_path / "two.svg"
    out.write_bytes(render(topology_graph(two_sockets(), {"flows": verdicts(), "links": []}), "svg"))
    texts = svg_texts(out)
    assert {"cpu0", "cpu1", "sw0", "gpu0", "nvme0", "nic1", "upi0", "62.4 GB/s"} <= set(texts)
    assert "not on the picture: odd: host bridge (hb7 host bridge)" in texts


@needs_dot
@needs_chromium
def test_the_picture_renders_in_a_headless_browser(tmp_path):
    assert DOT and CHROMIUM, "CI needs Graphviz and chromium: .ci/run installs them"
    proc, out = draw(tmp_path, SERVER, "--run")
    assert proc.returncode == 0, proc.stderr
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--screenshot={shot}",
         "--window-size=2000,950", out.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    pixels = matplotlib.image.imread(shot)[..., :3]
    ink = (pixels.min(axis=2) < 0.9).mean()
    colours = len(np.unique((pixels * 15).round().reshape(-1, 3), axis=0))
    assert ink > 0.03, f"only {ink:.1%} of the picture is not white"
    assert colours > 10
    # The saturated links are drawn, in red.
    red = np.array([int(utilisation_colour(1.0)[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    assert (np.abs(pixels - red).max(axis=2) < 0.05).sum() > 500


@needs_dot
def test_png_and_dot_by_extension_and_set_changes_the_picture(tmp_path):
    proc, png = draw(tmp_path, SERVER, "--set", "link.rc-sw0.width=8", name="p.png")
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    proc, dot = draw(tmp_path, SERVER, "--set", "link.rc-sw0.width=8", name="p.dot")
    assert proc.returncode == 0, proc.stderr
    assert dot.read_text().startswith("digraph topology {") and "Gen5 x8" in dot.read_text()


def test_missing_dot_is_one_line_and_dot_source_still_works(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    proc, out = draw(tmp_path, SERVER, env=env)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "Graphviz's `dot` is not installed; install it with `apt-get install graphviz`" in proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []
    proc, out = draw(tmp_path, SERVER, env=env, name="graph.dot")
    assert proc.returncode == 0, proc.stderr
    assert "gpu7" in out.read_text()


def test_a_bad_extension_or_output_is_one_line_before_any_work(tmp_path):
    proc, out = draw(tmp_path, SERVER, name="picture.jpg")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "cannot draw a picture with extension .jpg; allowed: .svg, .png, .dot" in proc.stderr
    assert not out.exists()
    proc, _ = draw(tmp_path / "nowhere", SERVER)
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    (tmp_path / "picture.svg").write_text("keep")
    proc, out = draw(tmp_path, SERVER)
    assert proc.returncode == 2 and "exists: add --force" in proc.stderr
    assert out.read_text() == "keep"
    # A bad --set is the same line `tlpsim run` gives, and nothing is written.
    proc, out = draw(tmp_path, SERVER, "--set", "pcie.nope=1", name="other.svg")
    assert proc.returncode == 2 and proc.stderr.startswith("tlpsim: error: ") and proc.stderr.count("\n") == 1
    assert not out.exists()


def test_help_ends_with_examples(cli):
    proc = cli("draw", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "tlpsim draw scenarios/gen5-8gpu-server.toml -o server.svg" in proc.stdout[proc.stdout.index("Examples:") :]


@needs_dot
def test_a_real_two_socket_run_marks_its_socket_link(tmp_path):
    """The socket link as the core names it: its direction's use and the copy it limits."""
    from test_sockets import BASE, P2P_WRITE

    scenario = tmp_path / "two.toml"
    scenario.write_text(BASE.format(bw="20GB/s") + P2P_WRITE)
    proc, out = draw(tmp_path, scenario, "--run", name="two.svg")
    assert proc.returncode == 0, proc.stderr
    texts = " ".join(svg_texts(out))
    assert "rc0-rc1" in texts and "20.0 GB/s" in texts and "100" in texts
    assert "bottleneck of: copy" in texts
