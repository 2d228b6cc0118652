#!/usr/bin/env bash
# Start the whole service locally: PostgreSQL and RabbitMQ (if down), the
# migrations, the example organization, one worker and the API.
# Ctrl-C stops the API and the worker.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/i9}"
export BIND_ADDR="${BIND_ADDR:-127.0.0.1:8080}"
export PUBLIC_BASE_URL="${PUBLIC_BASE_URL:-http://$BIND_ADDR}"
export ALLOW_PRIVATE_CALLBACKS="${ALLOW_PRIVATE_CALLBACKS:-true}"
# The E-Verify simulator's later decisions (docs/everify.md, "The simulator")
# come with the worker's poll round: every 5 s here, not the default 60 s.
export EVERIFY_POLL_SECS="${EVERIFY_POLL_SECS:-5}"
# A local run: the binaries use the development keys published in the
# repository only because APP_ENV=development says so. Anything else (or set
# DATA_ENCRYPTION_KEY(S) and SSN_HASH_KEY(S)) needs real keys.
export APP_ENV="${APP_ENV:-development}"

cargo build --locked --bins
bin="${CARGO_TARGET_DIR:-target}/debug"
"$bin/i9-admin" migrate
"$bin/i9-admin" seed fixtures/org.json

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$bin/i9-worker" & pids+=($!)
"$bin/i9-api" & pids+=($!)

for _ in $(seq 1 100); do
  curl -fsS "http://$BIND_ADDR/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://$BIND_ADDR/healthz" >/dev/null || { echo "error: the API did not start" >&2; exit 1; }

cat <<MSG

The service is running on http://$BIND_ADDR (API and worker; Ctrl-C stops both).

Get a token for the example administrator:

  curl -s -X POST http://$BIND_ADDR/oauth2/access_token \\
    -d grant_type=password -d client_id=acme-hr-portal -d client_secret=portal-secret-change-me \\
    -d username=admin -d 'password=admin-Passw0rd!'

Then call the API with it:

  TOKEN=\$(curl -s -X POST http://$BIND_ADDR/oauth2/access_token \\
    -d grant_type=password -d client_id=acme-hr-portal -d client_secret=portal-secret-change-me \\
    -d username=admin -d 'password=admin-Passw0rd!' | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
  curl -s http://$BIND_ADDR/v1/employees -H "Authorization: Bearer \$TOKEN"

MSG
wait -n "${pids[@]}"
