#!/usr/bin/env bash
# The two store engines side by side (issue 18): the same `svc serve` binary on SQLite (its
# embedded default) and on PostgreSQL (a private server this script starts: Debian's package,
# default durability), measured in one run on the same machine with the same load:
#
#   bash bench/engines.sh
#
# On each engine: BENCH_RECORDS records (100,000) in collection `items` (as bench/run.sh lays it
# out), then with wrk (bench/wrk.lua, a warmup, then the measured run)
#   id      GET /svc/bench.items%3Aitem<random N>                       requests/s
#   filter  GET /svc/items/all?filter[line][eq][string]=line-<random>   p99 (100 records a page)
#   create8 POST /svc/<table> from 8 connections                        records/s
# and with examples/historian_load.rs
#   ingest  BENCH_INGEST values (200,000) over MQTT at QoS 1 (4 publishers) into a historized tag,
#           until every one is a row of the engine's hist_points          values/s
#   range   BENCH_POINTS points (1,000,000) of one tag read through PATCH /svc/historian in pages
#           of 100,000                                                    points/s
# On PostgreSQL only: a second `svc serve` on the same database, and GET by id from two wrk at
# once (half the connections each) against the two, beside one instance's rate in the same run.
#
# It prints and writes to bench/engines-results.md (overwritten) PostgreSQL against SQLite per
# measurement and whether the issue's goals hold: GET by id on PostgreSQL >= 50% of SQLite's
# rate; filtered list p99 < 20 ms on PostgreSQL; historian ingest >= 100,000 values/s on
# PostgreSQL; two instances >= 1.6x one instance's REST rate.
#
# wrk, PostgreSQL and svc share the machine's cores; the load average is recorded.
# Settings (environment): BENCH_RECORDS, BENCH_INGEST, BENCH_POINTS, BENCH_DURATION (10s),
# BENCH_WARMUP (3s), BENCH_THREADS (2), BENCH_CONNECTIONS (32), BENCH_LOAD_THREADS (8),
# BENCH_PUBLISHERS (4), BENCH_SVC (an already built svc binary), BENCH_STRICT=1 to exit 1 when a
# goal is missed. CARGO_TARGET_DIR is honoured.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
RECORDS=${BENCH_RECORDS:-100000}
INGEST=${BENCH_INGEST:-200000}
POINTS=${BENCH_POINTS:-1000000}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-3s}
THREADS=${BENCH_THREADS:-2}
CONNS=${BENCH_CONNECTIONS:-32}
LOAD_THREADS=${BENCH_LOAD_THREADS:-8}
PUBLISHERS=${BENCH_PUBLISHERS:-4}
LINES=1000
PAGE=100000
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/engines-results.md"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
command -v wrk >/dev/null 2>&1 || install_deb wrk
command -v curl >/dev/null 2>&1 || install_deb curl
build_tools bench_load historian_load
LOADER="$TARGET/release/examples/bench_load"
TOOL="$TARGET/release/examples/historian_load"

bench_workdir engines
start_postgres
PG_URL=$(pg_database bench)
export BENCH_DOMAIN=bench BENCH_TABLE=items BENCH_RECORDS="$RECORDS" BENCH_LINES="$LINES"
field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
# result MODE FIELD : a field of the RESULT line of MODE's measured run (3 rps, 6 p99 µs).
result() { awk -v f="$2" '{ print $f }' <<<"$(grep "^RESULT $1 " "$WORK/res-$ENGINE-$1")"; }

