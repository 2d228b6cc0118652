#!/usr/bin/env bash
# Run every test: unit tests and the integration tests against the real
# Postgres, RabbitMQ, an SMTP server, HTTP partners and headless Chromium
# (each test creates and drops its own database and queues), then the log
# scan over everything the run logged.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh

# The browser test drives Debian's chromium through chromedriver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  echo "installing chromium and chromium-driver for the browser test..."
  sudo_=""
  [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_ apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 ||
    { $sudo_ apt-get update -q >/dev/null && $sudo_ apt-get install -y -q chromium chromium-driver >/dev/null; }
fi

# The inspection PDF test reads the text of a rendered PDF with pdftotext
# (poppler-utils; docs/inspection.md).
if ! command -v pdftotext >/dev/null; then
  echo "installing poppler-utils for the inspection PDF test..."
  sudo_=""
  [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_ apt-get install -y -q poppler-utils >/dev/null 2>&1 ||
    { $sudo_ apt-get update -q >/dev/null && $sudo_ apt-get install -y -q poppler-utils >/dev/null; }
fi

# Every log line of the run (the tests' in-process API and workers at debug
# level, and the stderr of the binaries they start) is kept here, then
# scanned for SSNs, passwords, secrets, tokens and keys (tests/src/log_scan.rs).
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export I9_TEST_LOG_DIR="$target_dir/test-logs"
rm -rf "$I9_TEST_LOG_DIR"
mkdir -p "$I9_TEST_LOG_DIR"

cargo test --workspace --locked "$@"

# The contract check (scripts/contract.sh): schemathesis against the document
# the API serves; its API's log goes under I9_TEST_LOG_DIR for the scan below.
# A filtered run (arguments given) skips it.
[ "$#" -eq 0 ] && scripts/contract.sh

# The partner quick start of docs/partners.md, run as shown there against
# i9-api and i9-worker (scripts/partner-example.sh); their logs and its
# output go under I9_TEST_LOG_DIR too. Skipped by a filtered run as well.
[ "$#" -eq 0 ] && scripts/partner-example.sh

# The Kubernetes files (scripts/deploy-check.sh): valid, and every job kind
# served. Skipped by a filtered run too.
[ "$#" -eq 0 ] && scripts/deploy-check.sh

# A filtered run (arguments given) may log nothing; the whole run must.
require=()
[ "$#" -eq 0 ] && require=(--require-lines)
cargo run --quiet --locked -p i9-tests --bin i9-log-scan -- "$I9_TEST_LOG_DIR" ${require[@]+"${require[@]}"}
