#!/usr/bin/env bash
# How noisy is this machine, and what does compare make of it? (docs/report.md, "the statistic")
#   1. RUNS interleaved runs of two hello services (a warm-up, then two 10 s steps at 64 connections);
#   2. the spread of peak req/s and CPU per request per service, and the steps the machine-speed probe
#      flagged, from svcbench's own figures (report --format json);
#   3. A/A: RESAMPLES comparisons of disjoint random 3-run halves of the same service, counting false
#      faster/slower verdicts;
#   4. A/B: AB_RUNS runs of one service at --cpus 0.5 and AB_RUNS at --cpus 0.4, and compare's verdict
#      and advice on the known 20 % quota difference.
# Usage: bench/noise.sh   (RUNS=10 RESAMPLES=20 AB_RUNS=6 DB=results/noise.db)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
RESAMPLES=${RESAMPLES:-20}
AB_RUNS=${AB_RUNS:-6}
DB=${DB:-results/noise.db}
bin=target/release/svcbench
[ -x "$bin" ] || cargo build --release -p svcbench
a=services/hello/go-nethttp
b=services/hello/rust-actix
# REUSE=1: analyse the runs already in $DB instead of measuring them again.
if [ "${REUSE:-0}" != 1 ]; then
  rm -f "$DB" "$DB"-wal "$DB"-shm
  echo "== $RUNS interleaved runs of $(basename $a) and $(basename $b)"
  $bin run "$a" "$b" --profile bench/noise-profile.toml --runs "$RUNS" --label noise --db "$DB"
fi

echo "== spread over runs (svcbench's own figures: peak among valid steps, CPU µs per request over the run)"
$bin report --db "$DB" --filter label=noise --format json -o - | python3 -c '
import json, sys
d = json.load(sys.stdin)
for s in d["summary"]:
    def spread(k):
        v = s.get(k)
        if not v: return "–"
        med, lo, hi, n = v["median"], v["min"], v["max"], v["n"]
        return f"median {med:,.1f}, spread {(hi - lo) / med * 100:.0f} % (n={n})"
    name, runs_out, steps_out = s["name"], s["runs_left_out"] or "none", s["steps_left_out"] or "none"
    peak, cpu = spread("peak_rps"), spread("cpu_us_per_req")
    print(f"{name}: peak req/s {peak}; CPU µs/req {cpu}")
    print(f"   runs left out: {runs_out}; steps left out: {steps_out}")
'

echo "== A/A: $RESAMPLES comparisons of disjoint random 3-run halves of the same service"
false_verdicts=0
total=0
for i in $(seq 1 "$RESAMPLES"); do
  for svc in hello-go-nethttp hello-rust-actix; do
    mapfile -t pick < <(seq 1 "$RUNS" | shuf --random-source=<(yes "$i$svc") | head -6)
    base="service=$svc,label=noise,run=${pick[0]},run=${pick[1]},run=${pick[2]}"
    new="service=$svc,label=noise,run=${pick[3]},run=${pick[4]},run=${pick[5]}"
    out=$($bin compare --db "$DB" --base "$base" --new "$new" --format json)
    n=$(echo "$out" | python3 -c 'import json,sys; l=json.load(sys.stdin)["lines"]; print(sum(1 for x in l if x["verdict"] in ("faster","slower","smaller","larger")), len(l))')
    false_verdicts=$((false_verdicts + ${n% *}))
    total=$((total + ${n#* }))
  done
done
echo "A/A: $false_verdicts false verdicts in $total compared lines ($((RESAMPLES * 2)) comparisons)"

if [ "$AB_RUNS" = 0 ]; then exit 0; fi
echo "== A/B: $AB_RUNS runs at --cpus 0.5 and $AB_RUNS at --cpus 0.4 of $(basename $a)"
$bin run "$a" --profile bench/noise-profile.toml --runs "$AB_RUNS" --cpus 0.5 --label ab-0.5 --db "$DB"
$bin run "$a" --profile bench/noise-profile.toml --runs "$AB_RUNS" --cpus 0.4 --label ab-0.4 --db "$DB"
$bin compare --db "$DB" --base label=ab-0.5 --new label=ab-0.4 | grep -E "peak_rps|cpu_per_req|runs|needed|warning" || true