# bench_engine ENGINE : every measurement on a fresh svc over ENGINE; lines "<engine> <kind>
# <value>" on stdout.
bench_engine() {
    ENGINE=$1
    local database=""
    [ "$ENGINE" = postgres ] && database=$PG_URL
    SVC_NAME=svc-$ENGINE SVC_DATA=$WORK/data-$ENGINE SVC_DATABASE=$database start_svc
    login_admin
    export BENCH_TOKEN=$TOKEN
    call POST /auth/domains '{"name":"bench"}' >/dev/null
    CALL_HEADERS=('Domain: domains:bench')
    collection items
    log "$ENGINE: loading $RECORDS records with $LOAD_THREADS threads"
    log "$ENGINE: $("$LOADER" "$SVC_URL" "$TOKEN" bench items "$RECORDS" "$LOAD_THREADS")"
    call GET "/svc/bench.items%3Aitem$((RECORDS / 2))" | grep -q "\"sku\":\"SKU-$((RECORDS / 2))\"" ||
        die "$ENGINE: GET by id returned the wrong record"
    local mode
    for mode in id filter; do
        measure "$mode" "$SVC_URL" "$SVC_PID" >"$WORK/res-$ENGINE-$mode"
    done
    echo "$ENGINE id $(result id 3)"
    echo "$ENGINE filter_rps $(result filter 3)"
    echo "$ENGINE filter_p99_us $(result filter 6)"
    echo "$ENGINE create8 $(create_rate "$LOAD_THREADS" creates | cut -d' ' -f1)"
    CALL_HEADERS=()

    local key out
    key=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$key" ] || die "$ENGINE: no API key"
    call POST /svc/tags '{"path":"bench/ingest","historize":true}' >/dev/null
    call POST /svc/tags '{"path":"bench/query","historize":true}' >/dev/null
    log "$ENGINE: ingesting $INGEST values"
    out=$("$TOOL" ingest --port "$SVC_MQTT_PORT" --username bench --password "$key" \
        --topic bench/ingest --count "$INGEST" --publishers "$PUBLISHERS" --db "$DB" \
        --url "$SVC_URL" --token "$TOKEN") ||
        die "$ENGINE: ingest failed"
    log "$ENGINE: $out"
    grep -q '"complete":true' <<<"$out" || die "$ENGINE: not every value was historized: $out"
    echo "$ENGINE ingest $(field "$out" values_per_s)"
    log "$ENGINE: loading $POINTS points for the range query"
    out=$("$TOOL" ingest --port "$SVC_MQTT_PORT" --username bench --password "$key" \
        --topic bench/query --count "$POINTS" --publishers "$PUBLISHERS" --db "$DB" \
        --url "$SVC_URL" --token "$TOKEN") ||
        die "$ENGINE: loading the range failed"
    grep -q '"complete":true' <<<"$out" || die "$ENGINE: not every point was historized: $out"
    "$TOOL" query --url "$SVC_URL" --token "$TOKEN" --topic bench/query --count "$POINTS" \
        --page "$PAGE" >/dev/null || die "$ENGINE: range query failed"
    out=$("$TOOL" query --url "$SVC_URL" --token "$TOKEN" --topic bench/query --count "$POINTS" \
        --page "$PAGE") || die "$ENGINE: range query failed"
    log "$ENGINE: $out"
    [ "$(field "$out" points)" = "$POINTS" ] || die "$ENGINE: the range returned $(field "$out" points) points"
    echo "$ENGINE range $(field "$out" points_per_s)"
}

