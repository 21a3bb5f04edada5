#!/usr/bin/env bash
# Calibration of `svcbench duet` on this machine (docs/duet.md):
#   1. A/A: AA duets of hello go-nethttp with itself, PAIRS pairs each: share of faster/slower lines (goal ≤ 5 %);
#   2. A/B: AB duets against @extra4us and @extra9us (about 5 % and 10 % more CPU per request): found or not,
#      the interval, whether it holds the true ratio (1 + extra µs / A's own CPU µs per request), machine time;
#   3. alternating (--alternate --cpus 0.9 on one CPU): ALT A/A duets and ALT A/B duets against @extra9us;
#   4. interleaved runs, `svcbench run A B --runs RUNS` with the same profile (about the machine time of one
#      duet) and `compare`: the width of its 95 % interval of CPU per request, against the duet's.
# Usage: bench/duet.sh   (AA=20 AB=3 ALT=3 PAIRS=4 RUNS=4 PROFILE=duet DB=results/duet-bench.db)
set -euo pipefail
cd "$(dirname "$0")/.."
AA=${AA:-20}
AB=${AB:-3}
ALT=${ALT:-3}
PAIRS=${PAIRS:-4}
RUNS=${RUNS:-4}
PROFILE=${PROFILE:-duet}
DB=${DB:-results/duet-bench.db}
bin=${BIN:-target/release/svcbench}
[ -x "$bin" ] || cargo build --release -p svcbench
go=services/hello/go-nethttp
rm -f "$DB" "$DB"-wal "$DB"-shm
mkdir -p "$(dirname "$DB")"

# One duet; prints its CPU µs/req line: ratio, interval, verdict, machine s, and A's own CPU µs per request.
duet() {
  local label=$1 b=$2
  shift 2
  "$bin" duet "$go" "$b" --profile "$PROFILE" --pairs "$PAIRS" --label "$label" --db "$DB" "$@" >/dev/null 2>&1
  sqlite3 -separator ' ' "$DB" "SELECT printf('%.4f [%.4f, %.4f] %s %.0f', l.ratio, l.ci_low, l.ci_high, l.verdict, d.machine_s),
      (SELECT printf('%.1f', SUM(a_cpu_s) * 1e6 / SUM(a_ok)) FROM duet_slice s WHERE s.duet_id = d.id AND invalid IS NULL)
    FROM duet d JOIN duet_line l ON l.duet_id = d.id WHERE d.id = (SELECT MAX(id) FROM duet) AND l.metric = 'cpu_us_per_req'"
}

echo "== A/A: $AA duets of $(basename $go) with itself, $PAIRS pairs each"
for i in $(seq 1 "$AA"); do
  echo "aa $i: $(duet aa "$go")"
done
sqlite3 "$DB" "SELECT printf('A/A: %d faster/slower lines of %d (%.1f %%), every metric', SUM(verdict IN ('faster','slower')), COUNT(*),
  100.0 * SUM(verdict IN ('faster','slower')) / COUNT(*)) FROM duet_line JOIN duet ON duet.id = duet_id WHERE label = 'aa'"
sqlite3 "$DB" "SELECT printf('A/A CPU µs/req: interval width median %.1f %% (%d duets)', 100 * AVG(ci_high - ci_low), COUNT(*))
  FROM duet_line JOIN duet ON duet.id = duet_id WHERE label = 'aa' AND metric = 'cpu_us_per_req'"

for extra in 4 9; do
  echo "== A/B: $AB duets against @extra${extra}us"
  for i in $(seq 1 "$AB"); do
    line=$(duet "ab$extra" "$go@extra${extra}us")
    base=${line##* }
    truth=$(python3 -c "print(f'{1 + $extra / $base:.4f}')")
    held=$(python3 -c "
r = '''$line'''.replace('[', '').replace(']', '').replace(',', '').split()
print('holds' if float(r[1]) <= $truth <= float(r[2]) else 'misses')")
    echo "ab $extra µs $i: B/A CPU µs/req $line µs (A's); true ≈ $truth, interval $held"
  done
done

echo "== alternating: $ALT A/A and $ALT A/B (@extra9us) duets in turns, --cpus 0.9 --cpuset 1"
for i in $(seq 1 "$ALT"); do
  echo "alt aa $i: $(duet alt-aa "$go" --alternate --cpus 0.9 --cpuset 1)"
done
for i in $(seq 1 "$ALT"); do
  echo "alt ab 9 µs $i: $(duet alt-ab9 "$go@extra9us" --alternate --cpus 0.9 --cpuset 1)"
done
sqlite3 "$DB" "SELECT printf('alternating A/A: %d faster/slower lines of %d', SUM(verdict IN ('faster','slower')), COUNT(*))
  FROM duet_line JOIN duet ON duet.id = duet_id WHERE label = 'alt-aa'"

echo "== interleaved runs: $RUNS runs each of $(basename $go) and @extra9us, profile $PROFILE, then compare"
t0=$(date +%s)
"$bin" run "$go" "$go@extra9us" --profile "$PROFILE" --runs "$RUNS" --label interleaved --db "$DB" >/dev/null 2>&1 || true
t1=$(date +%s)
line=$(bench/cpu-per-req-interval.sh "$bin" "$DB" hello-go-nethttp hello-go-nethttp@extra9us interleaved)
echo "interleaved CPU/req: ${line#* } width ${line%% *} % in $((t1 - t0)) s"
