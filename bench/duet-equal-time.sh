#!/usr/bin/env bash
# A duet against interleaved runs given the same machine time, in one sitting (docs/duet.md, "Against
# interleaved runs"):
#   1. one duet of hello go-nethttp against @extra4us (a known extra CPU cost per request): PAIRS fresh pairs
#      of STEP-second steps at the duet profile's rate, 0.45 CPU each on CPU 1;
#   2. `svcbench run A B --runs 2` again and again, the same profile and limits, until as much machine time is
#      spent, then `compare`: its 95 % interval of CPU per request;
#   3. an A/A duet of the same form (go-nethttp against itself): it should give no verdict.
# Prints each interval, its width, the machine time, and the width of the runs' interval over the duet's.
# Usage: bench/duet-equal-time.sh   (PAIRS=150 STEP=2 DB=results/duet-equal-time.db BIN=target/release/svcbench)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-150}
STEP=${STEP:-2}
DB=${DB:-results/duet-equal-time.db}
bin=${BIN:-target/release/svcbench}
[ -x "$bin" ] || cargo build --release -p svcbench
go=services/hello/go-nethttp
limits=(--cpus 0.45 --cpuset 1)
rm -f "$DB" "$DB"-wal "$DB"-shm
mkdir -p "$(dirname "$DB")"

# One duet; prints its CPU µs/req line (ratio, interval, width, verdict, pairs, machine s) and A's and B's own
# CPU µs per request over the valid slices.
duet() {
  local label=$1 b=$2
  "$bin" duet "$go" "$b" --pairs "$PAIRS" --step-duration "$STEP" "${limits[@]}" --label "$label" --db "$DB" >/dev/null 2>&1
  sqlite3 -separator ' ' "$DB" "SELECT printf('%.4f [%.4f, %.4f] width %.1f %% %s, %d pairs, %.0f s of machine time;', l.ratio,
      l.ci_low, l.ci_high, 100 * (l.ci_high - l.ci_low), l.verdict, l.pairs, d.machine_s),
      (SELECT printf('A %.1f µs/req, B %.1f', SUM(a_cpu_s) * 1e6 / SUM(a_ok), SUM(b_cpu_s) * 1e6 / SUM(b_ok))
        FROM duet_slice s WHERE s.duet_id = d.id AND invalid IS NULL)
    FROM duet d JOIN duet_line l ON l.duet_id = d.id WHERE d.id = (SELECT MAX(id) FROM duet) AND l.metric = 'cpu_us_per_req'"
}
width() { sqlite3 "$DB" "SELECT 100 * (ci_high - ci_low) FROM duet_line JOIN duet ON duet.id = duet_id
  WHERE label = '$1' AND metric = 'cpu_us_per_req'"; }

echo "== duet: $(basename $go) against @extra4us, $PAIRS pairs of $STEP s"
echo "ab: $(duet ab "$go@extra4us")"
machine=$(sqlite3 "$DB" "SELECT CAST(machine_s AS INTEGER) FROM duet WHERE label = 'ab'")

echo "== interleaved runs of the same two, the duet profile, until $machine s of machine time are spent"
t0=$(date +%s)
runs=0
while [ $(( $(date +%s) - t0 )) -lt "$machine" ]; do
  "$bin" run "$go" "$go@extra4us" --profile duet --runs 2 "${limits[@]}" --label interleaved --db "$DB" >/dev/null 2>&1
  runs=$((runs + 2))
done
spent=$(( $(date +%s) - t0 ))
runs_width=$(bench/cpu-per-req-interval.sh "$bin" "$DB" hello-go-nethttp hello-go-nethttp@extra4us interleaved)
echo "interleaved: $runs runs a side in $spent s: CPU/req ${runs_width#* }, width ${runs_width%% *} %"
# The figure the duet compares is the step's own CPU per request: its interval over the same runs (a Welch t
# interval of the log ratio, as compare's; the t quantile by the Cornish–Fisher expansion).
python3 - "$DB" <<'PY'
import math, sqlite3, sys
from statistics import mean, variance
db = sqlite3.connect(sys.argv[1])
def logs(svc):
    return [math.log(r[0]) for r in db.execute("SELECT cpu_ms_per_req FROM step JOIN run ON run.id = run_id"
            " WHERE run.status = 'completed' AND run.service = ?", (svc,))]
a, b = logs('hello-go-nethttp'), logs('hello-go-nethttp@extra4us')
va, vb = variance(a) / len(a), variance(b) / len(b)
df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
z = 1.959964
q = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
d, h = mean(b) - mean(a), q * math.sqrt(va + vb)
print(f"interleaved, the step's CPU/req: {math.exp(d):.4f} [{math.exp(d - h):.4f}, {math.exp(d + h):.4f}]"
      f" width {100 * (math.exp(d + h) - math.exp(d - h)):.1f} %")
PY
python3 -c "print(f'the runs\' interval over the duet\'s: {${runs_width%% *} / $(width ab):.1f}x wider, in {$spent / $machine:.2f}x the machine time')"

echo "== A/A duet of the same form"
echo "aa: $(duet aa "$go")"
sqlite3 "$DB" "SELECT printf('A/A: %d faster/slower lines of %d', SUM(verdict IN ('faster','slower')), COUNT(*))
  FROM duet_line JOIN duet ON duet.id = duet_id WHERE label = 'aa'"
