#!/usr/bin/env bash
# Historian benchmark of `svc serve` against raw SQLite (rusqlite) on the same schema, measured in
# one run on the same machine (examples/historian_load.rs does the work):
#
#   bash bench/historian.sh
#
# (1) ingest: BENCH_INGEST values (200,000) published over MQTT at QoS 1 (4 publishers, an API
#     key as password) to one historized tag, payload `{"value":N,"timestamp":<epoch ms>}` one
#     second apart; values/s = values / (first publish → the last value is a row of `hist_points`,
#     polled read-only on svc's database file every 20 ms). Reference: a fresh database with the
#     DDL of `hist_series`/`hist_points` copied from svc's database, svc's pragmas (WAL,
#     synchronous=NORMAL) and the same rows inserted in transactions of 5,000. Goal: svc >= 50% of
#     raw (a second raw row uses svc's own statement shape). An extra row (no goal) publishes bare numbers instead, so every value takes the broker's
#     receive time and many share a millisecond (svc's `seq` path).
# (2) query: BENCH_POINTS points (1,000,000) of one tag, loaded over MQTT the same way, read with
#     `PATCH /svc/historian {"topic","start_time","end_time","limit"}` in pages of 100,000
#     (LIMIT_MAX in src/historian/window.rs; each page starts 1 ms after the previous page's last
#     timestamp; time = sum of the requests until each body is fully received, JSON parsing by the
#     client excluded), and a single 100,000-point request. Reference: the same rows read straight
#     from svc's database file (`SELECT ts, value FROM hist_points WHERE series=? AND ts>=? AND
#     ts<? ORDER BY ts, seq`, every row read). Goal: the full range through svc >= 30% of raw.
#
# BENCH_ROUNDS rounds (default 3) interleave svc and raw; the report shows the round with the median
# rate per measurement. Results are written to bench/historian-results.md (overwritten) with the
# machine, its load and the date; svc is stopped on exit.
#
# Settings (environment): BENCH_INGEST (200000), BENCH_POINTS (1000000), BENCH_PUBLISHERS (4),
# BENCH_ROUNDS (3), BENCH_NICE (run svc and the load tools under `nice -n <value>`; a negative
# value, as root, keeps other jobs on a shared machine from stealing the benchmark's CPU),
# SVC_LOG (default info; svc's log is kept only on failure), BENCH_STRICT=1 to exit 1 when a goal
# is missed, BENCH_SVC=<path> to measure an already built svc binary instead of building
# target/release/svc.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
INGEST=${BENCH_INGEST:-200000}
POINTS=${BENCH_POINTS:-1000000}
PUBLISHERS=${BENCH_PUBLISHERS:-4}
ROUNDS=${BENCH_ROUNDS:-3}
PAGE=100000
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/historian-results.md"
NICE=()
if [ -n "${BENCH_NICE:-}" ]; then NICE=(nice -n "$BENCH_NICE"); fi

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
command -v curl >/dev/null 2>&1 || install_deb curl
build_tools historian_load
TOOL="$ROOT/target/release/examples/historian_load"

# --- svc ----------------------------------------------------------------------------------
bench_workdir historian-bench
start_svc "${NICE[@]}"
MQTT_PORT=$SVC_MQTT_PORT
login_admin
API_KEY=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
[ -n "$API_KEY" ] || die "no API key"
TAGS="bench/query bench/ingest-rt"
for round in $(seq 1 "$ROUNDS"); do TAGS="$TAGS bench/ingest-$round"; done
log "declaring historized tags: $TAGS"
for tag in $TAGS; do
    call POST /svc/tags "{\"path\":\"$tag\",\"historize\":true}" >/dev/null
done

