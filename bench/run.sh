#!/usr/bin/env bash
# Throughput benchmark of `svc serve` against a bare axum hello-world, measured in one run on
# the same machine with the same wrk settings.
#
#   bash bench/run.sh
#
# It installs wrk (Debian package) if missing, builds `svc`, the `hello` example and the
# `bench_load` example in release mode, starts `svc serve` on a fresh temporary data dir, logs in
# as admin, creates domain `bench` and collection `items` (fields sku, line, value; a non-unique
# index on `line`, a unique one on `sku`), loads BENCH_RECORDS records (record N has
# line = "line-<N % 1000>", so one line matches BENCH_RECORDS/1000 records), then measures with
# wrk (a warmup, then the measured run, same threads and connections for all):
#   (a) hello   GET / on examples/hello.rs
#   (b) id      GET /svc/bench.items%3Aitem<random N>                      on svc
#   (c) filter  GET /svc/items/all?filter[line][eq][string]=line-<random>  on svc
#   (d) containsany  GET /svc/items/all?filter[tags][CONTAINSANY][object]=t<random>,nope  on svc
#   (e) fulltext     GET /svc/items/all?filter[note][@@][string]=pump <random>           on svc
# ((c), (d) and (e) each match BENCH_RECORDS/1000 records; (d) scans every record, (e) reads the
# FTS5 index of the searchable `note`; their p99 is reported beside the indexed (c)) and prints
# Each round also measures the create rate (group commit of REST writes):
#   (f) create8  new records POSTed for BENCH_DURATION by wrk (bench/wrk.lua's `create` mode)
#                with BENCH_LOAD_THREADS (8) connections, after a warmup
#   (g) create1  the same with one connection
# each into a fresh collection laid out like `items`, beside the ceiling: a raw rusqlite insert
# loop (examples/bench_sqlite.rs) of BENCH_CREATES rows into a copy of the `items` table's
# schema, one transaction per insert (`raw each`) and BENCH_RAW_BATCH per transaction
# (`raw batched`).
# It prints requests/s, p50, p90, p99 for each, the ratios (b)/(a) and (c)/(a) in requests/s,
# the server's CPU time per request (from /proc/<pid>/stat; steadier than requests/s on a busy
# machine), and whether the goals hold: (b) >= 50% of (a); (c) p99 < 10 ms; (f) >= 20,000
# creates/s. The same report is
# written to bench/results.md (overwritten) with the machine, its load and the date. Both servers
# are stopped on exit.
#
# wrk and both servers share the machine's cores, so anything else running (a build, a test
# suite) moves the numbers: the load average is recorded, and BENCH_ROUNDS=3 repeats the three
# measurements interleaved and reports, per request kind, the round with the median requests/s.
#
# Settings (environment): BENCH_RECORDS (100000), BENCH_DURATION (10s), BENCH_WARMUP (3s),
# BENCH_THREADS (wrk -t, 2), BENCH_CONNECTIONS (wrk -c, 32; (d) and (e) use
# BENCH_SLOW_CONNECTIONS, default BENCH_THREADS), BENCH_LOAD_THREADS (8),
# SVC_LOG (svc's log filter, default info as in production; its log is kept only on failure),
# BENCH_CREATES (20000, the raw loop's rows), BENCH_RAW_BATCH (256, the group commit's
# largest group), BENCH_ROUNDS (1), BENCH_STRICT=1 to exit 1 when a goal is missed,
# BENCH_SVC=<path> to measure an already built svc binary instead of building
# target/release/svc. CARGO_TARGET_DIR is honoured.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
RECORDS=${BENCH_RECORDS:-100000}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-3s}
THREADS=${BENCH_THREADS:-2}
CONNS=${BENCH_CONNECTIONS:-32}
LOAD_THREADS=${BENCH_LOAD_THREADS:-8}
SLOW_CONNS=${BENCH_SLOW_CONNECTIONS:-$THREADS}
ROUNDS=${BENCH_ROUNDS:-1}
CREATES=${BENCH_CREATES:-20000}
RAW_BATCH=${BENCH_RAW_BATCH:-256}
LINES=1000
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/results.md"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# --- tools --------------------------------------------------------------------------------
command -v wrk >/dev/null 2>&1 || install_deb wrk
command -v curl >/dev/null 2>&1 || install_deb curl

build_tools hello bench_load bench_sqlite
HELLO="$TARGET/release/examples/hello"
LOADER="$TARGET/release/examples/bench_load"
RAW="$TARGET/release/examples/bench_sqlite"

# --- servers ------------------------------------------------------------------------------
bench_workdir bench
start_svc
start_ready hello "$HELLO"
HELLO_URL="http://$ADDR"
HELLO_PID=$PID

# --- data ---------------------------------------------------------------------------------
log "logging in, creating domain bench and collection items"
login_admin
call POST /auth/domains '{"name":"bench"}' >/dev/null
CALL_HEADERS=('Domain: domains:bench')
collection items

