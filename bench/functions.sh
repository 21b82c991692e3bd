#!/usr/bin/env bash
# Functions and flows benchmark of `svc serve`, each figure against a reference measured in the
# same run on the same server (examples/functions_load.rs does the work):
#   - invocations/s of a trivial function through `POST /svc/processes/execute` against
#     `GET /svc/` with the same concurrent HTTP clients;
#   - tag-change → tag-write latency (p50/p99) through a flow (tag-in → svc.tag.write, and with a
#     function node between) against a plain MQTT round trip through the same broker.
#
#   bash bench/functions.sh
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_CLIENTS (8), BENCH_SECONDS (5),
# BENCH_SAMPLES (2000), BENCH_SVC=<path> to measure an already built svc binary. The report is
# written to bench/functions-results.md (overwritten) with the machine, its load and the date.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
RESULTS="$ROOT/bench/functions-results.md"
PASSWORD="bench-$(date +%s)-$$"

log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ -n "${BENCH_SVC:-}" ]; then
    SVC=$(realpath "$BENCH_SVC")
    cargo build --release --quiet --example functions_load
else
    log "building (release): svc, example functions_load"
    cargo build --release --quiet --bin svc --example functions_load
    SVC="$ROOT/target/release/svc"
fi
TOOL="$ROOT/target/release/examples/functions_load"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/svc-functions-bench.XXXXXX")
SVC_PID=""
cleanup() {
    local status=$?
    if [ -n "$SVC_PID" ]; then
        kill "$SVC_PID" 2>/dev/null || true
        wait "$SVC_PID" 2>/dev/null || true
    fi
    if [ "$status" -ne 0 ] && [ -s "$WORK/svc.log" ]; then
        log "svc log (last lines):"
        tail -n 20 "$WORK/svc.log" >&2 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting svc serve (fresh data dir)"
env SVC_LOG="${SVC_LOG:-warn}" "$SVC" serve --data-dir "$WORK/data" \
    --http-port 0 --mqtt-port 0 --ws-port 0 --admin-password "$PASSWORD" \
    >"$WORK/svc.out" 2>"$WORK/svc.log" &
SVC_PID=$!
READY=""
for _ in $(seq 1 300); do
    READY=$(sed -n 's/^ready //p' "$WORK/svc.out")
    [ -n "$READY" ] && break
    kill -0 "$SVC_PID" 2>/dev/null || die "svc exited early"
    sleep 0.1
done
[ -n "$READY" ] || die "svc printed no ready line within 30s"
SVC_URL="http://$(echo "$READY" | sed -n 's/.*"http":"\([^"]*\)".*/\1/p')"
MQTT_PORT=$(echo "$READY" | sed -n 's/.*"mqtt":"[^"]*:\([0-9]*\)".*/\1/p')
log "svc ready: http $SVC_URL, mqtt port $MQTT_PORT"

TABLE=$("$TOOL" --url "$SVC_URL" --mqtt-port "$MQTT_PORT" --password "$PASSWORD" \
    --rounds "${BENCH_ROUNDS:-3}" --clients "${BENCH_CLIENTS:-8}" \
    --seconds "${BENCH_SECONDS:-5}" --samples "${BENCH_SAMPLES:-2000}")
RSS=$(awk '/VmRSS/ {printf "%.0f MB", $2 / 1024}' "/proc/$SVC_PID/status")

{
    echo "# Functions and flows benchmark"
    echo
    echo "\`bash bench/functions.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, svc $("$SVC" --version 2>/dev/null | head -1)."
    echo
    echo "$TABLE"
    echo
    echo "svc resident memory after the run: $RSS."
} >"$RESULTS"
cat "$RESULTS"
