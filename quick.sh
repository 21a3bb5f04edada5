#!/usr/bin/env bash
# The main job: build svcbench and the `hello` services, benchmark them with the `quick` profile
# (3 runs each, interleaved: the fewest `compare` decides on), and write a report under results/.
# svcbench is built in Cargo's `ci` profile (release without link-time optimisation): the same code and
# optimisation level as `release`, minutes faster to build; `release` is for measuring svcbench itself.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --quick
bin="${CARGO_TARGET_DIR:-target}/ci/svcbench"
services=()
for m in services/hello/*/svcbench.toml; do services+=("$(dirname "$m")"); done
# Built two at a time (one build's single-threaded stretches, Rust's link or Maven, leave a CPU idle);
# `run` then finds them built.
$bin build "${services[@]}" --work-dir results/work/quick-build
$bin run "${services[@]}" --profile quick --runs 3 --db results/svcbench.db
$bin report --db results/svcbench.db -o results/report.html
$bin report --db results/svcbench.db --format markdown -o results/report.md
echo "report: results/report.html (and results/report.md)"
