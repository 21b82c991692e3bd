#!/usr/bin/env bash
# Functions and flows benchmark of `svc serve`, each figure against a reference measured in the
# same run on the same server (examples/functions_load.rs does the work):
#   - invocations/s of a trivial function through `POST /svc/processes/execute` against
#     `GET /svc/` with the same concurrent HTTP clients, and of a JavaScript and a Python process
#     that keep a 10,000-entry map between their runs (warm runtimes, issue 38), and of the
#     trivial JavaScript and Python processes with `fresh_state` against their warm selves;
#   - tag-change → tag-write latency (p50/p99) through a flow (tag-in → svc.tag.write, and with a
#     function node between) against a plain MQTT round trip through the same broker.
#
#   bash bench/functions.sh
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_CLIENTS (8), BENCH_SECONDS (5),
# BENCH_SAMPLES (2000), BENCH_SVC=<path> to measure an already built svc binary,
# BENCH_SVC_BASELINE=<path> to measure a second binary (e.g. a build of main before a change) in
# the same rounds, each figure of svc reported against the baseline's, BENCH_PERF=<file>
# to record `perf record` of svc over the whole run (BENCH_PERF_ARGS, default `-g`). The report is
# written to bench/functions-results.md (overwritten) with the machine, its load and the date.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
RESULTS="$ROOT/bench/functions-results.md"
PASSWORD="bench-$(date +%s)-$$"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

build_tools functions_load
pin_cpus 0
TOOL="$TARGET/release/examples/functions_load"
bench_workdir functions-bench
BASELINE=${BENCH_SVC_BASELINE:-}
BASELINE_ARGS=()
if [ -n "$BASELINE" ]; then
    [ -x "$BASELINE" ] || die "BENCH_SVC_BASELINE=$BASELINE is not an executable"
    SVC=$BASELINE SVC_DATA="$WORK/baseline-data" SVC_NAME=baseline SVC_LOG=${SVC_LOG:-warn} start_svc "${SERVER_PIN[@]}"
    BASELINE_ARGS=(--baseline-url "$SVC_URL" --baseline-mqtt-port "$SVC_MQTT_PORT")
fi
SVC_LOG=${SVC_LOG:-warn} start_svc "${SERVER_PIN[@]}"
if [ -n "${BENCH_PERF:-}" ]; then
    perf record ${BENCH_PERF_ARGS:--g} -o "$BENCH_PERF" -p "$SVC_PID" 2>"$WORK/perf.log" &
    PERF_PID=$!
fi

TABLE=$("$TOOL" --url "$SVC_URL" --mqtt-port "$SVC_MQTT_PORT" --password "$PASSWORD" \
    --rounds "${BENCH_ROUNDS:-3}" --clients "${BENCH_CLIENTS:-8}" \
    --seconds "${BENCH_SECONDS:-5}" --samples "${BENCH_SAMPLES:-2000}" "${BASELINE_ARGS[@]}")
RSS=$(awk '/VmRSS/ {printf "%.0f MB", $2 / 1024}' "/proc/$SVC_PID/status")
if [ -n "${PERF_PID:-}" ]; then
    kill -INT "$PERF_PID"
    wait "$PERF_PID" || true
    log "perf profile of svc over the whole run: $BENCH_PERF"
fi

{
    echo "# Functions and flows benchmark"
    echo
    echo "\`bash bench/functions.sh\` on $(date -u +%Y-%m-%d), $(nproc --all) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, $("$SVC" --version 2>/dev/null | head -1)."
    echo
    echo "$TABLE"
    echo
    echo "svc resident memory after the run: $RSS.${BASELINE:+ Baseline: $BASELINE ($("$BASELINE" --version 2>/dev/null | head -1)).}"
} >"$RESULTS"
cat "$RESULTS"
