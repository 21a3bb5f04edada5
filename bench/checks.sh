#!/usr/bin/env bash
# `svcbench check` on every bundled service (the test suite checks those it runs, not the Rust Locations
# services, whose cold builds alone would take minutes of its time: bench/README.md). Each service is built when its sources
# changed, started with its scenario's real dependencies (the Locations services share one OpenSearch,
# started by `svcbench up`), and its conformance checks run. Prints one line per service; exits 1 when any
# check fails. Usage: bench/checks.sh [SCENARIO...]   (default: every scenario under services/)
# VARIANT=container bench/checks.sh checks, instead of each service, its variant of that name where it has
# one (`container`: the service as its image; make the base images first: scripts/base-images.sh);
# VARIANT=all checks each service and every one of its variants (e.g. every http4k backend).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SVCBENCH_BIN:-target/release/svcbench}
[ -x "$bin" ] || cargo build --release -p svcbench
scenarios=("${@:-hello users upstream locations}")
work=$(mktemp -d)
up=
cleanup() {
  if [ -n "$up" ]; then kill -INT "$up" 2>/dev/null || true; wait "$up" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
failed=0
printf "%-45s %8s %s\n" service seconds result
for scenario in ${scenarios[@]}; do
  dep=()
  if [ "$scenario" = locations ]; then
    # One store for every Locations service: `svcbench up` prints its URL, then keeps it until Ctrl-C.
    $bin up services/locations/kotlin-ktor >"$work/up.out" 2>"$work/up.err" &
    up=$!
    for _ in $(seq 600); do grep -q '^dep.opensearch.url ' "$work/up.out" && break; sleep 0.5; done
    url=$(sed -n 's/^dep.opensearch.url //p' "$work/up.out")
    [ -n "$url" ] || { echo "svcbench up gave no store URL: $(tail -3 "$work/up.err")" >&2; exit 1; }
    dep=(--dep "opensearch=$url")
  fi
  for dir in services/$scenario/*/; do
    [ -f "$dir/svcbench.toml" ] || continue
    targets=("${dir%/}")
    if [ "${VARIANT:-}" = all ]; then
      for v in $(sed -n 's/^\[variant\.\(.*\)\]$/\1/p' "$dir/svcbench.toml"); do targets+=("${dir%/}@$v"); done
    elif [ -n "${VARIANT:-}" ]; then
      grep -q "^\[variant\.$VARIANT\]" "$dir/svcbench.toml" || continue
      targets=("${dir%/}@$VARIANT")
    fi
    for target in "${targets[@]}"; do
      t0=$(date +%s)
      if out=$($bin check "$target" --work-dir "$work/check" "${dep[@]}" 2>"$work/err"); then
        result=$(echo "$out" | tail -1)
      else
        result="FAILED: $(echo "$out" | grep '^FAIL' | head -3 | tr '\n' ' ')$(tail -1 "$work/err")"
        failed=1
      fi
      printf "%-45s %8d %s\n" "$target" $(( $(date +%s) - t0 )) "$result"
    done
  done
  if [ -n "$up" ]; then kill -INT "$up"; wait "$up" || true; up=; fi
done
exit $failed
