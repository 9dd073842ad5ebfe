"""What this build's scenario loader accepts, read from its JSON Schema: the keys of a
``[[root_complex]]`` and of a ``kind = "dma"`` ``[[endpoint]]``, and the words of a DMA
workload's ``cache``. The pipeline leaves out a protocol key the loader does not know yet
(and says so), so that it runs on a core without the host memory model too."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tlpsim.simulate import schema

__all__ = ["LoaderKeys", "loader_keys"]


@dataclass(frozen=True)
class LoaderKeys:
    """Keys and words the scenario loader knows."""

    root_complex: frozenset[str]
    endpoint: frozenset[str]
    cache: frozenset[str]

    def accepts(self, where: str, key: str) -> bool:
        """Whether ``key`` loads in ``where``: ``"host"`` (the root complex) or ``"device"``
        (the DMA endpoint; ``write_tlp_payload`` goes on the workload and always loads)."""
        if where == "host":
            return key in self.root_complex
        if where == "device":
            return key == "write_tlp_payload" or key in self.endpoint
        raise ValueError(f"where {where!r} is not allowed; allowed: host, device")


def _properties(node: dict[str, Any]) -> frozenset[str]:
    return frozenset(node.get("properties", {}))


@functools.cache
def loader_keys() -> LoaderKeys:
    """The keys and cache words of this build's loader (read once per process)."""
    defs = schema().get("$defs", {})
    rc = _properties(defs.get("RootComplexSection", {}))
    dma = next(
        (
            _properties(v)
            for v in defs.get("EndpointSection", {}).get("oneOf", [])
            if v.get("properties", {}).get("kind", {}).get("const") == "dma"
        ),
        frozenset(),
    )
    cache = frozenset(defs.get("CacheWord", {}).get("enum", []))
    if not (rc and dma and cache):
        raise RuntimeError("the scenario schema has no root complex, DMA endpoint or cache words where expected")
    return LoaderKeys(root_complex=rc, endpoint=dma, cache=cache)