field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
# ingest TOPIC COUNT [extra flags] : publishes over MQTT and waits for the rows.
ingest() {
    local topic=$1 count=$2 out
    shift 2
    out=$("${NICE[@]}" "$TOOL" ingest --port "$MQTT_PORT" --username bench --password "$API_KEY" \
        --topic "$topic" --count "$count" --publishers "$PUBLISHERS" --db "$DB" "$@") ||
        die "ingest into $topic failed"
    log "  svc ingest $topic: $out"
    grep -q '"complete":true' <<<"$out" || die "svc did not historize every value of $topic: $out"
    echo "$out"
}
raw_ingest() {
    local out
    out=$("${NICE[@]}" "$TOOL" raw-ingest --schema-from "$DB" --dir "$WORK/raw" --count "$1" --batch 5000 "${@:2}") ||
        die "raw ingest failed"
    log "  raw ingest: $out"
    echo "$out"
}
svc_query() {
    local out
    out=$("${NICE[@]}" "$TOOL" query --url "$SVC_URL" --token "$TOKEN" --topic bench/query \
        --count "$1" --page "$PAGE") || die "query failed"
    log "  svc query $1: $out"
    [ "$(field "$out" points)" = "$1" ] || die "svc returned $(field "$out" points) points, expected $1"
    echo "$out"
}
raw_query() {
    local out
    out=$("${NICE[@]}" "$TOOL" raw-query --db "$DB" --topic bench/query --count "$1") ||
        die "raw query failed"
    log "  raw query $1: $out"
    [ "$(field "$out" points)" = "$1" ] || die "raw query read $(field "$out" points) rows, expected $1"
    echo "$out"
}

# --- measure ------------------------------------------------------------------------------
# Lines in $WORK/results: "<measurement> <rate> <seconds>".
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
    log "ingest round $round of $ROUNDS: $INGEST values"
    out=$(ingest "bench/ingest-$round" "$INGEST")
    echo "ingest_svc $(field "$out" values_per_s) $(field "$out" seconds)"
    awk -v s="$(field "$out" seconds)" -v p="$(field "$out" publish_seconds)" \
        'BEGIN { printf "ingest_lag %.0f %.3f\n", (s - p) * 1000, p }'
    out=$(raw_ingest "$INGEST")
    echo "ingest_raw $(field "$out" values_per_s) $(field "$out" seconds)"
    out=$(raw_ingest "$INGEST" --svc-sql)
    echo "ingest_raw_svc_sql $(field "$out" values_per_s) $(field "$out" seconds)"
done >>"$WORK/results"
log "ingest with the broker's receive time as timestamp: $INGEST values"
out=$(ingest bench/ingest-rt "$INGEST" --receive-time)
echo "ingest_svc_rt $(field "$out" values_per_s) $(field "$out" seconds)" >>"$WORK/results"

log "loading $POINTS points into bench/query over MQTT"
LOAD_OUT=$(ingest bench/query "$POINTS")
echo "load_svc $(field "$LOAD_OUT" values_per_s) $(field "$LOAD_OUT" seconds)" >>"$WORK/results"

log "query warm-up"
svc_query "$POINTS" >/dev/null
raw_query "$POINTS" >/dev/null
for round in $(seq 1 "$ROUNDS"); do
    log "query round $round of $ROUNDS"
    out=$(svc_query "$POINTS")
    echo "query_svc $(field "$out" points_per_s) $(field "$out" seconds)"
    out=$(raw_query "$POINTS")
    echo "query_raw $(field "$out" points_per_s) $(field "$out" seconds)"
    out=$(svc_query "$PAGE")
    echo "page_svc $(field "$out" points_per_s) $(field "$out" seconds)"
    out=$(raw_query "$PAGE")
    echo "page_raw $(field "$out" points_per_s) $(field "$out" seconds)"
done >>"$WORK/results"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
SVC_RSS=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$SVC_PID/status")
SVC_HWM=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$SVC_PID/status")
DB_MB=$(du -cm "$DB"* | tail -n 1 | cut -f1)

