#!/usr/bin/env bash
# Benchmark our API against bare axum + sqlx programs, in one run on this
# machine, and rewrite the mode's own section of BENCHMARKS.md at the
# repository root. `scripts/bench.sh writes` (the default) measures POST and
# PATCH /v1/employees and the partner operation, `scripts/bench.sh reads` the
# GET of an employee and the employee and I-9 lists, `scripts/bench.sh tokens`
# the token endpoint under a sign-in flood, `scripts/bench.sh memory` the
# resident memory of i9-api and i9-worker (it builds their release binaries
# first: `cargo build --release --locked -p i9-api -p i9-workers`); flags go to i9-bench
# (see `scripts/bench.sh reads --help`), e.g. `reads --duration 30`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
cargo run --release --locked -p i9-bench -- "$@"