log "loading $RECORDS records with $LOAD_THREADS threads"
LOAD_LINE=$("$LOADER" "$SVC_URL" "$TOKEN" bench items "$RECORDS" "$LOAD_THREADS")
log "$LOAD_LINE"
COUNT=$(call GET /svc/items/count | sed -n 's/.*"count":\([0-9]*\).*/\1/p')
[ "$COUNT" = "$RECORDS" ] || die "GET /svc/items/count = $COUNT, expected $RECORDS"
log "count = $COUNT"

# Sanity: the two measured requests answer what they should.
call GET "/svc/bench.items%3Aitem$((RECORDS / 2))" | grep -q "\"sku\":\"SKU-$((RECORDS / 2))\"" ||
    die "GET by id returned the wrong record"
MATCHES=$(call GET '/svc/items/all?filter%5Bline%5D%5Beq%5D%5Bstring%5D=line-7' | grep -o '"line":"line-7"' | wc -l)
[ "$MATCHES" -eq $((RECORDS / LINES)) ] || die "filtered list returned $MATCHES records, expected $((RECORDS / LINES))"
MATCHES=$(call GET '/svc/items/all?filter%5Btags%5D%5BCONTAINSANY%5D%5Bobject%5D=t7%2Cnope' | grep -o '"line":"line-7"' | wc -l)
[ "$MATCHES" -eq $((RECORDS / LINES)) ] || die "CONTAINSANY returned $MATCHES records, expected $((RECORDS / LINES))"
MATCHES=$(call GET '/svc/items/all?filter%5Bnote%5D%5B%40%40%5D%5Bstring%5D=pump+7' | grep -o '"line":"line-7"' | wc -l)
[ "$MATCHES" -eq $((RECORDS / LINES)) ] || die "@@ returned $MATCHES records, expected $((RECORDS / LINES))"

