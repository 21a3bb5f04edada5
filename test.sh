#!/usr/bin/env bash
# Runs every test of svcbench: unit tests, the load generator's tests against purpose-built servers, and
# the integration tests that build and benchmark the bundled services under real limits.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
# One test binary at a time: the integration tests pin services and load to CPUs and must not compete.
cargo test --release --locked --workspace -- --test-threads=1
