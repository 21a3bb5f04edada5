#!/usr/bin/env bash
# svcbench load vs wrk against the same fast target (nginx, one worker).
#
# The target is pinned to CPU 1, each generator to CPU 0 with one thread; both get the same
# connections and duration, three runs each, alternating. Prints requests/s of each, the ratio
# svcbench/wrk, and each generator's CPU time per request (user + system of the whole process,
# measured the same way for both).
#
# Usage: bench/loadgen-vs-wrk.sh            (from the repository root)
# Env:   DURATION=10s  RUNS=3  CONNECTIONS="64 256"  PORT=18089
#        LOAD_CMD="target/release/svcbench load"   (default: that binary if built, else the
#        loadgen crate's `load` example, which runs the same code)
# Needs: wrk, nginx, taskset, python3 (Debian: apt-get install -y wrk nginx-light), 2+ CPUs.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
RUNS=${RUNS:-3}
CONNECTIONS=${CONNECTIONS:-"64 256"}
PORT=${PORT:-18089}
GEN_CPU=0
TARGET_CPU=1

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing $2 ..." >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
    else
        echo "error: $1 is missing: install it (Debian: apt-get install -y $2)" >&2
        exit 1
    fi
}
need wrk wrk
need nginx nginx-light
need taskset util-linux
need python3 python3
if [ "$(nproc)" -lt 2 ]; then
    echo "error: needs 2 CPUs (generator on CPU $GEN_CPU, target on CPU $TARGET_CPU)" >&2
    exit 1
fi

if [ -z "${LOAD_CMD:-}" ]; then
    if [ -x target/release/svcbench ] && target/release/svcbench load --help >/dev/null 2>&1; then
        LOAD_CMD="target/release/svcbench load"
    else
        echo "building the loadgen 'load' example (svcbench binary not built) ..." >&2
        cargo build --release -q -p loadgen --example load
        LOAD_CMD="${CARGO_TARGET_DIR:-target}/release/examples/load"
    fi
fi

work=$(mktemp -d)
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    server {
        listen 127.0.0.1:$PORT backlog=4096;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
EOF
taskset -c "$TARGET_CPU" nginx -e "$work/error.log" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/"

# Runs a command pinned to the generator CPU; prints "<req/s> <cpu µs per request>".
# CPU is the child's rusage (all threads, user + system) for both generators.
measure() {
    local kind=$1
    shift
    python3 - "$kind" "$@" <<'PY'
import json, re, resource, subprocess, sys
kind, cmd = sys.argv[1], sys.argv[2:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
if kind == "svcbench":
    r = json.loads(out)
    rps, n = r["requests_ok"] / r["duration_s"], r["requests_ok"]
    errors = r["requests_err"]
else:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    n = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    errors = m.group(0) if m else 0
if errors:
    print(f"warning: {kind} reported errors: {errors}", file=sys.stderr)
print(f"{rps:.0f} {cpu * 1e6 / max(n, 1):.2f}")
PY
}

echo "target: nginx $(nginx -v 2>&1 | sed 's/.*\///'), 1 worker, CPU $TARGET_CPU; generators on CPU $GEN_CPU, 1 thread, $DURATION per run"
echo "svcbench: $LOAD_CMD | wrk: $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')"
printf '\n%-6s %-4s %14s %14s %8s %16s %16s\n' conns run "svcbench req/s" "wrk req/s" ratio "svcbench µs/req" "wrk µs/req"
summary=()
for c in $CONNECTIONS; do
    s_sum=0 w_sum=0 sc_sum=0 wc_sum=0
    for run in $(seq "$RUNS"); do
        # shellcheck disable=SC2086
        read -r s_rps s_cpu < <(measure svcbench taskset -c "$GEN_CPU" $LOAD_CMD "$URL" -t 1 -c "$c" -d "$DURATION" --json)
        read -r w_rps w_cpu < <(measure wrk taskset -c "$GEN_CPU" wrk -t 1 -c "$c" -d "$DURATION" "$URL")
        printf '%-6s %-4s %14s %14s %8.3f %16s %16s\n' "$c" "$run" "$s_rps" "$w_rps" \
            "$(python3 -c "print($s_rps / $w_rps)")" "$s_cpu" "$w_cpu"
        s_sum=$(python3 -c "print($s_sum + $s_rps)")
        w_sum=$(python3 -c "print($w_sum + $w_rps)")
        sc_sum=$(python3 -c "print($sc_sum + $s_cpu)")
        wc_sum=$(python3 -c "print($wc_sum + $w_cpu)")
    done
    summary+=("$(python3 -c "
n = $RUNS
print(f'{$c:<6} {\"mean\":<4} {$s_sum / n:>14.0f} {$w_sum / n:>14.0f} {$s_sum / $w_sum:>8.3f} {$sc_sum / n:>16.2f} {$wc_sum / n:>16.2f}')")")
done
echo
printf '%s\n' "${summary[@]}"
