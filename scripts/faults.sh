#!/usr/bin/env bash
# The fault suite: under a steady mixed load, inject one fault at a time
# (RabbitMQ, PostgreSQL, worker, API, SMTP, partner, relay crash) into a
# PostgreSQL and a RabbitMQ of its own, count lost and duplicated effects, soak,
# and write RELIABILITY.md at the repository root. Flags go to `i9-bench faults`
# (see `scripts/faults.sh --help`), e.g. --only rabbitmq-restart --quick.
# Needs root (it runs the private instances as the postgres and rabbitmq users).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --locked -p i9-bench -- faults "$@"
