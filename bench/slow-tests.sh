#!/usr/bin/env bash
# The tests left out of ./test.sh because they build a bundled service that nothing else in the suite
# builds and whose cold build alone takes minutes on 2 CPUs (each is marked #[ignore] with its reason).
# Run them after changing one of those services, or svcbench code their assertions cover.
# Usage: bench/slow-tests.sh [TEST-NAME-FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --profile ci --locked -p svcbench --test scenarios -- --ignored --test-threads=1 "$@"
