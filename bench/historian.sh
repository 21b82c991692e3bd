#!/usr/bin/env bash
# Historian benchmark of `svc serve` against raw SQLite (rusqlite) and the historians a plant
# compares it with (VictoriaMetrics 1.79, InfluxDB 1.6, Prometheus 2.42, Debian's packages,
# installed when missing), on the same data in one run on the same machine
# (examples/historian_load.rs and examples/plant_load/ do the work):
#
#   bash bench/historian.sh
#
# Part `plant`, bytes on disk per point (issue 33). The plant data set of
# examples/common/plant_data.rs (five two-decimal random walks, an integer counter, a rare
# boolean, a step setpoint, a four-decimal analog, a string state; deterministic), 1 Hz,
# BENCH_PLANT_POINTS points in all (500,000: 50,000 per signal), from 2026-01-01:
#   - svc on SQLite and svc on PostgreSQL (a private cluster, Debian's package), each a fresh
#     `svc serve`: the tags declared historized, then the nine numeric signals published over
#     MQTT QoS 1 as `{"value":V,"timestamp":<ms>}` (BENCH_PUBLISHERS connections, each tag from
#     one connection in time order), done when the historian's `count` of every tag is complete;
#     then a settle: until `hist_points` holds fewer than BENCH_SETTLE_ROWS rows (5,000) or the
#     historian's tables did not change for BENCH_SETTLE_QUIET s (15), at most
#     BENCH_SETTLE_TIMEOUT s (300), so the background closing of hot rows into blocks is done;
#     then the bytes of every table named `hist_*` (SQLite: `dbstat` pages of the tables and
#     their indexes; PostgreSQL: `pg_total_relation_size` with partitions, indexes and TOAST,
#     after a plain VACUUM). Then the string state the same way, and the bytes again: numeric
#     bytes/point over the numeric points, all bytes/point over all points.
#   - VictoriaMetrics (fresh, its own data dir): the numeric signals through `/api/v1/import`
#     (booleans as 0/1; it stores numbers only), `/internal/force_flush` and
#     `/internal/force_merge`, until idle; every file under its data dir.
#   - InfluxDB 1.6: the numeric signals, then the state, through `/write?precision=ms` (line
#     protocol, a measurement per signal, values typed as published), each followed by the
#     cache snapshot (2 s cold) and full compaction (5 s cold); the shard files and the WAL
#     (its preallocated series file left out and reported apart).
#   - Prometheus: the numeric signals as OpenMetrics, `promtool tsdb create-blocks-from
#     openmetrics` with 31-day blocks; every file of the blocks.
#   - BENCH_PLANT_SDT=1 adds svc on SQLite with swinging-door compression at 0.1 % of each
#     tag's span: the numeric tags declared with BENCH_PLANT_SDT_FIELDS (default
#     `{"compression":{"deviation_percent":0.1,"span":SPAN}}`, SPAN = the signal's range over
#     the run); reported "not measured" with the reason when svc refuses the setting, the tag
#     does not read back with it, or every point was stored anyway.
#   Goals: svc on SQLite at or below VictoriaMetrics, numeric signals; PostgreSQL at most 2x
#   SQLite; swinging door at most 1/4 of lossless.
# Part `reads`, ingest and the raw range read on one `svc serve` on SQLite:
#   (1) ingest: BENCH_INGEST values (200,000) published over MQTT at QoS 1 (4 publishers, an
#       API key as password) to one historized tag, payload `{"value":N,"timestamp":<epoch
#       ms>}` one second apart; values/s = values / (first publish → the last value is a row of
#       `hist_points`, polled read-only on svc's database file every 20 ms; once the database
#       keeps blocks, the historian's `count` through the API). Reference: a fresh database with
#       the DDL of `hist_series`/`hist_points` copied from svc's database, svc's pragmas (WAL,
#       synchronous=NORMAL) and the same rows inserted in transactions of 5,000. Goal: svc >=
#       50% of raw (a second raw row uses svc's own statement shape). An extra row (no goal)
#       publishes bare numbers instead, so every value takes the broker's receive time.
#   (2) query: BENCH_POINTS points (1,000,000) of one tag, loaded over MQTT the same way, read
#       with `PATCH /svc/historian {"topic","start_time","end_time","limit"}` in pages of
#       100,000 (LIMIT_MAX in src/historian/window.rs; each page starts 1 ms after the previous
#       page's last timestamp; time = sum of the requests until each body is fully received,
#       JSON parsing by the client excluded), and a single 100,000-point request. References:
#       the same rows read straight from svc's database file (`SELECT ts, value FROM hist_points
#       WHERE series=? AND ts>=? AND ts<? ORDER BY ts, seq`, every row read; once svc keeps
#       blocks, from a row-per-point copy made by raw-ingest), and the same points imported
#       into VictoriaMetrics read with one `/api/v1/export` (until the body is received).
#       Goals: the full range through svc >= 30% of raw and >= VictoriaMetrics's export.
# Part `year`: one tag (walk 0 of the plant set) at 1 Hz for a year, BENCH_YEAR_POINTS points
#   (31,536,000) from 2025-01-01, published into the same svc over MQTT QoS 1
#   (BENCH_YEAR_PUBLISHERS connections, 4, connection k of K sending points k, k + K, …, so
#   the tag arrives nearly in order; time until the historian's `count` is complete) and
#   imported into VictoriaMetrics (time until `/api/v1/import` answered; its merge after that is
#   a note); then BENCH_YEAR_QUERIES charts (30) of 500 buckets of min, mean and max over the
#   year: svc = three `PATCH /svc/historian {"bucket","aggregation"}` sent at once,
#   VictoriaMetrics = three `query_range` of `min_over_time`, `avg_over_time`, `max_over_time`
#   with step = bucket (`nocache=1`); p50/p99 of a whole chart, after one untimed chart. A
#   system's charts stop early once they took BENCH_CHART_BUDGET s (600) and the report says
#   how many were drawn. Goal: svc p99 <= 50 ms.
#
# BENCH_SVC_BASELINE=<an svc binary> (e.g. a build of main before a change) measures a second
# svc beside svc, and the report gives svc / baseline for each measurement. Part `reads`: a
# second `svc serve` takes the same ingests and loads (so any earlier version can be the
# baseline, whatever its storage format), and its queries run interleaved with svc's. Part
# `year`: once the year is in, svc is stopped, its data dir copied, svc restarted on it and the
# baseline started on the copy (no second year's ingest, so the baseline must read svc's block
# format: BENCH_YEAR_BASELINE names another binary for it, or none when set empty), and the
# charts run svc, baseline, svc.
#
# BENCH_ROUNDS rounds (default 3) interleave svc and its references in part `reads`; the report
# shows the round with the median rate per measurement. Results are written to
# bench/historian-results.md (overwritten) with the machine, its load and the date; every
# process started is stopped on exit.
#
# Settings (environment): BENCH_PARTS ("plant reads year"; a subset runs only those parts),
# BENCH_PLANT_POINTS, BENCH_PLANT_SDT, BENCH_PLANT_SDT_FIELDS, BENCH_SETTLE_ROWS,
# BENCH_SETTLE_QUIET, BENCH_SETTLE_TIMEOUT, BENCH_INGEST, BENCH_POINTS, BENCH_PUBLISHERS (4),
# BENCH_ROUNDS (3), BENCH_YEAR_POINTS, BENCH_YEAR_PUBLISHERS, BENCH_YEAR_QUERIES,
# BENCH_CHART_BUDGET, BENCH_YEAR_BASELINE, BENCH_SVC_BASELINE_ARGS (the baseline's options,
# default BENCH_SVC_ARGS), BENCH_NICE
# (run svc and the load tools under `nice -n <value>`; a negative value, as root, keeps other
# jobs on a shared machine from stealing the benchmark's CPU), SVC_LOG (default info; logs are
# shown only on failure), BENCH_STRICT=1 to exit 1 when a goal is missed, BENCH_SVC=<path> to
# measure an already built svc binary instead of building target/release/svc, BENCH_SVC_ARGS
# (options added to every `svc serve`, e.g. `--historian-seal-idle 10s`), BENCH_SVC_BASELINE
# (above).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
PARTS=" ${BENCH_PARTS:-plant reads year} "
PLANT_POINTS=${BENCH_PLANT_POINTS:-500000}
PER_SIGNAL=$((PLANT_POINTS / 10))
INGEST=${BENCH_INGEST:-200000}
POINTS=${BENCH_POINTS:-1000000}
PUBLISHERS=${BENCH_PUBLISHERS:-4}
ROUNDS=${BENCH_ROUNDS:-3}
YEAR_POINTS=${BENCH_YEAR_POINTS:-31536000}
YEAR_PUBLISHERS=${BENCH_YEAR_PUBLISHERS:-4}
YEAR_QUERIES=${BENCH_YEAR_QUERIES:-30}
CHART_BUDGET=${BENCH_CHART_BUDGET:-600}
YEAR_START_MS=1735689600000 # 2025-01-01T00:00:00Z
SDT_FIELDS=${BENCH_PLANT_SDT_FIELDS:-'{"compression":{"deviation_percent":0.1,"span":SPAN}}'}
SETTLE=(--settle --settle-rows "${BENCH_SETTLE_ROWS:-5000}" --settle-quiet "${BENCH_SETTLE_QUIET:-15}"
    --settle-timeout "${BENCH_SETTLE_TIMEOUT:-300}")
