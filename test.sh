#!/usr/bin/env bash
# Runs every test of svcbench: the development gate (formatting, lints), unit tests, the load generator's
# tests against purpose-built servers, and the integration tests that build and benchmark the bundled
# services under real limits.
set -euo pipefail
cd "$(dirname "$0")"
# The tests build their own profile (Cargo.toml's `ci`): setup need not build the release binary.
scripts/setup.sh --no-build
# The gate: unformatted code or a lint fails the run before any test.
cargo fmt --all --check
cargo clippy --profile ci --locked --workspace --all-targets -- -D warnings
# One test binary at a time: the integration tests pin services and load to CPUs and must not compete.
# --no-fail-fast: a failure in one test binary must not hide the results of the others.
cargo test --profile ci --locked --workspace --no-fail-fast -- --test-threads=1
