"""Closed-form link bandwidth: thin typed wrappers over the Rust core."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

from tlpsim import _core
from tlpsim._core import ConfigError
from tlpsim._records import CoreRecord

#: Field order of a link row, as DESIGN.md names them (extras after).
LINK_FIELDS = (
    "gen", "width", "mps", "payload_bytes", "raw_gbps", "encoded_gbps", "tlp_wire_bytes",
    "write_gbps", "read_gbps", "efficiency", "dllp_fraction", "skp_fraction", "flit",
    "write_tlps", "read_limit", "write_gbytes_per_s", "read_gbytes_per_s",
)  # fmt: skip


@dataclass(frozen=True)
class LinkBandwidth(CoreRecord):
    """Per-direction closed-form figures of one link (Gb/s unless named otherwise).

    Fields the core adds beyond these are kept in ``extra`` (see :meth:`from_dict`)."""

    gen: int
    width: int
    mps: int
    payload_bytes: int
    raw_gbps: float
    encoded_gbps: float
    tlp_wire_bytes: int
    write_gbps: float
    read_gbps: float
    efficiency: float
    dllp_fraction: float
    skp_fraction: float
    flit: bool
    write_tlps: int
    read_limit: str
    #: ``write_gbps`` and ``read_gbps`` in GB/s (10^9 bytes per second).
    write_gbytes_per_s: float
    read_gbytes_per_s: float
    #: Fields of the core's result this version does not name, kept as they came.
    extra: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class MessageBandwidth(CoreRecord):
    """Payload rate of messages plus protocol headers cut into equal TLPs (fields the core
    adds beyond these in ``extra``)."""

    gen: int
    width: int
    message_bytes: int
    header_bytes: int
    payload_bytes: int
    tlps_per_message: int
    max_gbps: float
    message_gbps: float
    reduction: float
    #: Fields of the core's result this version does not name, kept as they came.
    extra: dict[str, Any] = field(default_factory=dict, hash=False)


def _whole(name: str, value: Any, optional: bool = False) -> int | None:
    """A whole number argument, or ConfigError naming the argument."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    return max(min(int(value), 2**63 - 1), -(2**63))


def _size(name: str, value: Any, optional: bool = False) -> int | None:
    """A byte-count argument: a whole number, or a size as scenario files and the CLI write it
    (``"4KiB"`` = 4096, ``"4KB"`` = 4000, ``"512B"``); ConfigError naming the argument else."""
    if isinstance(value, str):
        return _core.parse_bytes(name, value)
    return _whole(name, value, optional)


def _args(gen, width, mps, payload, mrrs, rcb, addressing, ecrc, dllp, skp, flit, completion):
    if isinstance(dllp, bool) or not isinstance(dllp, (str, numbers.Real)):
        raise ConfigError(f"dllp must be 'spec', 'none' or a number of bytes, got {dllp!r}")
    if flit is not None and not isinstance(flit, bool):
        raise ConfigError(f"flit must be True, False or None, got {flit!r}")
    return dict(
        gen=_whole("gen", gen),
        width=_whole("width", width),
        mps=_size("mps", mps),
        payload=_size("payload", payload, optional=True),
        mrrs=_size("mrrs", mrrs),
        rcb=_size("rcb", rcb),
        addressing=_whole("addressing", addressing),
        ecrc=bool(ecrc),
        dllp=str(dllp),
        skp=bool(skp),
        flit=flit,
        completion=str(completion),
    )


def link_bandwidth(
    gen: int,
    width: int,
    mps: int | str = 128,
    payload: int | str | None = None,
    mrrs: int | str = 512,
    rcb: int | str = 64,
    addressing: int = 64,
    ecrc: bool = False,
    dllp: str | float = "spec",
    skp: bool = True,
    flit: bool | None = None,
    completion: str = "rcb",
) -> LinkBandwidth:
    """Closed-form bandwidth of one PCIe link, per direction, both directions busy.

    ``payload=None`` means MPS-sized transfers. The sizes (``mps``, ``payload``, ``mrrs``,
    ``rcb``) are whole bytes or strings as the CLI and scenario files write them
    (``payload="4KiB"``). ``dllp`` is ``"spec"`` (one Ack and one
    UpdateFC per interval of the spec's timer tables), ``"none"``, or DLLP bytes charged
    per TLP. ``flit=None`` uses flit mode exactly where the generation requires it (Gen6+).
    ``completion`` is ``"rcb"`` (one CplD per RCB block) or ``"mps"`` (MPS-sized CplDs).
    Raises :class:`ConfigError` naming the allowed values on bad input.
    """
    args = _args(gen, width, mps, payload, mrrs, rcb, addressing, ecrc, dllp, skp, flit, completion)
    return LinkBandwidth.from_dict(_core.link_bandwidth(args))


def message_bandwidth(
    message: int | str,
    header: int | str,
    gen: int,
    width: int,
    payload: int | str = 64,
    mps: int | str = 128,
    mrrs: int | str = 512,
    rcb: int | str = 64,
    addressing: int = 64,
    ecrc: bool = False,
    dllp: str | float = "spec",
    skp: bool = True,
    flit: bool | None = None,
    completion: str = "rcb",
) -> MessageBandwidth:
    """Payload rate of ``message`` bytes plus ``header`` bytes sent as TLPs of ``payload`` bytes.

    The last, partly filled TLP of each message is sent whole (x86 write combining
    flushes whole 64-byte lines), so a message costs ``ceil((message + header) / payload)``
    TLPs. Sizes take strings as in :func:`link_bandwidth` (``message="16KiB"``).
    """
    args = _args(gen, width, mps, payload, mrrs, rcb, addressing, ecrc, dllp, skp, flit, completion)
    result = _core.message_bandwidth(args, _size("message", message), _size("header", header))
    return MessageBandwidth.from_dict(result)
