# syntax=docker/dockerfile:1
#
# One image for the whole service: i9-api (default command), i9-worker and
# i9-admin.
#
#   docker build -t i9-service:local .
#   docker run --rm i9-service:local i9-admin --help
#
# The SQL migrations are embedded in the binaries at compile time
# (sqlx::migrate! over migrations/), so the runtime image carries no SQL files.
# Configuration is read from the environment; see common/src/config.rs. No
# APP_ENV and no key is baked in: a container needs DATA_ENCRYPTION_KEYS and
# SSN_HASH_KEYS (or their single-key or _FILE forms), or refuses to start;
# only an explicit APP_ENV=development (docker-compose.yml) runs on the
# development keys.

########################################################################
# Build
########################################################################
FROM rust:1-bookworm AS builder
WORKDIR /src

# The whole workspace: every member's manifest must be present for cargo to
# resolve the workspace, migrations/ is read by sqlx::migrate!, and
# common/src/seed.rs include_str!s fixtures/org.json (`i9-admin seed` refuses
# its published passwords and secrets outside APP_ENV=development).
# .dockerignore keeps target/, .git/ and mail-out/ out of the context. The
# build reaches no database: the sqlx::query! macros are checked against the
# committed offline data in .sqlx/, as .cargo/config.toml (SQLX_OFFLINE=true)
# says; both come in with the rest.
COPY . .

# BuildKit cache mounts keep the crate registry and target/ between builds.
# target/ is a cache mount, so the binaries are copied out in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p i9-api -p i9-workers -p i9-admin \
 && mkdir -p /out \
 && cp target/release/i9-api target/release/i9-worker target/release/i9-admin /out/

########################################################################
# Runtime
########################################################################
FROM debian:bookworm-slim AS runtime

# ca-certificates: TLS to partners' callback URLs, SMTP and brokers.
# curl: container health checks (GET /healthz).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 i9 \
 && useradd --system --uid 10001 --gid i9 --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin i9

COPY --from=builder /out/ /usr/local/bin/

WORKDIR /app
# The example organization, for `i9-admin seed /app/fixtures/org.json`
# (development data: its passwords and secrets are public).
COPY fixtures/org.json /app/fixtures/org.json
# MAIL_DIR defaults to ./mail-out: mail is written there when SMTP_URL is unset.
RUN mkdir -p /app/mail-out && chown i9:i9 /app/mail-out

# The API's default BIND_ADDR is 127.0.0.1:8080, unreachable from outside a
# container; listen on every interface instead.
ENV BIND_ADDR=0.0.0.0:8080

USER i9:i9
EXPOSE 8080
CMD ["i9-api"]
