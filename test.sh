#!/usr/bin/env bash
# Runs every test of svcbench: the development gate (formatting, lints), unit tests, the load generator's
# tests against purpose-built servers, and the integration tests that build and benchmark the bundled
# services under real limits.
set -euo pipefail
cd "$(dirname "$0")"
# What building svcbench needs (the tests build their own profile, Cargo.toml's `ci`: no release build)…
scripts/setup.sh --quick --no-build
mkdir -p results
# …and, while svcbench compiles, the Debian packages only the tests use (Chromium, Podman, OpenSSH, …).
scripts/setup.sh --packages >results/setup-packages.log 2>&1 &
packages=$!
# Never cut short (an interrupted dpkg leaves the machine's packages half-installed): waited for on exit.
trap 'wait $packages 2>/dev/null || true' EXIT
# The gate: unformatted code or a lint fails the run before any test.
cargo fmt --all --check
# svcbench first, so that it can build the bundled services the integration tests run while the lints and
# the tests compile: the JVM builds are mostly one CPU each, and one after the other they would leave the
# second CPU idle for minutes. The tests then find them built (a service is rebuilt only when its files,
# build command or environment changed). The Rust Locations services are built by bench/ only.
# (Built as the tests build it, with their features: a plain `cargo build` would compile it a second time.)
cargo test --profile ci --locked -p svcbench --no-run --test module_graph
# The services' builds need the packages too (upx packs the users scenario's Go binary).
if ! wait $packages; then echo "test.sh: installing the tests' packages failed:"; tail -20 results/setup-packages.log; exit 1; fi
cat results/setup-packages.log >&2
target/ci/svcbench build services/{hello,users,upstream}/*/ services/locations/kotlin-*/ \
  --work-dir results/work/test-build >results/test-build.log 2>&1 &
builder=$!
# Ended with the script (a failed lint, Ctrl-C): svcbench ends its builds on SIGINT.
trap 'kill -INT $builder 2>/dev/null; wait $builder 2>/dev/null || true' EXIT
cargo clippy --profile ci --locked --workspace --all-targets -- -D warnings
cargo test --profile ci --locked --workspace --no-run
# A build that failed is built again, and its failure told, by the tests that run the service.
if wait $builder; then tail -1 results/test-build.log; else echo "test.sh: a bundled service did not build:"; tail -5 results/test-build.log; fi
trap - EXIT
# One test binary at a time: the integration tests pin services and load to CPUs and must not compete.
# --no-fail-fast: a failure in one test binary must not hide the results of the others.
cargo test --profile ci --locked --workspace --no-fail-fast -- --test-threads=1
