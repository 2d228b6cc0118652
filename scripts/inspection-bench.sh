#!/usr/bin/env bash
# The inspection export benchmark (BENCHMARKS.md, "Inspection export"):
# a scratch database with the example organization and N Completed I-9s of
# legal entity acme-us (bench/sql/inspection-seed.sql), then
# `i9-admin inspection` on them under /usr/bin/time -v (release build), then
# the bare rendering (common/examples/inspection_render.rs) of as many.
#
#   scripts/inspection-bench.sh [N]     (default 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"
scripts/services.sh
cargo build --release --locked -p i9-admin
cargo build --release --locked -p i9-common --example inspection_render
target="${CARGO_TARGET_DIR:-target}"
db="i9_inspection_bench_$$"
export APP_ENV=development ALLOW_PRIVATE_CALLBACKS=true
export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db"
out="$(mktemp -d)/export"
cleanup() { psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null || true; rm -rf "$(dirname "$out")"; }
trap cleanup EXIT
"$target/release/i9-admin" migrate >/dev/null
"$target/release/i9-admin" seed fixtures/org.json >/dev/null
seed_started=$(date +%s.%N)
psql -q -h 127.0.0.1 -U postgres -d "$db" -v n="$n" -f bench/sql/inspection-seed.sql
echo "loaded in $(echo "$(date +%s.%N) - $seed_started" | bc) s"
le=$(psql -tA -h 127.0.0.1 -U postgres -d "$db" -c "SELECT id FROM legal_entities WHERE seed_key = 'acme-us'")
/usr/bin/time -v "$target/release/i9-admin" inspection --legal-entity "$le" --out "$out" 2>"$out.time"
grep -E "Elapsed|Maximum resident|Percent of CPU" "$out.time"
echo "files: $(ls "$out" | wc -l), index rows: $(($(wc -l <"$out/index.csv") - 1)), size: $(du -sh "$out" | cut -f1)"
/usr/bin/time -v "$target/release/examples/inspection_render" "$n" 2>"$out.bare"
grep -E "Elapsed|Maximum resident" "$out.bare"
