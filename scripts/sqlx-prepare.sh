#!/usr/bin/env bash
# The offline data of the compile-time checked queries (.sqlx/, committed).
#
#   scripts/sqlx-prepare.sh           regenerate .sqlx/ for the whole workspace
#   scripts/sqlx-prepare.sh --check   fail when .sqlx/ is stale (.ci/run)
#
# Builds never reach a database (.cargo/config.toml sets SQLX_OFFLINE=true):
# `sqlx::query!` and friends are checked against .sqlx/. This script makes a
# scratch database on the test server (TEST_DATABASE_URL, default
# postgres://postgres@127.0.0.1:5432/postgres), applies migrations/, runs
# `cargo sqlx prepare --workspace` against it (every target, tests included)
# and drops it. --check compares instead of writing, and fails when a query,
# a type or the schema changed without .sqlx/ being regenerated, or when
# .sqlx/ holds the data of a query that no longer exists.
#
# sqlx-cli is installed when missing, at the version of sqlx in Cargo.lock.
# README.md, "Changing a query"; docs/operations.md, "Queries checked at compile time".
set -euo pipefail
cd "$(dirname "$0")/.."

check=()
case "${1:-}" in
  "") ;;
  --check) check=(--check) ;;
  -h | --help)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

# sqlx-cli of the sqlx version in Cargo.lock (the offline data's format is
# sqlx's; a CLI of another version may write it differently).
version=$(awk '$0 == "name = \"sqlx\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$version" ] || { echo "error: no sqlx in Cargo.lock" >&2; exit 1; }
if ! { command -v cargo-sqlx >/dev/null && [ "$(sqlx --version 2>/dev/null)" = "sqlx-cli $version" ]; }; then
  echo "installing sqlx-cli $version..."
  cargo install --locked sqlx-cli --version "=$version" --no-default-features --features postgres,rustls
fi

scripts/services.sh

# The scratch database: TEST_DATABASE_URL's server, a name of its own.
server_url="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
base="${server_url%%\?*}"
params="${server_url:${#base}}"
export DATABASE_URL="${base%/*}/i9_sqlx_prepare_$$$params"
drop() { sqlx database drop -y --database-url "$DATABASE_URL" >/dev/null 2>&1 || true; }
trap drop EXIT
drop
sqlx database create
sqlx migrate run --source migrations >/dev/null

out=$(mktemp)
trap 'drop; rm -f "$out"' EXIT
cargo sqlx prepare --workspace ${check[@]+"${check[@]}"} -- --all-targets --locked 2>&1 | tee "$out"
if [ ${#check[@]} -gt 0 ]; then
  # `prepare --check` only warns about data of queries that are gone.
  if grep -q 'potentially unused queries' "$out"; then
    echo "error: .sqlx/ holds the data of queries that no longer exist; run scripts/sqlx-prepare.sh" >&2
    exit 1
  fi
  echo "sqlx: .sqlx/ matches every query and the schema"
fi
