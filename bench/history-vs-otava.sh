#!/usr/bin/env bash
# svcbench's change-point detector (svcbench history) and Apache Otava on the same synthetic series: one
# line per series saying whether both name the same change points. Not part of the test suite; needs pip
# (Otava goes into a venv under results/). bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=results/otava-venv
SERIES=${SERIES:-40}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import otava' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q apache-otava
fi
cargo build -q --profile ci --locked --example change_points
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Seeded series: flat, one step, two steps, of 20 to 120 points, 1 % normal noise, steps of 3 to 10 %.
"$VENV/bin/python" - "$SERIES" > "$work/series.txt" <<'PY'
import random, sys
rng = random.Random(20261202)
for k in range(int(sys.argv[1])):
    n = rng.choice([20, 30, 50, 80, 120])
    steps = sorted(rng.sample(range(5, n - 5), k % 3)) if k % 3 else []
    level, out, s = 100.0, [], 0
    for i in range(n):
        if s < len(steps) and i == steps[s]:
            level *= 1 + rng.choice([-1, 1]) * rng.uniform(0.03, 0.10)
            s += 1
        out.append(level * (1 + 0.01 * rng.gauss(0, 1)))
    print(" ".join(f"{v:.4f}" for v in out))
PY
target/ci/examples/change_points < "$work/series.txt" > "$work/svcbench.txt"
"$VENV/bin/python" - "$work/series.txt" > "$work/otava.txt" <<'PY'
import sys
from otava.analysis import compute_change_points
for line in open(sys.argv[1]):
    values = [float(t) for t in line.split()]
    cps, _ = compute_change_points(values, window_len=50, max_pvalue=0.001)
    print(" ".join(str(c.index) for c in cps))
PY
same=0; total=0
while IFS= read -r a <&3 && IFS= read -r b <&4; do
  total=$((total + 1))
  if [ "$a" = "$b" ]; then same=$((same + 1)); verdict=same; else verdict=DIFFERENT; fi
  printf 'series %2d  svcbench [%s]  otava [%s]  %s\n' "$total" "$a" "$b" "$verdict"
done 3<"$work/svcbench.txt" 4<"$work/otava.txt"
echo "$same of $total series: the same change points"
