#!/usr/bin/env bash
# The contract check: run schemathesis against the OpenAPI document the API
# serves, on a scratch database holding the example organization, and fail on
# any response the document does not describe (a status it does not list, a
# body or header that does not match its schema, a wrong media type), on any
# 5xx, and on any request the document says is bad that the API accepts, or
# says is good that the API refuses (docs/api.md, "The OpenAPI document").
#
# Deterministic: a fixed seed and a bounded number of cases per operation.
# Extra arguments go to `schemathesis run` (e.g. --include-path-regex /park).
# Environment: CONTRACT_SEED, CONTRACT_MAX_EXAMPLES, TEST_DATABASE_URL (the
# server the scratch database is made on), I9_TEST_LOG_DIR (where the API's
# stderr is kept for the log scan; scripts/test.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh

SCHEMATHESIS_VERSION=4.32.5
seed="${CONTRACT_SEED:-20261124}"
max_examples="${CONTRACT_MAX_EXAMPLES:-100}"

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
bin="$target_dir/debug"

# schemathesis, pinned, in a virtualenv under the target dir.
venv="$target_dir/schemathesis"
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -qF "$SCHEMATHESIS_VERSION"; then
  echo "contract: installing schemathesis $SCHEMATHESIS_VERSION into $venv..."
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

# All targets, as `cargo test --workspace` builds them: the same features
# of every dependency, so after the tests this compiles nothing anew.
cargo build --locked --workspace --all-targets

server_url="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="i9_contract_$$_$(date +%s)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export DATABASE_URL="${server_url%/*}/$db"
export BIND_ADDR="127.0.0.1:$port"
export PUBLIC_BASE_URL="http://$BIND_ADDR"
export ALLOW_PRIVATE_CALLBACKS=true
export APP_ENV=development
# The API relays nothing (the writes' jobs stay in the scratch database's
# outbox, dropped with it); the prefix keeps any broker name apart all the same.
export API_NO_RELAY=true
export AMQP_PREFIX="contract$$"
export MAIL_DIR="$target_dir/contract-mail"
unset RUST_LOG LOG_FORMAT

api_pid=""
cleanup() {
  local rc=$?
  if [ -n "$api_pid" ]; then
    kill "$api_pid" 2>/dev/null || true
    wait "$api_pid" 2>/dev/null || true
  fi
  psql -q -X "$server_url" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 ||
    echo "contract: could not drop the scratch database $db" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin/i9-admin" migrate >/dev/null
"$bin/i9-admin" seed fixtures/org.json >/dev/null

# The API's log: under I9_TEST_LOG_DIR for the log scan when scripts/test.sh
# runs this, else beside the binaries.
log_dir="${I9_TEST_LOG_DIR:-$target_dir}"
mkdir -p "$log_dir"
api_log="$log_dir/contract-i9-api-$$.log"
echo "contract: the API's log is $api_log"
# As in production: the document states https-only return URLs.
ALLOW_PRIVATE_CALLBACKS=false "$bin/i9-api" 2>>"$api_log" &
api_pid=$!

for _ in $(seq 1 300); do
  curl -fsS "http://$BIND_ADDR/healthz" >/dev/null 2>&1 && break
  kill -0 "$api_pid" 2>/dev/null || { echo "contract: the API exited at start" >&2; exit 1; }
  sleep 0.1
done
curl -fsS "http://$BIND_ADDR/healthz" >/dev/null || { echo "contract: the API did not start" >&2; exit 1; }

# The example organization's administrator, and its partner integration for
# the partner operation (scripts/contract.toml).
token_of() { # client_id client_secret username password
  curl -fsS -X POST "http://$BIND_ADDR/oauth2/access_token" \
    -d grant_type=password -d "client_id=$1" --data-urlencode "client_secret=$2" \
    -d "username=$3" --data-urlencode "password=$4" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])'
}
token="$(token_of acme-hr-portal portal-secret-change-me admin 'admin-Passw0rd!')"
CONTRACT_PARTNER_TOKEN="$(token_of greenhouse-ats ats-secret-change-me ats.bot 'ats-Passw0rd!')"
export CONTRACT_PARTNER_TOKEN

# negative_data_rejection and positive_data_acceptance included: every
# constraint the server enforces on one value is stated in the document
# (docs/api.md); scripts/contract.toml names the 422s of rules across fields.
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,positive_data_acceptance

echo "contract: schemathesis $SCHEMATHESIS_VERSION against http://$BIND_ADDR/v1/openapi.json (seed $seed, at most $max_examples cases per operation and phase)"
"$venv/bin/schemathesis" --config-file scripts/contract.toml run "http://$BIND_ADDR/v1/openapi.json" \
  -H "Authorization: Bearer $token" \
  --checks "$checks" \
  --seed "$seed" \
  --max-examples "$max_examples" \
  --workers 1 \
  --no-color \
  --generation-database none \
  --suppress-health-check all \
  --request-timeout 30 \
  "$@"
