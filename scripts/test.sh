#!/usr/bin/env bash
# Run every test: unit tests and the integration tests against the real
# Postgres and RabbitMQ (each test creates and drops its own database).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
cargo test --workspace --locked "$@"
