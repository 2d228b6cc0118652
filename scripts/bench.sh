#!/usr/bin/env bash
# Benchmark our API against a bare axum + sqlx program, in one run on this
# machine, and write BENCHMARKS.md at the repository root. Flags go to
# i9-bench (see `scripts/bench.sh --help`), e.g. --duration 30 --i9-samples 500.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
cargo run --release --locked -p i9-bench -- "$@"
