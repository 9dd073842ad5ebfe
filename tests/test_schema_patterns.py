"""The scenario schema's quantity patterns: every value in the shipped scenario files matches
its key's pattern, a mistyped size, rate or time does not, and a pattern takes what tlpsim's
loader takes (its form; ranges and whole numbers stay tlpsim's to check).

The schema is checked with a small JSON Schema validator written here with ``re`` (no
``jsonschema`` package among the test dependencies): the keywords `tlpsim schema` uses."""

import json
import re
import tomllib
from pathlib import Path

import pytest

import tlpsim

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = tlpsim.schema()


def _is_toml(path: Path) -> bool:
    try:
        tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError:
        return False
    return True


#: The shipped scenario files: the gallery, the Rust tests' scenarios and the test data that is
#: TOML (two files are broken TOML on purpose). The validated systems' topologies are templates
#: whose values tlpsim puts in per cell.
FILES = sorted(
    [
        *ROOT.glob("scenarios/*.toml"),
        *ROOT.glob("crates/tlpsim/tests/scenarios/*.toml"),
        *filter(_is_toml, ROOT.glob("tests/data/*.toml")),
    ]
)

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def _resolve(node: dict) -> dict:
    ref = node.get("$ref")
    if ref is None:
        return node
    target = SCHEMA
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return _resolve(target)


def errors(value, node: dict, path: str = "") -> list[str]:
    """Where ``value`` breaks ``node``: one line per problem, the path first (empty: valid)."""
    node = _resolve(node)
    out: list[str] = []
    types = node.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            return [f"{path}: {value!r} is not {types}"]
    if "enum" in node and value not in node["enum"]:
        out.append(f"{path}: {value!r} is not one of {node['enum']}")
    if "const" in node and value != node["const"]:
        out.append(f"{path}: {value!r} is not {node['const']!r}")
    if isinstance(value, str) and "pattern" in node and not re.search(node["pattern"], value):
        out.append(f"{path}: {value!r} does not match {node['pattern']}")
    if _TYPES["number"](value):
        if "minimum" in node and value < node["minimum"]:
            out.append(f"{path}: {value!r} is below {node['minimum']}")
        if "maximum" in node and value > node["maximum"]:
            out.append(f"{path}: {value!r} is above {node['maximum']}")
    if isinstance(value, dict):
        props = node.get("properties", {})
        out += [f"{path}: {k} is required" for k in node.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                out += errors(v, props[k], f"{path}.{k}")
            elif node.get("additionalProperties") is False:
                out.append(f"{path}: unknown key {k}")
            elif isinstance(node.get("additionalProperties"), dict):
                out += errors(v, node["additionalProperties"], f"{path}.{k}")
    if isinstance(value, list) and "items" in node:
        for i, v in enumerate(value):
            out += errors(v, node["items"], f"{path}[{i}]")
    for sub in node.get("allOf", []):
        out += errors(value, sub, path)
    if "anyOf" in node:
        tries = [errors(value, sub, path) for sub in node["anyOf"]]
        if all(tries):
            out += min(tries, key=len)
    if "oneOf" in node:
        tries = [errors(value, sub, path) for sub in node["oneOf"]]
        passed = sum(not t for t in tries)
        if passed == 0:
            out += min(tries, key=len)
        elif passed > 1:
            out.append(f"{path}: {value!r} matches {passed} of oneOf")
    return out


def test_the_validator_sees_a_wrong_type_and_an_unknown_key():
    assert errors({"simulation": {"seed": "one"}}, SCHEMA)
    assert errors({"simulation": {"sead": 1}}, SCHEMA)
    assert errors({"simulation": {"duration": "10us", "seed": 1}}, SCHEMA) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_meets_the_schema(path):
    assert errors(tomllib.loads(path.read_text()), SCHEMA) == []


def test_the_shipped_files_hold_quantities_of_every_kind():
    text = "\n".join(p.read_text() for p in FILES)
    for example in ('"4KiB"', "GB/s", "Gb/s", '"150ns"', "GT/s", '"0x', "us"):
        assert example in text


#: A scenario to put one value into: its key below, the path the schema reports it at.
BASE = """
[simulation]
duration = "10us"
[[root_complex]]
name = "rc"
[[host_bridge]]
name = "hb"
bandwidth = "4GB/s"
[[switch]]
name = "sw"
[[endpoint]]
name = "dma"
kind = "dma"
[[link]]
between = ["rc", "sw"]
[[link]]
between = ["sw", "dma"]
[[workload]]
name = "reads"
kind = "dma"
endpoint = "dma"
direction = "read"
transfer_size = "4KiB"
"""


def with_value(section: str, key: str, value: str) -> dict:
    """The BASE scenario as a table, with ``key`` of the first ``section`` set to ``value``."""
    return tomllib.loads(_scenario(section, key, value))


def test_the_base_scenario_meets_the_schema():
    assert errors(tomllib.loads(BASE), SCHEMA) == []


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("host_bridge", "bandwidth", "4GB/z"),
        ("switch", "latency", "-5ns"),
        ("workload", "transfer_size", "4 KiBB"),
        ("simulation", "duration", "10 parsecs"),
        ("link", "rate", "8GT"),
    ],
)
def test_a_mistyped_quantity_is_refused_at_its_key(section, key, value):
    found = errors(with_value(section, key, value), SCHEMA)
    at = f".{section}[0]" if section != "simulation" else f".{section}"
    assert found == [f"{at}.{key}: {value!r} does not match {_pattern(section, key)}"]


