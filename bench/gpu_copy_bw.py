"""Host-device copy bandwidth of one NVIDIA GPU, measured as nvbandwidth does (copy engines,
pinned host memory, CUDA events), through the CUDA driver API with ctypes: no CUDA toolkit or
Python package needed, only the driver's libcuda.so.

Usage: python bench/gpu_copy_bw.py [--device N] [--out FILE.json]

Prints and writes host_to_device, device_to_host and both at once (each direction's GB/s),
for a few copy sizes. Run it under `numactl --membind=K` to place the pinned buffer on NUMA
node K (the other socket's memory on a two-socket host).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys

MiB = 1 << 20


class Cuda:
    """The few driver calls a copy benchmark needs; every call is checked."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name: str, *args) -> None:
        rc = getattr(self.lib, name)(*args)
        if rc != 0:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(msg))
            raise RuntimeError(f"{name} failed: {rc} {msg.value!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--out")
    ap.add_argument("--sizes", default="64KiB,1MiB,16MiB,256MiB")
    ap.add_argument("--repeat", type=int, default=8)
    a = ap.parse_args()
    sizes = [int(s[:-3]) * (1024 if s.endswith("KiB") else MiB) for s in a.sizes.split(",")]
    cu = Cuda()
    cu("cuInit", 0)
    dev = ctypes.c_int()
    cu("cuDeviceGet", ctypes.byref(dev), a.device)
    name = ctypes.create_string_buffer(256)
    cu("cuDeviceGetName", name, 256, dev)
    ctx = ctypes.c_void_p()
    cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    cu("cuCtxSetCurrent", ctx)
    big = max(sizes)
    d_a, d_b = ctypes.c_uint64(), ctypes.c_uint64()
    cu("cuMemAlloc_v2", ctypes.byref(d_a), ctypes.c_size_t(big))
    cu("cuMemAlloc_v2", ctypes.byref(d_b), ctypes.c_size_t(big))
    h_a, h_b = ctypes.c_void_p(), ctypes.c_void_p()
    cu("cuMemHostAlloc", ctypes.byref(h_a), ctypes.c_size_t(big), 0)
    cu("cuMemHostAlloc", ctypes.byref(h_b), ctypes.c_size_t(big), 0)
    ctypes.memset(h_a, 1, big)
    ctypes.memset(h_b, 2, big)
    s1, s2 = ctypes.c_void_p(), ctypes.c_void_p()
    cu("cuStreamCreate", ctypes.byref(s1), 1)
    cu("cuStreamCreate", ctypes.byref(s2), 1)

    def event():
        e = ctypes.c_void_p()
        cu("cuEventCreate", ctypes.byref(e), 0)
        return e

    def elapsed(e0, e1) -> float:
        ms = ctypes.c_float()
        cu("cuEventElapsedTime", ctypes.byref(ms), e0, e1)
        return ms.value / 1e3

    h2d = lambda n, s: cu("cuMemcpyHtoDAsync_v2", d_a, h_a, ctypes.c_size_t(n), s)  # noqa: E731
    d2h = lambda n, s: cu("cuMemcpyDtoHAsync_v2", h_b, d_b, ctypes.c_size_t(n), s)  # noqa: E731

    def one(n: int, copy) -> float:
        copy(n, s1)  # warm
        cu("cuStreamSynchronize", s1)
        e0, e1 = event(), event()
        cu("cuEventRecord", e0, s1)
        for _ in range(a.repeat):
            copy(n, s1)
        cu("cuEventRecord", e1, s1)
        cu("cuEventSynchronize", e1)
        return n * a.repeat / elapsed(e0, e1) / 1e9

    def both(n: int) -> tuple[float, float]:
        e0, e1, e2 = event(), event(), event()
        cu("cuEventRecord", e0, s1)
        cu("cuStreamWaitEvent", s2, e0, 0)
        for _ in range(a.repeat):
            h2d(n, s1)
            d2h(n, s2)
        cu("cuEventRecord", e1, s1)
        cu("cuEventRecord", e2, s2)
        cu("cuEventSynchronize", e1)
        cu("cuEventSynchronize", e2)
        return n * a.repeat / elapsed(e0, e1) / 1e9, n * a.repeat / elapsed(e0, e2) / 1e9

    rows = []
    for n in sizes:
        b = both(n)
        rows.append(
            {
                "size": n,
                "host_to_device": one(n, h2d),
                "device_to_host": one(n, d2h),
                "bidirectional_h2d": b[0],
                "bidirectional_d2h": b[1],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    out = {"device": name.value.decode(), "unit": "GB/s", "repeat": a.repeat, "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
