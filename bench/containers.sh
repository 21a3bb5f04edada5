#!/usr/bin/env bash
# Each hello service as a process and as its image, side by side under the same limits: `svcbench run` of
# the service and its `container` variant, interleaved (A B A B …), then `svcbench compare` of the image
# against the process. Startup, peak req/s, CPU per request, memory and artifact size (binary or jar
# against image), with compare's verdicts. Makes the base images first (scripts/base-images.sh).
# Usage: bench/containers.sh [SERVICE...]   (default: every hello service with a `container` variant)
# Settings: RUNS=3 CPUS=0.5 MEMORY=256M CPUSET=1 PROFILE=quick DB=results/containers.db
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SVCBENCH_BIN:-target/release/svcbench}
[ -x "$bin" ] || cargo build --release -p svcbench
scripts/base-images.sh
db=${DB:-results/containers.db}
services=("$@")
if [ ${#services[@]} -eq 0 ]; then
  for dir in services/hello/*/; do
    grep -q '^\[variant\.container\]' "$dir/svcbench.toml" && services+=("${dir%/}")
  done
fi
for s in "${services[@]}"; do
  $bin run "$s" "$s@container" --runs "${RUNS:-3}" --cpus "${CPUS:-0.5}" --memory "${MEMORY:-256M}" \
    --cpuset "${CPUSET:-1}" --profile "${PROFILE:-quick}" --db "$db"
done
for s in "${services[@]}"; do
  name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$s/svcbench.toml" | head -n1)
  echo "== $name: the image against the process"
  $bin compare --db "$db" --base "service=$name" --new "service=$name@container"
done
