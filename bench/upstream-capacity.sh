#!/usr/bin/env bash
# Proves that the mock upstream (`svcbench upstream`) is not the bottleneck of the `upstream` scenario:
# svcbench's own open-model load at rates far above the seed's (which topped out near 500 req/s), with a
# 1 s delay, so that up to RATE requests wait inside the mock at once. Upstream pinned to CPU 1, load to CPU 0.
# Usage: bench/upstream-capacity.sh [RATES...]   (default: 2000 5000 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/svcbench
[ -x $bin ] || cargo build --release -p svcbench
rates=("${@:-2000 5000 10000}")
port=19100
taskset -c 1 $bin upstream --listen 127.0.0.1:$port --delay-ms 1000 --threads 1 2>/dev/null &
up=$!
trap 'kill $up 2>/dev/null; wait $up 2>/dev/null' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/_svcbench/calls" && break; sleep 0.05; done
printf "%8s %10s %10s %9s %9s %9s %9s %12s\n" rate ok errors p50_ms p99_ms max_ms late upstream_cpu_s
for r in ${rates[@]}; do
  cpu0=$(awk '{print $14+$15}' /proc/$up/stat)
  json=$($bin load "http://127.0.0.1:$port/" --rate "$r" --max-connections 20000 -d 10s --timeout 30s --cpus 0 --json)
  cpu1=$(awk '{print $14+$15}' /proc/$up/stat)
  python3 - "$r" "$json" "$cpu0" "$cpu1" <<'PY'
import json, sys, os
r, j, c0, c1 = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
l, o = j["latency"], j.get("open") or {}
print(f"{r:>8} {j['requests_ok']:>10} {j['requests_err']:>10} {l['p50']:>9.1f} {l['p99']:>9.1f} {l['max']:>9.1f} {o.get('sent_late',0):>9} {(c1-c0)/os.sysconf('SC_CLK_TCK'):>12.2f}")
PY
done
