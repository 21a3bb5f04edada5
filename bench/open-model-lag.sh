#!/usr/bin/env bash
# How late does the open model send? Runs the generator's open model against a tiny fast
# loopback server at 1000, 10000 and 50000 req/s and prints the schedule lag (actual send time
# minus intended send time) p50/p99/max of each run. A lag near or above a millisecond means the
# generator's own lateness is charged to the service in open-model latencies.
#
# The server (the loadgen crate's hello_server example) is pinned to CPU 1, the generator to
# CPU 0 with one thread. Every run is bounded (DURATION each, plus the build).
#
# Usage: bench/open-model-lag.sh           (from the repository root)
# Env:   DURATION=5s  RATES="1000 10000 50000"  PORT=18090  CONNECTIONS=256
#        CARGO_TARGET_DIR (where the examples are built; default target)
# Needs: cargo, taskset, python3, 2+ CPUs.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
RATES=${RATES:-"1000 10000 50000"}
PORT=${PORT:-18090}
CONNECTIONS=${CONNECTIONS:-256}
GEN_CPU=0
SERVER_CPU=1
TARGET_DIR=${CARGO_TARGET_DIR:-target}

for tool in cargo taskset python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing" >&2; exit 1; }
done
if [ "$(nproc)" -lt 2 ]; then
    echo "error: needs 2 CPUs (generator on CPU $GEN_CPU, server on CPU $SERVER_CPU)" >&2
    exit 1
fi

echo "building the load and hello_server examples ..." >&2
cargo build --release -q -p loadgen --example load --example hello_server
LOAD="$TARGET_DIR/release/examples/load"
SERVER="$TARGET_DIR/release/examples/hello_server"

work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

taskset -c "$SERVER_CPU" "$SERVER" "127.0.0.1:$PORT" &
server_pid=$!
for _ in $(seq 50); do
    python3 - "$PORT" <<'PY' && break
import socket, sys
s = socket.socket()
s.settimeout(0.2)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)
PY
    sleep 0.1
done

printf '%-8s %10s %10s %10s %10s %12s %10s\n' rate lag_p50 lag_p99 lag_max unsent achieved p99_lat
for rate in $RATES; do
    # timeout: a run can never outlive its duration by more than the drain and a margin.
    timeout 60 taskset -c "$GEN_CPU" "$LOAD" "http://127.0.0.1:$PORT/" --rate "$rate" -d "$DURATION" -t 1 \
        --max-connections "$CONNECTIONS" --timeout 5s --json >"$work/r.json" 2>/dev/null || true
    python3 - "$rate" "$work/r.json" <<'PY'
import json, sys
rate, path = sys.argv[1], sys.argv[2]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{rate:<8} run failed: {e}")
    sys.exit(0)
o = r.get("open") or {}
na = "n/a"
def ms(k):
    return f"{o[k]:.3f}ms" if k in o else na
ach = f"{o['achieved_rate']:.0f}/s" if "achieved_rate" in o else na
print(f"{rate:<8} {ms('lag_p50_ms'):>10} {ms('lag_p99_ms'):>10} {ms('max_lateness_ms'):>10} "
      f"{o.get('unsent', na):>10} {ach:>12} {r['latency']['p99']:>8.3f}ms")
PY
done
