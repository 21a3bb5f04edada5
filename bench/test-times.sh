#!/usr/bin/env bash
# How long each integration test takes: runs the named test files (all of the workspace's when none is
# named) one binary at a time, one test at a time, as ./test.sh does, and prints every test's time, the
# longest first, then each file's total. For finding what to shorten in the suite; the machine's load at
# the start and the end is printed with the table, as times on a shared machine are only comparable at
# the same load.
# Usage: bench/test-times.sh [TEST-FILE…]        e.g. bench/test-times.sh scenarios hosts report
# Waits for /tmp/svcbench-tests.lock (integration tests pin CPUs and must not overlap another suite).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TEST_TIMES_DIR:-results/test-times}
mkdir -p "$out"
# The test executables with their file name and the folder cargo runs them in (their package's).
cargo test --profile ci --locked --workspace --no-run --message-format=json 2>/dev/null |
  jq -r 'select(.reason == "compiler-artifact" and .executable != null and (.target.kind | index("test")))
         | [.target.name, .executable, (.manifest_path | sub("/Cargo.toml$"; ""))] | @tsv' >"$out/exes.tsv"
wanted() { [ $# -eq 0 ] || printf '%s\n' "$@" | grep -qx "$name"; }
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)" | tee "$out/load"
: >"$out/times.tsv"
while IFS=$'\t' read -r name exe dir; do
  wanted "$@" || continue
  [ "$name" = module_graph ] && continue
  start=$(date +%s.%N)
  # --report-time is unstable: RUSTC_BOOTSTRAP lets the stable test harness print it.
  (cd "$dir" && RUSTC_BOOTSTRAP=1 flock /tmp/svcbench-tests.lock \
    "$exe" -Z unstable-options --report-time --test-threads=1) >"$out/$name.log" 2>&1 || true
  end=$(date +%s.%N)
  # "test NAME ... ok <12.345s>" (or FAILED, ignored without a time).
  sed -nE 's/^test ([^ ]+) \.\.\. ([a-zA-Z]+) <([0-9.]+)s>$/\3\t'"$name"'::\1\t\2/p' "$out/$name.log" >>"$out/times.tsv"
  printf '%s\t%s::(whole file)\t%s\n' "$(awk "BEGIN { print $end - $start }")" "$name" \
    "$(grep -oE '^test result: [a-zA-Z]+' "$out/$name.log" | tail -1 | cut -d' ' -f3)" >>"$out/times.tsv"
done <"$out/exes.tsv"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load"
printf '%8s  %-8s %s\n' seconds result test
sort -t$'\t' -k1,1 -rn "$out/times.tsv" | awk -F'\t' '{ printf "%8.1f  %-8s %s\n", $1, $3, $2 }'
