#!/usr/bin/env bash
# Benchmark our API against bare axum + sqlx programs, in one run on this
# machine, and rewrite the mode's own section of BENCHMARKS.md at the
# repository root. `scripts/bench.sh writes` (the default) measures POST and
# PATCH /v1/employees and the partner operation, `scripts/bench.sh reads` the
# GET of an employee and the employee and I-9 lists, `scripts/bench.sh
# pipeline` the outbox relay, the worker and the callbacks against the API's
# write rate, `scripts/bench.sh tokens` the token endpoint under a sign-in
# flood, `scripts/bench.sh memory` the resident memory of i9-api and
# i9-worker as processes (it builds their release binaries first, with the
# bench's features), `scripts/bench.sh growth` the reads and writes again
# with 1,000,000 employees and the plan of every list; flags go to i9-bench
# (see `scripts/bench.sh reads --help`), e.g. `reads --duration 30`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
cargo run --release --locked -p i9-bench -- "$@"