def _table(node: dict) -> dict:
    """The table schema a key's schema leads to: through refs, arrays, `Option`'s anyOf and the
    first kind's of a tagged section."""
    node = _resolve(node)
    while "properties" not in node:
        node = _resolve(node["items"] if "items" in node else (node.get("anyOf") or node["oneOf"])[0])
    return node


def _pattern(*path: str) -> str:
    """The pattern of the key at ``path`` (sections, then the key)."""
    node = SCHEMA
    for p in path:
        node = _table(node)["properties"][p]
    node = _resolve(node)
    return node["pattern"] if "pattern" in node else _resolve(node["anyOf"][0])["pattern"]


def _loads(text: str) -> bool:
    try:
        tlpsim.load_scenario(text)
    except tlpsim.ScenarioError:
        return False
    return True


def _scenario(section: str, key: str, value: str) -> str:
    """BASE with ``key = value`` in the first ``[[section]]`` (or ``[section]``), in place of
    the key's line there if it has one."""
    lines = BASE.splitlines()
    head = lines.index(f"[[{section}]]" if f"[[{section}]]" in lines else f"[{section}]")
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    at = next((i for i in range(head + 1, end) if lines[i].startswith(f"{key} =")), None)
    line = f"{key} = {json.dumps(value)}"
    if at is None:
        lines.insert(head + 1, line)
    else:
        lines[at] = line
    return "\n".join(lines)


#: Values of each kind of quantity, right and wrong, and a key of BASE that takes that kind.
AGREE = {
    ("switch", "latency"): [
        "150ns",
        "1.5 ns",
        " 2us ",
        ".5us",
        "5.ns",
        "1e3ps",
        "1E-6s",
        "+5ns",
        "0s",
        "2µs",
        "5ms\t",
        "-5ns",
        "5",
        "ns",
        "5 parsecs",
        "1e3.5ns",
        "5e ns",
        "1_000ns",
        "5 n s",
        "5μs",
        "inf ns",
        "nan ns",
        "0x10ns",
        "5NS",
        "5 ns s",
        "",
    ],
    ("host_bridge", "bandwidth"): [
        "2.5GB/s",
        "400Gb/s",
        "400Gbps",
        "2.5 GB/s",
        "1e9B/s",
        "4MB/s",
        "4KB/s",
        "800Mb/s",
        "4GB/z",
        "4gb/s",
        "4GB/S",
        "4 GB / s",
        "4Mbps",
        "4kB/s",
        "-4GB/s",
        "4GiB/s",
        "4GT/s",
    ],
    ("link", "replay_buffer"): [
        "4KiB",
        "4 KiB",
        "4096",
        "4kB",
        "4KB",
        "4e3",
        "8e3B",
        "4.5KiB",
        "1MiB",
        "1MB",
        "+8KiB",
        "4KiBB",
        "4 KiBs",
        "4kiB",
        "4Kib",
        "-4KiB",
        "4_096",
        "4 096",
        "4K",
        "4 B B",
    ],
    ("link", "rate"): ["8GT/s", "2.5 GT/s", "8.0GT/s", "8e0GT/s", "8gt/s", "8GT", "8 GT/S", "GT/s"],
    ("root_complex", "completion_timeout"): ["50ms", " off ", "1s", "Off", "off1", "-1ms"],
}


@pytest.mark.parametrize(("where", "value"), [(w, v) for w, vs in AGREE.items() for v in vs])
def test_a_pattern_takes_what_the_loader_takes(where, value):
    section, key = where
    pattern = _pattern(section, key)
    assert bool(re.search(pattern, value)) == _loads(_scenario(section, key, value)), (value, pattern)


def test_an_address_pattern_takes_what_the_loader_takes():
    text = (ROOT / "scenarios" / "ntb-windows.toml").read_text()
    pattern = _pattern("ntb", "window", "base")
    good = ["0x9000_0000", "0X90000000", "2415919104", "2_415_919_104", "2304MiB", " 0x9000_0000 ",
            "_0x9000_0000_", "0x+9000_0000"]  # fmt: skip
    bad = ["0x9000 0000", "0xg", "0x", "2304_MiB", "-2304MiB", "2304 MiB B", "nine"]
    for value in good + bad:
        changed = text.replace('base = "0x9000_0000"', f'base = "{value}"', 1)
        assert bool(re.search(pattern, value)) == _loads(changed) == (value in good), value


#: Where a pattern and the loader part: the pattern checks a value's form, not its size.
KNOWN = [
    ("switch", "latency", "-0ns", False, True),
    ("link", "replay_buffer", "1.5B", True, False),
    ("link", "replay_buffer", "8GiB", True, False),
    ("host_bridge", "bandwidth", "0.5KB/s", True, False),
    ("link", "rate", "3GT/s", True, False),
]


@pytest.mark.parametrize(("section", "key", "value", "matches", "loads"), KNOWN)
def test_the_pattern_checks_the_form_and_tlpsim_the_value(section, key, value, matches, loads):
    assert bool(re.search(_pattern(section, key), value)) == matches
    assert _loads(_scenario(section, key, value)) == loads


def _defaults(node, path, out, seen):
    node = _resolve(node) if "$ref" not in node or node["$ref"] not in seen else {}
    if "$ref" in node:
        seen.add(node["$ref"])
    for k, v in node.get("properties", {}).items():
        if isinstance(v.get("default"), str):
            out.append((f"{path}.{k}", v["default"], v))
        _defaults(v, f"{path}.{k}", out, seen)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _defaults(node[key], path, out, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            _defaults(sub, path, out, seen)


def test_every_default_meets_its_own_schema():
    found: list = []
    _defaults(SCHEMA, "", found, set())
    assert len(found) >= 40
    for path, default, node in found:
        assert errors(default, node, path) == []
