#!/usr/bin/env bash
# Run every test: unit tests and the integration tests against the real
# Postgres, RabbitMQ, an SMTP server, HTTP partners and headless Chromium
# (each test creates and drops its own database and queues).
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

cargo test --workspace --locked "$@"