# --- measure ------------------------------------------------------------------------------
export BENCH_TOKEN="$TOKEN" BENCH_DOMAIN=bench BENCH_TABLE=items BENCH_RECORDS="$RECORDS" BENCH_LINES="$LINES"
# measure_creates ROUND : CREATE lines (kind, records/s, server CPU µs per record or 0).
measure_creates() {
    local round=$1
    log "measuring creates: $DURATION with $LOAD_THREADS clients, then with 1; raw loop of $CREATES"
    echo "CREATE create8 $(create_rate "$LOAD_THREADS" "c${round}_many")"
    echo "CREATE create1 $(create_rate 1 "c${round}_one")"
    "$RAW" "$DB" bench.items "$WORK" "$CREATES" "$RAW_BATCH" | while read -r _ mode rate; do
        echo "CREATE raw_$mode $rate 0"
    done
    rm -f "$WORK"/raw-*.db*
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
    [ "$ROUNDS" -gt 1 ] && log "round $round of $ROUNDS"
    measure hello "$HELLO_URL" "$HELLO_PID"
    measure id "$SVC_URL" "$SVC_PID"
    measure filter "$SVC_URL" "$SVC_PID"
    # Full scans: as many connections as cores, so p99 is a query's time, not a queue's.
    measure containsany "$SVC_URL" "$SVC_PID" "$SLOW_CONNS"
    measure fulltext "$SVC_URL" "$SVC_PID" "$SLOW_CONNS"
    measure_creates "$round" >>"$WORK/creates"
done >"$WORK/results"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report -------------------------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
CREATE_REPORT=$(awk -v load_threads="$LOAD_THREADS" -v batch="$RAW_BATCH" '
    # Per kind, the round with the median records/s.
    { k = $2; c[k]++; r[k, c[k]] = $3; u[k, c[k]] = $4 }
    function pick(m,    i, j, t, idx) {
        for (i = 1; i <= c[m]; i++) idx[i] = i
        for (i = 1; i <= c[m]; i++) for (j = i + 1; j <= c[m]; j++)
            if (r[m, idx[j]] < r[m, idx[i]]) { t = idx[i]; idx[i] = idx[j]; idx[j] = t }
        rate[m] = r[m, idx[int((c[m] + 1) / 2)]]; cpu[m] = u[m, idx[int((c[m] + 1) / 2)]]
    }
    END {
        pick("create8"); pick("create1"); pick("raw_each"); pick("raw_batched")
        name["create8"] = sprintf("(f) `POST /svc/<table>`, %d clients", load_threads)
        name["create1"] = "(g) `POST /svc/<table>`, 1 client"
        name["raw_each"] = "raw rusqlite loop, one transaction per insert"
        name["raw_batched"] = sprintf("raw rusqlite loop, %d inserts per transaction", batch)
        print "| creates | records/s | vs (g) | vs raw each | vs raw batched | server CPU/record |"
        print "|---|---:|---:|---:|---:|---:|"
        split("create8 create1 raw_each raw_batched", order, " ")
        for (i = 1; i <= 4; i++) {
            m = order[i]
            printf "| %s | %.0f | %.2fx | %.2fx | %.2fx | %s |\n", name[m], rate[m], rate[m] / rate["create1"], rate[m] / rate["raw_each"], rate[m] / rate["raw_batched"], (cpu[m] > 0 ? sprintf("%d µs", cpu[m]) : "-")
        }
        print ""
        ok = rate["create8"] >= 20000
        printf "- creates with %d clients >= 20,000/s: %.0f/s → %s\n", load_threads, rate["create8"], ok ? "**met**" : "**NOT met**"
        exit ok ? 0 : 3
    }' "$WORK/creates") || GOALS=3
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then COMMIT="$COMMIT (src modified)"; fi
REPORT=$(awk '
    # Per mode, keep the round with the median requests/s (the only round when ROUNDS=1).
    { k = $2; c[k]++; line[k, c[k]] = $0; r[k, c[k]] = $3 }
    function ms(us) { return sprintf("%.2f ms", us / 1000) }
    function pick(m,    i, j, t, idx, f) {
        for (i = 1; i <= c[m]; i++) idx[i] = i
        for (i = 1; i <= c[m]; i++) for (j = i + 1; j <= c[m]; j++)
            if (r[m, idx[j]] < r[m, idx[i]]) { t = idx[i]; idx[i] = idx[j]; idx[j] = t }
        split(line[m, idx[int((c[m] + 1) / 2)]], f, " ")
        rps[m] = f[3]; p50[m] = f[4]; p90[m] = f[5]; p99[m] = f[6]; max[m] = f[7]; n[m] = f[8]
        err[m] = 0
        for (i = 1; i <= c[m]; i++) { split(line[m, i], f, " "); err[m] += f[9] }
        split(line[m, idx[int((c[m] + 1) / 2)]], f, " ")
        cpu[m] = f[8] > 0 ? f[10] / f[8] : 0
    }
    END {
        pick("hello"); pick("id"); pick("filter"); pick("containsany"); pick("fulltext")
        name["hello"]="(a) hello-world `GET /`"
        name["id"]="(b) `GET /svc/bench.items%3Aitem<N>`"
        name["filter"]="(c) `GET /svc/items/all?filter[line][eq][string]=line-<M>` (100 records)"
        name["containsany"]="(d) `GET /svc/items/all?filter[tags][CONTAINSANY][object]=t<M>,nope` (100 records, unindexed)"
        name["fulltext"]="(e) `GET /svc/items/all?filter[note][@@][string]=pump <M>` (100 records, FTS5 index)"
        print "| request | requests/s | p50 | p90 | p99 | max | vs hello (rps) | server CPU/request | errors |"
        print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        split("hello id filter containsany fulltext", order, " ")
        for (i = 1; i <= 5; i++) {
            m = order[i]
            printf "| %s | %.0f | %s | %s | %s | %s | %.1f%% | %.0f µs | %d |\n", name[m], rps[m], ms(p50[m]), ms(p90[m]), ms(p99[m]), ms(max[m]), 100 * rps[m] / rps["hello"], cpu[m], err[m]
        }
        print ""
        id_ok = (rps["id"] >= 0.5 * rps["hello"] && err["id"] == 0)
        filter_ok = (p99["filter"] < 10000 && err["filter"] == 0)
        printf "- GET-by-id >= 50%% of hello-world throughput: %.1f%% → %s\n", 100 * rps["id"] / rps["hello"], id_ok ? "**met**" : "**NOT met**"
        printf "- filtered list p99 < 10 ms: %s → %s\n", ms(p99["filter"]), filter_ok ? "**met**" : "**NOT met**"
        printf "- p99 of the SDK filters beside the indexed `eq` (%s): CONTAINSANY %s (%.1fx), @@ %s (%.2fx)\n", ms(p99["filter"]), ms(p99["containsany"]), p99["containsany"] / p99["filter"], ms(p99["fulltext"]), p99["fulltext"] / p99["filter"]
        if (err["hello"] + err["id"] + err["filter"] + err["containsany"] + err["fulltext"] > 0) print "- some requests failed (errors column): the run is not valid"
        exit (id_ok && filter_ok) ? 0 : 3
    }' "$WORK/results") && GOALS=0 || GOALS=$?

{
    echo "# svc benchmark results"
    echo
    echo "Written by \`bench/run.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc) CPUs, $CPU, $(uname -sr)"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}"
    echo "- wrk: \`-t$THREADS -c$CONNS -d$DURATION --latency\` after a $WARMUP warmup, same settings for every row; wrk and the servers share the machine; $ROUNDS interleaved round(s), median round shown"
    echo "- load average (1, 5, 15 min) before / after measuring: $LOAD_BEFORE / $LOAD_AFTER (anything above ~0.5 before means something else was running: treat the numbers as noisy)"
    echo "- data: $RECORDS records in \`bench.items\` (unique index on \`sku\`, index on \`line\`); svc log filter \`${SVC_LOG:-info}\`"
    echo "- load: $LOAD_LINE"
    echo
    echo "$REPORT"
    echo
    echo "$CREATE_REPORT"
} >"$RESULTS"

echo
echo "$REPORT"
echo
echo "$CREATE_REPORT"
echo
log "written to bench/results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
