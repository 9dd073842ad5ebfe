#!/usr/bin/env bash
# Facts and host-device copy bandwidth of the GPU machine, into $OUT (default ./gpu-out):
# lspci -vvv, nvidia-smi topo -m and -q, the NUMA layout, and bench/gpu_copy_bw.py from each
# NUMA node's memory (numactl --membind) when the host has numactl and several nodes.
set -u
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
(lspci -vvv > "$OUT/lspci-vvv.txt" 2>&1; lspci -tv > "$OUT/lspci-tv.txt" 2>&1) || true
nvidia-smi topo -m > "$OUT/nvidia-smi-topo.txt" 2>&1 || true
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1 || true
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
lscpu > "$OUT/lscpu.txt" 2>&1 || true
(numactl -H || ls /sys/devices/system/node) > "$OUT/numa.txt" 2>&1 || true
cat /proc/cmdline > "$OUT/cmdline.txt" 2>&1 || true
which nvbandwidth > "$OUT/tools.txt" 2>&1; python3 --version >> "$OUT/tools.txt" 2>&1
timeout 120 python3 bench/gpu_copy_bw.py --out "$OUT/copy-default.json" > "$OUT/copy-default.log" 2>&1
if command -v numactl >/dev/null; then
  for n in $(ls -d /sys/devices/system/node/node* | sed 's/.*node//'); do
    timeout 90 numactl --membind="$n" --cpunodebind="$n" python3 bench/gpu_copy_bw.py \
      --out "$OUT/copy-node$n.json" > "$OUT/copy-node$n.log" 2>&1
  done
fi
ls -la "$OUT"; cat "$OUT"/copy-*.log; cat "$OUT/nvidia-smi-topo.txt"; cat "$OUT/numa.txt" | head -20
