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

# I-9s for the I-9 routes to act on. The worker creates I-9s (from the
# requests of employee writes), and it does not run here, so they are
# inserted as the tests' `insert_i9` does (tests/src/lib.rs): one per step, in
# the status that step starts from, each of an employee of the example
# organization (at most one open I-9 each). No SSN: the worker copies it
# encrypted, which SQL cannot. scripts/contract_hooks.py gives each step's
# operation its I-9's id as the path's `id` where the generated one is valid
# (the read, getI9, the Section 2 one's), so the runs reach the body checks
# and the state machine instead of a 404; once a step has succeeded, the same
# step answers 409 (documented).
i9s="$(psql -X -q -t -A -F '|' -v ON_ERROR_STOP=1 "$DATABASE_URL" <<'SQL'
INSERT INTO i9s (employee_id, status, form_version, first_name, last_name, email_address,
                 start_date, date_due)
SELECT e.id, v.status, '01/20/25', e.first_name, e.last_name, e.email_address,
       p.start_date, p.start_date + 3
FROM (VALUES ('EMP-1001', 'Signed Sec 1'), ('EMP-1002', 'Signed Sec 2'),
             ('EMP-1001', 'Completed'), ('EMP-1003', 'Section 1 Incomplete')) AS v (profile_id, status)
JOIN employees e ON e.profile_id = v.profile_id
LEFT JOIN LATERAL (SELECT start_date FROM employment_periods
                   WHERE employee_id = e.id ORDER BY id DESC LIMIT 1) p ON true
RETURNING id, status;
SQL
)"
CONTRACT_I9_SECTION2="" CONTRACT_I9_COMPLETE="" CONTRACT_I9_APPROVE="" CONTRACT_I9_PARK=""
while IFS='|' read -r id status; do
  case "$status" in
    "Signed Sec 1") CONTRACT_I9_SECTION2="$id" ;;
    "Signed Sec 2") CONTRACT_I9_COMPLETE="$id" ;;
    Completed) CONTRACT_I9_APPROVE="$id" ;;
    "Section 1 Incomplete") CONTRACT_I9_PARK="$id" ;;
  esac
done <<<"$i9s"
for v in "$CONTRACT_I9_SECTION2" "$CONTRACT_I9_COMPLETE" "$CONTRACT_I9_APPROVE" "$CONTRACT_I9_PARK"; do
  [ -n "$v" ] || { echo "contract: could not insert the I-9s (got: $i9s)" >&2; exit 1; }
done
export CONTRACT_I9_SECTION2 CONTRACT_I9_COMPLETE CONTRACT_I9_APPROVE CONTRACT_I9_PARK
echo "contract: I-9s $CONTRACT_I9_SECTION2 (Signed Sec 1), $CONTRACT_I9_COMPLETE (Signed Sec 2), $CONTRACT_I9_APPROVE (Completed), $CONTRACT_I9_PARK (Section 1 Incomplete)"

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

# The hooks point the I-9 routes at the I-9s inserted above.
export SCHEMATHESIS_HOOKS=scripts/contract_hooks.py

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