# two_instances : GET by id on PostgreSQL from one instance with every connection, then from
# two instances on the same database with half each, at the same time; lines as above.
two_instances() {
    local first_url=$SVC_URL first_pid=$SVC_PID half=$((CONNS / 2))
    SVC_NAME=svc-postgres-2 SVC_DATA=$WORK/data-postgres-2 SVC_DATABASE=$PG_URL start_svc
    local second_url=$SVC_URL
    BENCH_MODE=id wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --timeout 30s -s bench/wrk.lua "$first_url" \
        >"$WORK/one.txt"
    echo "postgres one_instance $(grep '^RESULT ' "$WORK/one.txt" | awk '{ print $3 }')"
    BENCH_MODE=id wrk -t1 -c"$half" -d"$DURATION" --timeout 30s -s bench/wrk.lua "$first_url" >"$WORK/two-a.txt" &
    local a=$!
    BENCH_MODE=id wrk -t1 -c"$half" -d"$DURATION" --timeout 30s -s bench/wrk.lua "$second_url" >"$WORK/two-b.txt"
    wait "$a"
    echo "postgres two_instances $(cat "$WORK/two-a.txt" "$WORK/two-b.txt" | awk '/^RESULT / { s += $3 } END { print s }')"
    SVC_URL=$first_url SVC_PID=$first_pid
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
{
    bench_engine sqlite
    kill "$SVC_PID" && wait "$SVC_PID" 2>/dev/null || true
    bench_engine postgres
    two_instances
} >"$WORK/results"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

REPORT=$(awk '
    { v[$1, $2] = $3 }
    function row(name, kind, unit, scale) {
        printf "| %s | %.0f %s | %.0f %s | %.2fx |\n", name, v["sqlite", kind] / scale, unit, v["postgres", kind] / scale, unit, v["postgres", kind] / v["sqlite", kind]
    }
    END {
        print "| measurement | SQLite | PostgreSQL | PostgreSQL / SQLite |"
        print "|---|---:|---:|---:|"
        row("GET by id", "id", "req/s", 1)
        row("filtered list (100 records a page)", "filter_rps", "req/s", 1)
        printf "| filtered list p99 | %.2f ms | %.2f ms | %.2fx |\n", v["sqlite", "filter_p99_us"] / 1000, v["postgres", "filter_p99_us"] / 1000, v["postgres", "filter_p99_us"] / v["sqlite", "filter_p99_us"]
        row("record creates, 8 clients", "create8", "records/s", 1)
        row("historian ingest (MQTT QoS 1)", "ingest", "values/s", 1)
        row("1M-point range query", "range", "points/s", 1)
        print ""
        two = v["postgres", "two_instances"] / v["postgres", "one_instance"]
        printf "Two instances on one PostgreSQL: %.0f req/s against one instance'"'"'s %.0f req/s (GET by id, same run): %.2fx.\n\n", v["postgres", "two_instances"], v["postgres", "one_instance"], two
        ok_id = v["postgres", "id"] >= 0.5 * v["sqlite", "id"]
        ok_filter = v["postgres", "filter_p99_us"] < 20000
        ok_ingest = v["postgres", "ingest"] >= 100000
        ok_two = two >= 1.6
        printf "- GET by id on PostgreSQL >= 50%% of SQLite: %.1f%% → %s\n", 100 * v["postgres", "id"] / v["sqlite", "id"], ok_id ? "**met**" : "**NOT met**"
        printf "- filtered list p99 on PostgreSQL < 20 ms: %.2f ms → %s\n", v["postgres", "filter_p99_us"] / 1000, ok_filter ? "**met**" : "**NOT met**"
        printf "- historian ingest on PostgreSQL >= 100,000 values/s: %.0f → %s\n", v["postgres", "ingest"], ok_ingest ? "**met**" : "**NOT met**"
        printf "- two instances >= 1.6x one instance: %.2fx → %s\n", two, ok_two ? "**met**" : "**NOT met**"
        exit (ok_id && ok_filter && ok_ingest && ok_two) ? 0 : 3
    }' "$WORK/results") && GOALS=0 || GOALS=$?

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then COMMIT="$COMMIT (src modified)"; fi
{
    echo "# svc on SQLite and on PostgreSQL"
    echo
    echo "Written by \`bench/engines.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc) CPUs, ${CPU:-$(uname -m)}, $(uname -sr); wrk, PostgreSQL and svc share it"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}"
    echo "- PostgreSQL: $("$PG_BIN/postgres" --version), private server, default durability, shared_buffers 512MB"
    echo "- wrk: \`-t$THREADS -c$CONNS -d$DURATION\` after a $WARMUP warmup; $RECORDS records; ingest $INGEST values, range $POINTS points, $PUBLISHERS MQTT publishers"
    echo "- load average (1, 5, 15 min) before / after: $LOAD_BEFORE / $LOAD_AFTER"
    echo
    echo "$REPORT"
} >"$RESULTS"
echo "$REPORT"
log "written to bench/engines-results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
