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
# Every bundled service, and the variants of seed 000's quick rounds, built two at a time before the tests
# (they then find them up to date): a Rust build's single-core LTO phase and Maven's downloads overlap. A
# build that fails here fails again, with its log, in the test that needs it.
cargo build --profile ci --locked -p svcbench
target/ci/svcbench build services/*/* --quick --jobs 2 --work-dir target/prebuild \
  --study studies/seed-000-rust-profiles.toml --study studies/seed-000-ktor-engines.toml \
  --study studies/seed-000-http4k-backends.toml || echo "test.sh: some builds failed; the tests that need them will say"
# One test binary at a time: the integration tests pin services and load to CPUs and must not compete.
# --no-fail-fast: a failure in one test binary must not hide the results of the others.
cargo test --profile ci --locked --workspace --no-fail-fast -- --test-threads=1
