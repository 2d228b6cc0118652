#!/usr/bin/env bash
# The partner quick start, run as the docs show it: the Python block right
# after `<!-- partner-quickstart -->` in docs/partners.md is extracted and run,
# with the packages its install line pins (in a virtualenv under the target
# dir), against `i9-api` and `i9-worker` on a scratch database and a scratch
# AMQP prefix, with the example organization whose partner `greenhouse-ats`
# has its callback URL on the example's receiver. Fails when the example
# exits non-zero or runs past the deadline.
#
# Environment: TEST_DATABASE_URL (the server the scratch database is made on),
# AMQP_URL, PARTNER_EXAMPLE_DEADLINE_SECS (120), I9_TEST_LOG_DIR (where the
# binaries' stderr and the example's output are kept for the log scan;
# scripts/test.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh

deadline="${PARTNER_EXAMPLE_DEADLINE_SECS:-120}"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
bin="$target_dir/debug"
log_dir="${I9_TEST_LOG_DIR:-$target_dir}"
mkdir -p "$log_dir"

tmp="$(mktemp -d)"
server_url="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="i9_partner_example_$$_$(date +%s)"
pids=()
cleanup() {
  local rc=$?
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" 2>/dev/null || true; done
  psql -q -X "$server_url" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 ||
    echo "partner example: could not drop the scratch database $db" >&2
  if [ -n "${vhost:-}" ]; then
    rabbitmqctl -q delete_vhost "$vhost" >/dev/null 2>&1 ||
      echo "partner example: could not delete the scratch vhost $vhost" >&2
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The example, exactly as docs/partners.md shows it.
example="$tmp/quickstart.py"
python3 - docs/partners.md "$example" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
at = lines.index("<!-- partner-quickstart -->")
if lines[at + 1] != "```python":
    sys.exit("partner example: no ```python block right after <!-- partner-quickstart -->")
end = lines.index("```", at + 2)
open(sys.argv[2], "w", encoding="utf-8").write("\n".join(lines[at + 2:end]) + "\n")
PY
# Its packages, as its install line pins them.
requirements="$(sed -n 's/^ *pip install \(.*==.*\)$/\1/p' "$example" | head -n1)"
[ -n "$requirements" ] || { echo "partner example: no pinned 'pip install' line in the example" >&2; exit 1; }
[ "$(grep -cF "pip install $requirements" docs/partners.md)" -ge 2 ] ||
  { echo "partner example: the install line of docs/partners.md does not pin $requirements" >&2; exit 1; }
venv="$target_dir/partner-example"
if [ "$(cat "$venv/requirements" 2>/dev/null)" != "$requirements" ]; then
  echo "partner example: installing $requirements into $venv..."
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086 # the pins, one word each
  "$venv/bin/pip" install -q --disable-pip-version-check $requirements
  echo "$requirements" >"$venv/requirements"
fi

# As scripts/contract.sh: every target, so that after `cargo test` this
# compiles nothing anew.
cargo build --locked --workspace --all-targets

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
receiver_port="$(free_port)"
export DATABASE_URL="${server_url%/*}/$db"
export BIND_ADDR="127.0.0.1:$port"
export WORKER_HTTP_ADDR="127.0.0.1:0"  # the worker's /healthz and /metrics: any free port
export PUBLIC_BASE_URL="http://$BIND_ADDR"
export ALLOW_PRIVATE_CALLBACKS=true
export APP_ENV=development
export AMQP_PREFIX="partnerexample$$"
export MAIL_DIR="$tmp/mail"
unset RUST_LOG LOG_FORMAT
# On the local broker (AMQP_URL unset) and when rabbitmqctl may manage it, in
# a scratch vhost too: deleting it at the end removes the prefix's queues and
# exchanges with it. Otherwise they stay on the broker (named $AMQP_PREFIX.*).
vhost=""
if [ -z "${AMQP_URL:-}" ] && rabbitmqctl -q add_vhost "$AMQP_PREFIX" >/dev/null 2>&1; then
  vhost="$AMQP_PREFIX"
  rabbitmqctl -q set_permissions -p "$vhost" guest '.*' '.*' '.*' >/dev/null
  export AMQP_URL="amqp://guest:guest@127.0.0.1:5672/$vhost"
fi

# The example organization, its partner's callbacks sent to the example's receiver.
python3 - fixtures/org.json "$tmp/org.json" "http://127.0.0.1:$receiver_port/i9-status" <<'PY'
import json, sys
org = json.load(open(sys.argv[1], encoding="utf-8"))
[client] = [c for c in org["clients"] if c["clientId"] == "greenhouse-ats"]
client["integration"]["hrUrl"] = sys.argv[3]
json.dump(org, open(sys.argv[2], "w", encoding="utf-8"), indent=2)
PY
"$bin/i9-admin" migrate >/dev/null
"$bin/i9-admin" seed "$tmp/org.json" >/dev/null

for b in i9-worker i9-api; do
  echo "partner example: the log of $b is $log_dir/partner-example-$b-$$.log"
  "$bin/$b" >>"$log_dir/partner-example-$b-$$.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 1 300); do
  curl -fsS "http://$BIND_ADDR/healthz" >/dev/null 2>&1 && break
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "partner example: a binary exited at start" >&2; exit 1; }
  done
  sleep 0.1
done
curl -fsS "http://$BIND_ADDR/healthz" >/dev/null || { echo "partner example: the API did not start" >&2; exit 1; }

# The example organization's values (fixtures/org.json), as docs/partners.md
# tells a partner to set them.
signing_secret="$(python3 -c 'import json, sys; print([c for c in json.load(open(sys.argv[1]))["clients"] if c["clientId"] == "greenhouse-ats"][0]["integration"]["signingSecret"])' fixtures/org.json)"
out="$log_dir/partner-example-output-$$.log"
echo "partner example: running docs/partners.md's quick start (deadline ${deadline} s; its output is also in $out)"
start="$(date +%s)"
I9_BASE_URL="http://$BIND_ADDR" I9_CLIENT_ID=greenhouse-ats I9_CLIENT_SECRET=ats-secret-change-me \
  I9_USERNAME=ats.bot I9_PASSWORD='ats-Passw0rd!' I9_SIGNING_SECRET="$signing_secret" \
  RECEIVER_PORT="$receiver_port" PYTHONUNBUFFERED=1 \
  timeout "$deadline" "$venv/bin/python" "$example" 2>&1 | tee "$out" ||
  {
    rc=$?
    [ "$rc" -eq 124 ] && echo "partner example: FAILED: still running after ${deadline} s" >&2
    echo "partner example: FAILED (exit $rc)" >&2
    exit 1
  }
echo "partner example: passed in $(($(date +%s) - start)) s"
