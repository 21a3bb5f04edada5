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
# Env:   DURATION=5s  RATES="1000 10000 50000"  PACINGS="timer spin"  PORT=18090  CONNECTIONS=256
#        CARGO_TARGET_DIR (where the examples are built; default target)
# Needs: cargo, taskset, python3, 2+ CPUs.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-5s}
RATES=${RATES:-"1000 10000 50000"}
PACINGS=${PACINGS:-"timer spin"}
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
cargo build --release -q -p loadgen --example load --example hello_server --example hiccups
LOAD="$TARGET_DIR/release/examples/load"
SERVER="$TARGET_DIR/release/examples/hello_server"
HICCUPS="$TARGET_DIR/release/examples/hiccups"

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

# late: sends that waited for a busy connection (the server's backpressure, not the generator).
# floor_p99: the lag p99 a perfect generator would have on CPU $GEN_CPU, from the CPU's own
# hiccups measured just before and just after the run (examples/hiccups.rs); a lag p99 at or
# under it is the machine's, not the generator's.
FLOOR_SECS=${DURATION%s}
printf '%-7s %-6s %9s %9s %10s %7s %7s %9s %10s %6s %6s %6s %15s %6s  %s\n' \
    rate pacing lag_p50 lag_p99 lag_max late unsent achieved p99_lat cpu spin runq floor_p99_b/a steal flags
for rate in $RATES; do
for pacing in $PACINGS; do
    timeout 60 taskset -c "$GEN_CPU" "$HICCUPS" "$FLOOR_SECS" >"$work/before.json" || true
    # timeout: a run can never outlive its duration by more than the drain and a margin.
    grep "^cpu$GEN_CPU " /proc/stat >"$work/stat_before"
    timeout 60 taskset -c "$GEN_CPU" "$LOAD" "http://127.0.0.1:$PORT/" --rate "$rate" -d "$DURATION" -t 1 --pacing "$pacing" \
        --max-connections "$CONNECTIONS" --timeout 5s --json >"$work/r.json" 2>"$work/err.txt" || true
    grep "^cpu$GEN_CPU " /proc/stat >"$work/stat_after"
    timeout 60 taskset -c "$GEN_CPU" "$HICCUPS" "$FLOOR_SECS" >"$work/after.json" || true
    python3 - "$rate $pacing" "$work/r.json" "$work/err.txt" "$work/before.json" "$work/after.json" \
        "$work/stat_before" "$work/stat_after" <<'PY'
import json, re, sys
rate, path, err, before, after, stat_before, stat_after = sys.argv[1:8]
# Steal: the share of the run the hypervisor ran something else on the generator's CPU (the
# 8th field of its /proc/stat line). Any share near 1 % puts the lag p99 inside stolen time.
def fields(p):
    return [int(x) for x in open(p).read().split()[1:]]
b, a = fields(stat_before), fields(stat_after)
ticks = sum(a[:8]) - sum(b[:8])
steal = f"{100 * (a[7] - b[7]) / ticks:.1f}%" if ticks > 0 and len(a) > 7 else "n/a"
def floor(p):
    try:
        return f"{json.load(open(p))['floor_p99_us'] / 1000:.3f}"
    except Exception:
        return "n/a"
floors = f"{floor(before)}/{floor(after)}ms"
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{rate:<14} run failed: {e}")
    sys.exit(0)
o = r.get("open") or {}
na = "n/a"
def ms(k):
    return f"{o[k]:.3f}ms" if k in o else na
ach = f"{o['achieved_rate']:.0f}/s" if "achieved_rate" in o else na
# The generator's own usage: CPU share of its wall time, the part of it spent polling for a
# send due within microseconds, and the share it waited for the CPU (another process on it).
w = (r.get("workers") or [{}])[0]
wall = w.get("wall_s") or 0
def share(k):
    return f"{100 * w[k] / wall:.0f}%" if wall and k in w else na
# The generator's validity flags: the codes of its "NOT VALID (codes): ..." line (older
# builds print none).
m = re.search(r"NOT VALID \(([^)]*)\)", open(err).read())
flags = [m.group(1)] if m else []
print(f"{rate:<14} {ms('lag_p50_ms'):>9} {ms('lag_p99_ms'):>9} {ms('max_lateness_ms'):>10} "
      f"{o.get('sent_late', na):>7} {o.get('unsent', na):>7} {ach:>9} {r['latency']['p99']:>8.3f}ms "
      f"{share('cpu_s'):>6} {share('spin_s'):>6} {share('runqueue_wait_s'):>6} {floors:>15} {steal:>6}  {','.join(flags)}")
PY
done
done
