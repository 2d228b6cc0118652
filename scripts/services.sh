#!/usr/bin/env bash
# Make sure PostgreSQL and RabbitMQ are running on this machine; start them if
# they are installed but down. Used by scripts/dev.sh, scripts/test.sh and .ci/run.
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # name port seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    port_open "$2" && return 0
    sleep 0.1
  done
  echo "error: $1 did not open port $2 within $3 s" >&2
  return 1
}

if ! port_open 5432; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL..."
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    wait_port PostgreSQL 5432 60
  else
    echo "error: PostgreSQL is not listening on 127.0.0.1:5432 and is not installed here." >&2
    echo "       Start one (e.g. 'docker compose up -d postgres') or set DATABASE_URL / TEST_DATABASE_URL." >&2
    exit 1
  fi
fi
for _ in $(seq 1 100); do
  pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && break
  command -v pg_isready >/dev/null || break
  sleep 0.2
done

if ! port_open 5672; then
  if command -v rabbitmq-server >/dev/null; then
    echo "starting RabbitMQ..."
    rabbitmq-server -detached
    wait_port RabbitMQ 5672 120
    rabbitmqctl await_startup >/dev/null
  else
    echo "error: RabbitMQ is not listening on 127.0.0.1:5672 and is not installed here." >&2
    echo "       Start one (e.g. 'docker compose up -d rabbitmq') or set AMQP_URL." >&2
    exit 1
  fi
fi