PAGE=100000
# The single-request read: one page, or all the points when there are fewer.
ONE_PAGE=$((POINTS < PAGE ? POINTS : PAGE))
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/historian-results.md"
NICE=()
if [ -n "${BENCH_NICE:-}" ]; then NICE=(nice -n "$BENCH_NICE"); fi
SVC_SERVE_ARGS=${BENCH_SVC_ARGS:-}
[ "$PER_SIGNAL" -gt 0 ] || { echo "BENCH_PLANT_POINTS must be at least 10" >&2; exit 2; }

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
# shellcheck source=bench/historian-refs.sh
source "$ROOT/bench/historian-refs.sh"
command -v curl >/dev/null 2>&1 || install_deb curl
build_tools historian_load plant_load
TOOL="$TARGET/release/examples/historian_load"
PLANT="$TARGET/release/examples/plant_load"
bench_workdir historian-bench

part() { [[ $PARTS == *" $1 "* ]]; }
field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
text_field() { sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" <<<"$1"; }
# plant SUBCOMMAND FLAG… : examples/plant_load, its JSON line on stdout; dies on failure.
plant() {
    local out
    out=$("${NICE[@]}" "$PLANT" "$@") || die "plant_load $1 failed"
    log "  plant_load $1: $out"
    echo "$out"
}
# new_api_key : an API key of the running svc (its password for MQTT).
new_api_key() {
    local key
    key=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$key" ] || die "no API key"
    echo "$key"
}
NOTES=()
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# --- part plant: bytes on disk per point ----------------------------------------------------
# plant_into_svc SYSTEM SET… : publishes each SET into the running svc in turn, measuring the
# historian's tables after each; lines "plant SYSTEM <numeric|all> BYTES POINTS".
plant_into_svc() {
    local system=$1 key out points=0 set label extra=()
    shift
    [[ $DB == postgres* ]] && extra=(--vacuum)
    key=$(new_api_key)
    for set in "$@"; do
        plant declare --url "$SVC_URL" --token "$TOKEN" --set "$set" --per-signal "$PER_SIGNAL" >/dev/null
        out=$(plant publish --port "$SVC_MQTT_PORT" --password "$key" --url "$SVC_URL" \
            --token "$TOKEN" --set "$set" --per-signal "$PER_SIGNAL" --publishers "$PUBLISHERS")
        points=$((points + $(field "$out" points)))
        out=$(plant footprint --db "$DB" "${SETTLE[@]}" "${extra[@]}")
        label=all
        [ "$set" = numeric ] && label=numeric
        NOTES+=("$system, $label signals: settle $(field "$out" seconds) s ($(text_field "$out" ended)), $(field "$out" hot_rows) rows left in hist_points; bytes by table: $(sed -n 's/.*"tables":\({[^}]*}\).*/\1/p' <<<"$out")")
        echo "plant $system $label $(field "$out" bytes) $points"
    done
}

# plant_sdt : svc on SQLite with swinging door on the numeric tags; a "plant" line, or a note
# saying why it was not measured.
plant_sdt() {
    local key out err="$WORK/sdt-declare.err" total=$((9 * PER_SIGNAL))
    SVC_NAME=svc-plant-sdt SVC_DATA=$WORK/data-plant-sdt SVC_DATABASE="" start_svc "${NICE[@]}"
    login_admin
    if ! "$PLANT" declare --url "$SVC_URL" --token "$TOKEN" --set numeric --per-signal "$PER_SIGNAL" \
        --tag-fields "$SDT_FIELDS" >/dev/null 2>"$err"; then
        SDT_NOTE="not measured: svc refused the compression setting ($(tail -n 1 "$err" | sed 's/^plant_load declare: //'))"
    else
        key=$(new_api_key)
        out=$(plant publish --port "$SVC_MQTT_PORT" --password "$key" --url "$SVC_URL" --token "$TOKEN" \
            --set numeric --per-signal "$PER_SIGNAL" --publishers "$PUBLISHERS" --expect any)
        if [ "$(field "$out" stored)" -ge "$total" ]; then
            SDT_NOTE="not measured: svc stored all $total points with the setting $SDT_FIELDS (it had no effect)"
        else
            NOTES+=("svc_sqlite_sdt: svc kept $(field "$out" stored) of the $total points published ($PER_SIGNAL per tag), by tag: $(sed -n 's/.*"stored_by_tag":\({[^}]*}\).*/\1/p' <<<"$out")")
            out=$(plant footprint --db "$DB" "${SETTLE[@]}")
            echo "plant svc_sqlite_sdt numeric $(field "$out" bytes) $total" >>"$WORK/results"
        fi
    fi
    [ -z "${SDT_NOTE:-}" ] || log "swinging door: $SDT_NOTE"
    stop_pid "$SVC_PID"
}

if part plant; then
    log "plant data set: $PER_SIGNAL points per signal"
    SVC_NAME=svc-plant-sqlite SVC_DATA=$WORK/data-plant-sqlite SVC_DATABASE="" start_svc "${NICE[@]}"
    login_admin
    plant_into_svc svc_sqlite numeric state >>"$WORK/results"
    stop_pid "$SVC_PID"

    start_postgres
    SVC_NAME=svc-plant-postgres SVC_DATA=$WORK/data-plant-postgres SVC_DATABASE=$(pg_database plant) \
        start_svc "${NICE[@]}"
    login_admin
    plant_into_svc svc_postgres numeric state >>"$WORK/results"
    stop_pid "$SVC_PID"
    stop_pid "$PG_PID"

    SDT_NOTE=""
    if [ "${BENCH_PLANT_SDT:-0}" = 1 ]; then plant_sdt; fi

    start_victoria vm-plant
    plant vm-import --url "$VM_URL" --set numeric --per-signal "$PER_SIGNAL" >/dev/null
    NOTES+=("VictoriaMetrics came to rest $(vm_settle) s after force_flush and force_merge")
    echo "plant victoriametrics numeric $(vm_bytes) $((9 * PER_SIGNAL))" >>"$WORK/results"
    stop_pid "$VM_PID"

    start_influx
    plant influx-write --url "$INFLUX_URL" --set numeric --per-signal "$PER_SIGNAL" >/dev/null
    NOTES+=("InfluxDB came to rest $(influx_settle) s after the numeric signals")
    echo "plant influxdb numeric $(influx_bytes) $((9 * PER_SIGNAL))" >>"$WORK/results"
    plant influx-write --url "$INFLUX_URL" --set state --per-signal "$PER_SIGNAL" >/dev/null
    NOTES+=("InfluxDB came to rest $(influx_settle) s after the state; its series file: $(influx_series_note)")
    echo "plant influxdb all $(influx_bytes) $((10 * PER_SIGNAL))" >>"$WORK/results"
    stop_pid "$INFLUX_PID"

    plant openmetrics --out "$WORK/plant.om" --set numeric --per-signal "$PER_SIGNAL" >/dev/null
    PROM_BYTES=$(prom_blocks "$WORK/plant.om" "$WORK/prometheus")
    PROM_BLOCKS=$(find "$WORK/prometheus" -mindepth 1 -maxdepth 1 -type d | wc -l)
    NOTES+=("Prometheus: $PROM_BLOCKS block(s) written by promtool")
    echo "plant prometheus numeric $PROM_BYTES $((9 * PER_SIGNAL))" >>"$WORK/results"
    awk '$1 == "plant" && ($4 + 0 <= 0 || $5 + 0 <= 0) { exit 1 }' "$WORK/results" ||
        die "a plant measurement came out empty: $(grep '^plant' "$WORK/results")"
fi

# --- parts reads and year: one svc on SQLite --------------------------------------------------
if part reads || part year; then
    SVC_NAME=svc SVC_DATA=$WORK/data SVC_DATABASE="" start_svc "${NICE[@]}"
    MAIN_PID=$SVC_PID
    login_admin
    API_KEY=$(new_api_key)
    start_victoria vm-reads
fi
BASELINE=${BENCH_SVC_BASELINE:-}
# An older baseline may not know an option of today's `svc serve`.
BASE_SERVE_ARGS=${BENCH_SVC_BASELINE_ARGS-$SVC_SERVE_ARGS}
if [ -n "$BASELINE" ] && part reads; then
    [ -x "$BASELINE" ] || die "BENCH_SVC_BASELINE=$BASELINE is not an executable"
    MAIN_SVC=("$SVC_URL" "$SVC_MQTT_PORT" "$DB" "$TOKEN" "$API_KEY")
    SVC=$BASELINE SVC_NAME=baseline SVC_DATA=$WORK/baseline-data SVC_DATABASE="" \
        SVC_SERVE_ARGS=$BASE_SERVE_ARGS start_svc "${NICE[@]}"
    login_admin
    BASE_SVC=("$SVC_URL" "$SVC_MQTT_PORT" "$DB" "$TOKEN" "$(new_api_key)")
    SVC_URL=${MAIN_SVC[0]} SVC_MQTT_PORT=${MAIN_SVC[1]} DB=${MAIN_SVC[2]} TOKEN=${MAIN_SVC[3]}
fi
# on_baseline CMD…: runs CMD (a function below) against the baseline svc instead.
on_baseline() {
    local SVC_URL=${BASE_SVC[0]} SVC_MQTT_PORT=${BASE_SVC[1]} DB=${BASE_SVC[2]} TOKEN=${BASE_SVC[3]}
    local API_KEY=${BASE_SVC[4]}
    "$@"
}

# ingest TOPIC COUNT [extra flags] : publishes over MQTT and waits until svc holds the values.
ingest() {
    local topic=$1 count=$2 out
    shift 2
    out=$("${NICE[@]}" "$TOOL" ingest --port "$SVC_MQTT_PORT" --username bench --password "$API_KEY" \
        --topic "$topic" --count "$count" --publishers "$PUBLISHERS" --db "$DB" \
        --url "$SVC_URL" --token "$TOKEN" "$@") || die "ingest into $topic failed"
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
    out=$("${NICE[@]}" "$TOOL" query --url "${2:-$SVC_URL}" --token "$TOKEN" --topic bench/query \
        --count "$1" --page "$PAGE") || die "query failed"
    log "  svc query $1: $out"
    [ "$(field "$out" points)" = "$1" ] || die "svc returned $(field "$out" points) points, expected $1"
    echo "$out"
}
raw_query() {
    local out
    out=$("${NICE[@]}" "$TOOL" raw-query --db "$RAW_DB" --topic "$RAW_TOPIC" --count "$1") ||
        die "raw query failed"
    log "  raw query $1: $out"
    [ "$(field "$out" points)" = "$1" ] || die "raw query read $(field "$out" points) rows, expected $1"
    echo "$out"
}
# baseline_beside : with BENCH_SVC_BASELINE, svc stopped, its data dir copied, svc restarted on
# its own and the baseline binary started on the copy (BASE_URL); the JWT secret is in the data
# dir, so TOKEN stays valid on both. A second call replaces the copy with a fresh one.
BASE_PID="" BASE_URL=""
YEAR_BASELINE=${BENCH_YEAR_BASELINE-$BASELINE}
baseline_beside() {
    [ -n "$YEAR_BASELINE" ] || return 0
    [ -x "$YEAR_BASELINE" ] || die "BENCH_YEAR_BASELINE=$YEAR_BASELINE is not an executable"
    [ -z "$BASE_PID" ] || stop_pid "$BASE_PID"
    stop_pid "$MAIN_PID"
    rm -rf "$WORK/data-baseline"
    cp -a "$WORK/data" "$WORK/data-baseline"
    SVC_NAME=svc SVC_DATA=$WORK/data SVC_DATABASE="" start_svc "${NICE[@]}"
    MAIN_PID=$SVC_PID
    local url=$SVC_URL port=$SVC_MQTT_PORT main_svc=$SVC
    SVC=$(realpath "$YEAR_BASELINE") SVC_NAME=baseline SVC_DATA=$WORK/data-baseline SVC_DATABASE="" \
        SVC_SERVE_ARGS=$BASE_SERVE_ARGS start_svc "${NICE[@]}"
    BASE_PID=$SVC_PID BASE_URL=$SVC_URL
    SVC=$main_svc SVC_PID=$MAIN_PID SVC_URL=$url SVC_MQTT_PORT=$port DB=$WORK/data/svc.db
}
vm_export() {
    plant vm-export --url "$VM_URL" --set index --prefix bench_query --per-signal "$POINTS"
}

if part reads; then
    TAGS="bench/query bench/ingest-rt"
    for round in $(seq 1 "$ROUNDS"); do TAGS="$TAGS bench/ingest-$round"; done
    log "declaring historized tags: $TAGS"
    for tag in $TAGS; do
        call POST /svc/tags "{\"path\":\"$tag\",\"historize\":true}" >/dev/null
        [ -z "$BASELINE" ] || on_baseline call POST /svc/tags "{\"path\":\"$tag\",\"historize\":true}" >/dev/null
    done
    for round in $(seq 1 "$ROUNDS"); do
        log "ingest round $round of $ROUNDS: $INGEST values"
        out=$(ingest "bench/ingest-$round" "$INGEST")
        echo "ingest_svc $(field "$out" values_per_s) $(field "$out" seconds)"
        if [ -n "$BASELINE" ]; then
            out=$(on_baseline ingest "bench/ingest-$round" "$INGEST")
            echo "ingest_base $(field "$out" values_per_s) $(field "$out" seconds)"
        fi
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
    if [ -n "$BASELINE" ]; then
        out=$(on_baseline ingest bench/ingest-rt "$INGEST" --receive-time)
        echo "ingest_base_rt $(field "$out" values_per_s) $(field "$out" seconds)" >>"$WORK/results"
        log "loading $POINTS points into the baseline's bench/query"
        out=$(on_baseline ingest bench/query "$POINTS")
        echo "load_base $(field "$out" values_per_s) $(field "$out" seconds)" >>"$WORK/results"
    fi

    log "loading $POINTS points into bench/query over MQTT, and into VictoriaMetrics"
    LOAD_OUT=$(ingest bench/query "$POINTS")
    echo "load_svc $(field "$LOAD_OUT" values_per_s) $(field "$LOAD_OUT" seconds)" >>"$WORK/results"
    plant vm-import --url "$VM_URL" --set index --prefix bench_query --per-signal "$POINTS" >/dev/null
    log "VictoriaMetrics at rest after $(vm_settle) s"
    # The raw reference reads svc's rows while there are rows to read; once svc keeps blocks,
    # a row-per-point copy of the same points (today's layout).
    RAW_DB=$DB RAW_TOPIC=bench/query
    FOOTPRINT=$("$PLANT" footprint --db "$DB") || die "plant_load footprint failed"
    if grep -q '"hist_blocks"' <<<"$FOOTPRINT"; then
        "$TOOL" raw-ingest --schema-from "$DB" --dir "$WORK/raw-copy" --count "$POINTS" >/dev/null ||
            die "the raw copy failed"
        RAW_DB=$WORK/raw-copy/raw.db RAW_TOPIC=bench/raw
        NOTES+=("raw SQLite scans read a row-per-point copy of the points (svc's database keeps blocks)")
    fi

    log "query warm-up"
    svc_query "$POINTS" >/dev/null
    raw_query "$POINTS" >/dev/null
    vm_export >/dev/null
    [ -z "$BASELINE" ] || on_baseline svc_query "$POINTS" >/dev/null
    for round in $(seq 1 "$ROUNDS"); do
        log "query round $round of $ROUNDS"
        # Each svc's paged read and then its single request, so both single requests follow
        # their own server's read (an A/A run measured the second svc's single request at
        # 0.83x when it came after the raw scan and VictoriaMetrics's export instead); which
        # svc goes first alternates by round.
        order=(svc)
        if [ -n "$BASELINE" ]; then
            if [ $((round % 2)) -eq 1 ]; then order=(svc base); else order=(base svc); fi
        fi
        for who in "${order[@]}"; do
            via=()
            [ "$who" = svc ] || via=(on_baseline)
            out=$("${via[@]}" svc_query "$POINTS")
            echo "query_$who $(field "$out" points_per_s) $(field "$out" seconds)"
            out=$("${via[@]}" svc_query "$ONE_PAGE")
            echo "page_$who $(field "$out" points_per_s) $(field "$out" seconds)"
        done
        out=$(raw_query "$POINTS")
        echo "query_raw $(field "$out" points_per_s) $(field "$out" seconds)"
        out=$(vm_export)
        echo "vm_export $(field "$out" points_per_s) $(field "$out" seconds)"
        out=$(raw_query "$ONE_PAGE")
        echo "page_raw $(field "$out" points_per_s) $(field "$out" seconds)"
    done >>"$WORK/results"
fi

# --- part year: a year of one tag, drawn as a chart ------------------------------------------
if part year; then
    YEAR=(--prefix year --set walk --per-signal "$YEAR_POINTS" --start-ms "$YEAR_START_MS")
    plant declare --url "$SVC_URL" --token "$TOKEN" "${YEAR[@]}" >/dev/null
    log "publishing a year ($YEAR_POINTS points) into svc over MQTT"
    out=$(plant publish --port "$SVC_MQTT_PORT" --password "$API_KEY" --url "$SVC_URL" --token "$TOKEN" \
        "${YEAR[@]}" --publishers "$YEAR_PUBLISHERS" --split)
    echo "year_svc $(field "$out" values_per_s) $(field "$out" seconds)" >>"$WORK/results"
    out=$(plant vm-import --url "$VM_URL" "${YEAR[@]}")
    awk -v n="$YEAR_POINTS" -v s="$(field "$out" seconds)" \
        'BEGIN { printf "year_vm %.0f %.3f\n", n / s, s }' >>"$WORK/results"
    NOTES+=("VictoriaMetrics merged the year in $(vm_settle) s after its import was answered")
    # Charts are of a year at rest: svc first closes what it just took in into blocks.
    out=$(plant footprint --db "$DB" "${SETTLE[@]}")
    NOTES+=("svc closed the year's rows into blocks in $(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' <<<"$out") s after its ingest was stored ($out)")
    CHARTS=(--buckets 500 --queries "$YEAR_QUERIES" --budget-seconds "$CHART_BUDGET")
    baseline_beside
    log "charts: svc"
    out=$(plant chart --url "$SVC_URL" --token "$TOKEN" "${YEAR[@]}" "${CHARTS[@]}")
    echo "chart_svc $(field "$out" p50_ms) $(field "$out" p99_ms) $(field "$out" max_ms) $(field "$out" charts)" >>"$WORK/results"
    if [ -n "$BASE_URL" ]; then
        log "charts: the baseline svc"
        out=$(plant chart --url "$BASE_URL" --token "$TOKEN" "${YEAR[@]}" "${CHARTS[@]}")
        echo "chart_base $(field "$out" p50_ms) $(field "$out" p99_ms) $(field "$out" max_ms) $(field "$out" charts)" >>"$WORK/results"
        log "charts: svc again (interleaved with the baseline)"
        out=$(plant chart --url "$SVC_URL" --token "$TOKEN" "${YEAR[@]}" "${CHARTS[@]}")
        echo "chart_svc2 $(field "$out" p50_ms) $(field "$out" p99_ms) $(field "$out" max_ms) $(field "$out" charts)" >>"$WORK/results"
    fi
    log "charts: VictoriaMetrics"
    out=$(plant vm-chart --url "$VM_URL" "${YEAR[@]}" "${CHARTS[@]}")
    echo "chart_vm $(field "$out" p50_ms) $(field "$out" p99_ms) $(field "$out" max_ms) $(field "$out" charts)" >>"$WORK/results"
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
SVC_RSS="" SVC_HWM="" DB_MB=""
if [ -n "${MAIN_PID:-}" ]; then
    SVC_RSS=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$MAIN_PID/status")
    SVC_HWM=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$MAIN_PID/status")
    DB_MB=$(du -cm "$DB"* | tail -n 1 | cut -f1)
fi

# --- report -------------------------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
REPORT=$(awk -v n_ingest="$INGEST" -v n_points="$POINTS" -v page="$PAGE" -v one_page="$ONE_PAGE" \
    -v rss="$SVC_RSS" -v hwm="$SVC_HWM" -v per_signal="$PER_SIGNAL" -v year_points="$YEAR_POINTS" \
    -v year_queries="$YEAR_QUERIES" -v sdt="${SDT_NOTE:-}" -v baseline="$BASELINE" -f bench/historian-report.awk \
    "$WORK/results") && GOALS=0 || GOALS=$?
[ "$GOALS" = 0 ] || [ "$GOALS" = 3 ] || die "the report failed"

{
    echo "# Historian benchmark: svc against raw SQLite, VictoriaMetrics, InfluxDB and Prometheus"
    echo
    echo "Written by \`bench/historian.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc) CPUs, $CPU, $(uname -sr)"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}${BASELINE:+; baseline svc binary: $BASELINE}${YEAR_BASELINE:+; the year chart baseline: $YEAR_BASELINE}; nice: ${BENCH_NICE:-0} (svc and the load tools)"
    echo "- command: \`$(env | grep -E '^BENCH_[A-Z_]+=' | sort | tr '\n' ' ')bash bench/historian.sh\`; parts:${PARTS% }"
    echo "- reference systems (Debian packages): victoria-metrics $(deb_version victoria-metrics), influxdb $(deb_version influxdb), prometheus $(deb_version prometheus) (promtool), postgresql $(deb_version postgresql)"
    echo "- load average (1, 5, 15 min) before / after measuring: $LOAD_BEFORE / $LOAD_AFTER (anything above ~0.5 before means something else was running: treat the numbers as noisy)"
    if part reads; then
        echo "- ingest: $PUBLISHERS MQTT publishers (rumqttc, QoS 1, API key) on one historized tag, payload \`{\"value\":N,\"timestamp\":<epoch ms>}\` 1 s apart; values/s = values / (first publish → svc holds them all); raw: same DDL (copied from svc's database), WAL + synchronous=NORMAL, one prepared INSERT, 5,000 rows per transaction"
        echo "- query: $POINTS points of one tag (1 s apart); svc = \`PATCH /svc/historian\` with \`start_time\`, \`end_time\`, \`limit\` ≤ $PAGE (LIMIT_MAX), time until each response body is received, summed over pages; raw = \`SELECT ts, value FROM hist_points WHERE series=? AND ts>=? AND ts<? ORDER BY ts, seq\`, every row read; VictoriaMetrics = one \`/api/v1/export\` of the same points, until the body is received; one untimed warm-up of each first"
        echo "- $ROUNDS interleaved round(s); the round with the median rate is shown; svc's database after the run: ${DB_MB} MB"
    fi
    echo
    echo "$REPORT"
    if [ ${#NOTES[@]} -gt 0 ]; then
        echo
        echo "### Notes"
        echo
        for note in "${NOTES[@]}"; do echo "- $note"; done
    fi
} >"$RESULTS"

echo
echo "$REPORT"
echo
log "written to bench/historian-results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