# --- report -------------------------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
REPORT=$(awk -v n_ingest="$INGEST" -v n_points="$POINTS" -v page="$PAGE" -v rss="$SVC_RSS" -v hwm="$SVC_HWM" '
    { k = $1; c[k]++; r[k, c[k]] = $2; s[k, c[k]] = $3 }
    function pick(k,    i, j, t, idx) {
        for (i = 1; i <= c[k]; i++) idx[i] = i
        for (i = 1; i <= c[k]; i++) for (j = i + 1; j <= c[k]; j++)
            if (r[k, idx[j]] < r[k, idx[i]]) { t = idx[i]; idx[i] = idx[j]; idx[j] = t }
        rate[k] = r[k, idx[int((c[k] + 1) / 2)]]; secs[k] = s[k, idx[int((c[k] + 1) / 2)]]
        all[k] = ""
        for (i = 1; i <= c[k]; i++) all[k] = all[k] (i > 1 ? ", " : "") r[k, i]
    }
    function row(name, k, unit, ref) {
        pick(k)
        printf "| %s | %.0f %s | %s | %.3f s | %s |\n", name, rate[k], unit, all[k], secs[k], ref == "" ? "" : sprintf("**%.0f%%**", 100 * rate[k] / rate[ref])
    }
    END {
        print "| measurement | rate (median) | all rounds | seconds | svc / raw |"
        print "|---|---:|---|---:|---:|"
        row(sprintf("ingest: raw rusqlite, %d rows in transactions of 5,000", n_ingest), "ingest_raw", "values/s", "")
        row(sprintf("ingest: raw rusqlite with svc'"'"'s statement (`ON CONFLICT DO NOTHING`, `BEGIN IMMEDIATE`)"), "ingest_raw_svc_sql", "values/s", "")
        row(sprintf("ingest: svc, %d QoS 1 publishes → rows (payload timestamps)", n_ingest), "ingest_svc", "values/s", "ingest_raw")
        row(sprintf("ingest: svc, %d QoS 1 publishes → rows (receive-time timestamps; no goal)", n_ingest), "ingest_svc_rt", "values/s", "ingest_raw")
        row(sprintf("load: svc, %d QoS 1 publishes → rows (the query data)", n_points), "load_svc", "values/s", "")
        row(sprintf("query: raw SQLite scan of %d rows", n_points), "query_raw", "points/s", "")
        row(sprintf("query: svc `PATCH /svc/historian`, %d points in pages of %d", n_points, page), "query_svc", "points/s", "query_raw")
        row(sprintf("query: raw SQLite scan of %d rows", page), "page_raw", "points/s", "")
        row(sprintf("query: svc `PATCH /svc/historian`, one request of %d points", page), "page_svc", "points/s", "page_raw")
        print ""
        pick("ingest_lag")
        printf "- svc ingest, median round: the last PUBACK arrived %.3f s after the first publish, the last row %d ms later (the historian keeps up with the broker; the MQTT path sets the rate)\n", secs["ingest_lag"], rate["ingest_lag"]
        printf "- svc resident memory after the run: %.1f MB (peak %.1f MB)\n", rss / 1024, hwm / 1024
        ok_i = rate["ingest_svc"] >= 0.5 * rate["ingest_raw"]
        ok_q = rate["query_svc"] >= 0.3 * rate["query_raw"]
        printf "- ingest >= 50%% of raw: %.0f%% → %s\n", 100 * rate["ingest_svc"] / rate["ingest_raw"], ok_i ? "**met**" : "**NOT met**"
        printf "- query (%d points through svc) >= 30%% of raw: %.0f%% → %s\n", n_points, 100 * rate["query_svc"] / rate["query_raw"], ok_q ? "**met**" : "**NOT met**"
        exit (ok_i && ok_q) ? 0 : 3
    }' "$WORK/results") && GOALS=0 || GOALS=$?

{
    echo "# Historian benchmark: svc against raw SQLite"
    echo
    echo "Written by \`bench/historian.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc) CPUs, $CPU, $(uname -sr)"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}; nice: ${BENCH_NICE:-0} (svc and the load tools)"
    echo "- ingest: $PUBLISHERS MQTT publishers (rumqttc, QoS 1, API key) on one historized tag, payload \`{\"value\":N,\"timestamp\":<epoch ms>}\` 1 s apart; values/s = values / (first publish → count of the series' rows in \`hist_points\` reaches the total, polled read-only every 20 ms); raw: same DDL (copied from svc's database), WAL + synchronous=NORMAL, one prepared INSERT, 5,000 rows per transaction"
    echo "- query: $POINTS points of one tag (1 s apart); svc = \`PATCH /svc/historian\` with \`start_time\`, \`end_time\`, \`limit\` ≤ $PAGE (LIMIT_MAX), time until each response body is received, summed over pages; raw = \`SELECT ts, value FROM hist_points WHERE series=? AND ts>=? AND ts<? ORDER BY ts, seq\` on svc's database file, every row read (ts as integer, value as text); one untimed warm-up of each first"
    echo "- $ROUNDS interleaved round(s); the round with the median rate is shown; database after the run: ${DB_MB} MB"
    echo "- load average (1, 5, 15 min) before / after measuring: $LOAD_BEFORE / $LOAD_AFTER (anything above ~0.5 before means something else was running: treat the numbers as noisy)"
    echo
    echo "$REPORT"
} >"$RESULTS"

echo
echo "$REPORT"
echo
log "written to bench/historian-results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
