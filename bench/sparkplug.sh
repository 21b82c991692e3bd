#!/usr/bin/env bash
# Sparkplug B benchmark of `svc serve` (issue 36): BENCH_NODES (20) edge nodes × BENCH_METRICS
# (500) Double metrics changing at BENCH_RATE_HZ (1 Hz: 10,000 values/s), published to svc's
# MQTT broker as Sparkplug B and decoded by svc's Sparkplug host into tags and the historian,
# against the same values published to svc as plain JSON, measured in the same run on the same
# machine by the same load generator (bench/peers/sparkplug_load.cjs: Node.js, npm's mqtt 4.3.8
# and sparkplug-payload 1.0.3, Eclipse Tahu's codec; see its header):
#   - sparkplug: one MQTT connection per node `node<i>` of group `Bench`, NBIRTH (names, aliases
#     1..M, datatype Double, bdSeq) then every period one NDATA of all M metrics by alias, seq
#     incrementing mod 256, metric timestamp = the tick's time; will = NDEATH. svc's host turns
#     metric j of node i into tag `bench/plant/sp/Bench/node<i>/m<j>`, historized, its value
#     published as `{"value","timestamp","quality"}`.
#   - json: the same connections, values and timestamps, each value one message
#     `{"value":v,"timestamp":ms}` on that same tag (QoS BENCH_JSON_QOS, 0 as edge nodes publish),
#     the M messages of a node's tick written to its socket at once.
# Both paths write the same tags, declared and historized the same way: by the host from the
# nodes' NBIRTHs (for the JSON path the nodes are born once and die before the JSON load
# starts), so the historian, the tag registry and the values are the same and the difference is
# Sparkplug itself (one message of 500 metrics decoded by the host and republished as 500 tag
# values, against 500 messages taken in by the broker). What svc does differently by design and
# is measured, not evened out: the host republishes its values at QoS 1, so they are journaled
# and folded every 4 s, while QoS 0 JSON values skip the journal and are folded every 50 ms
# (src/historian/writer.rs); BENCH_JSON_QOS=1 puts the JSON path on the journaled path too.
#
# Pacing (both paths): ticks of 1/rate s; node i publishes its tick at (i-1)/N of the period, so
# the nodes are spread evenly over the period like independent edge nodes with their own scan
# clocks, each sending its whole scan at once (one NDATA, or M JSON messages back to back). A
# node whose socket holds more than 8 MB svc has not read skips its ticks (counted, reported):
# past a rate svc cannot keep up with, what is sent is then less than what is offered.
#
#   bash bench/sparkplug.sh
#   BENCH_SVC=/work/spb-bench-svc BENCH_DURATION=10 BENCH_RATE_HZ=1 bash bench/sparkplug.sh
#
# Every measurement runs on a fresh svc (fresh SQLite data dir; domain `bench` with namespaces
# `bench/plant` and `spBv1.0/Bench` — the group in the domain's reach — a `sparkplug` host
# record `site` on `bench/plant/sp`, and an API key of the domain as the nodes' MQTT password),
# so neither path inherits the other's historian rows, journal, sealed blocks or memory, and
# each VmRSS is its own. For each round (BENCH_ROUNDS, default 1), each rate of BENCH_RATE_HZ
# (a list; default "1 10 20 40") and each path (sparkplug then json in odd rounds, json then
# sparkplug in even ones): the generator connects and (Sparkplug) births its nodes; once every
# tag holds its birth value in the historian, the ticks start at the next second t0; the
# window is the BENCH_DURATION (60) s after BENCH_WARMUP (20) s of ticks. Measured:
#   - values/s: the values svc's historian folded into their series during the window
#     (`svc_historian_batch_values_sum` of GET /metrics, read after a historian query made
#     svc fold what it holds, at the window's start and again DURATION s later) / DURATION.
#     This is what svc records per second whether it keeps up or not;
#   - svc's CPU time (utime + stime of /proc/<pid>/stat, every thread) over the same DURATION,
#     per value folded, and the generator's per value sent; svc's VmRSS and VmHWM at the
#     window's end; the historian's fold transactions (their share of the window, values per
#     fold, from the same metrics) and svc's storage writes per value (write_bytes of
#     /proc/<pid>/io): at high rates the single fold thread, not the CPU, is what saturates;
#   - kept up: the historian's rows of the bench tags whose source timestamp lies in the
#     window's ticks, counted read-only with sqlite3 BENCH_GRACE (3) s after the window, the
#     load still on: equal to the values sent in the window when svc keeps up; and the age of
#     the newest stored value of the first and the last node at the window's end (up to a
#     period when svc keeps up);
#   - recorded in the end: the same count once the generator stopped and svc's count stopped
#     moving (missing = sent in the window − this: lost, not late);
#   - every row checked: value − timestamp = j for metric j (the generator's values), one row per
#     (tag, timestamp); sealed blocks overlapping the window (their points are not counted: 0
#     expected at these rates, reported);
#   - rebirth requests the nodes received (svc asks when it sees a sequence gap or an unknown
#     alias: 0 expected), `GET /svc/sparkplug/nodes` when svc has that route, and the warnings
#     and errors in svc's log.
# Goal (issue 36): the Sparkplug path's values/s >= 0.8 × the JSON path's, with svc's CPU per
# value reported for both. At a rate both paths keep up with, values/s are equal by
# construction (both record what was sent) and the CPU per value is the comparison; the higher
# rates are where the goal can fail. Both ratios are computed over the rounds' sums.
#
# Settings (environment): BENCH_NODES (20), BENCH_METRICS (500), BENCH_RATE_HZ ("1 10 20 40"),
# BENCH_WARMUP (20 s), BENCH_DURATION (60 s), BENCH_GRACE (3 s), BENCH_ROUNDS (1),
# BENCH_JSON_QOS (0), BENCH_JSON_WRITER (batch: a tick's JSON packets encoded by the generator
# and written at once; publish: mqtt.js's client.publish() per value, costlier for the
# generator), BENCH_SVC=<path> (measure this svc binary instead of building target/release/svc),
# SVC_LOG (svc's log filter, default warn), BENCH_RESULTS (the report's file, default
# bench/sparkplug-results.md), BENCH_STRICT=1 (exit 1 when the goal is missed), BENCH_NICE=<n>
# (svc and the generator under `nice -n <n>`: as root a negative value keeps other jobs on a
# shared machine from taking their CPU), BENCH_PERF=<prefix> (`perf record -g` of svc during
# every window, to <prefix>-<path>-<rate>hz-r<round>.data), BENCH_LOGS=<dir> (keep svc's and
# the generator's logs there). Findings of the first runs:
# bench/sparkplug-history.md. The npm packages are installed under
# ${CARGO_TARGET_DIR:-target}/bench-peers (pinned versions below).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
NODES=${BENCH_NODES:-20}
METRICS=${BENCH_METRICS:-500}
RATES=${BENCH_RATE_HZ:-1 10 20 40}
WARMUP=${BENCH_WARMUP:-20}
DURATION=${BENCH_DURATION:-60}
GRACE=${BENCH_GRACE:-3}
ROUNDS=${BENCH_ROUNDS:-1}
JSON_QOS=${BENCH_JSON_QOS:-0}
JSON_WRITER=${BENCH_JSON_WRITER:-batch}
PASSWORD="bench-$(date +%s)-$$"
RESULTS=${BENCH_RESULTS:-$ROOT/bench/sparkplug-results.md}
DOMAIN=bench
GROUP=Bench
NAMESPACE=bench/plant/sp
TAGS="$NAMESPACE/$GROUP"
NICE=()
if [ -n "${BENCH_NICE:-}" ]; then NICE=(nice -n "$BENCH_NICE"); fi
SVC_LOG=${SVC_LOG:-warn}
export SVC_LOG

# Pinned Node packages: sparkplug-payload 1.0.3 is Tahu's codec (what sparkplug-client 3.2.4
# uses), on mqtt 4.x as in the Sparkplug tests (scripts/test.sh).
PEER_PACKAGES=(sparkplug-payload@1.0.3 mqtt@4.3.8)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# --- tools --------------------------------------------------------------------------------
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || install_deb nodejs npm
command -v curl >/dev/null 2>&1 || install_deb curl
command -v sqlite3 >/dev/null 2>&1 || install_deb sqlite3
if [ -n "${BENCH_PERF:-}" ]; then command -v perf >/dev/null 2>&1 || die "BENCH_PERF needs perf"; fi
PEERS_DIR="$TARGET/bench-peers"
npm_install "$PEERS_DIR" "${PEER_PACKAGES[@]}"
package_version() { node -p "require('$1/node_modules/$2/package.json').version"; }
case $JSON_WRITER in batch | publish) ;; *) die "BENCH_JSON_WRITER must be batch or publish" ;; esac
for rate in $RATES; do
    awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || die "BENCH_RATE_HZ holds \`$rate\`: rates must be numbers > 0"
done

if [ -n "${BENCH_SVC:-}" ]; then
    SVC=$(realpath "$BENCH_SVC")
    log "using the svc binary $SVC"
else
    build_tools
fi

bench_workdir sparkplug-bench
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
now_ms() { date +%s%3N; }
# sleep_until MS : sleeps until the epoch time MS (ms), if it is ahead.
sleep_until() {
    local left=$(($1 - $(now_ms)))
    [ "$left" -le 0 ] || sleep "$(awk -v ms="$left" 'BEGIN { printf "%.3f", ms / 1000 }')"
}

# hist SQL : one query, read-only, on svc's database.
hist() { sqlite3 -readonly "$DB" "PRAGMA busy_timeout=10000; $1" | tail -n 1; }

# settle : a historian query, which makes svc fold every value it holds (journaled values wait
# up to 4 s otherwise) before the database is read.
settle() { call PATCH /svc/historian/last "{\"topic\":\"$TAGS/node1/m1\",\"limit\":1}" >/dev/null; }

# folded : "values seconds queue folds" from svc's metrics once settled: values folded into
# their series since svc started, the seconds its fold transactions took, values waiting now,
# fold transactions since svc started.
folded() {
    settle
    call GET /metrics | awk '
        $1 == "svc_historian_batch_values_sum" { v = $2 }
        $1 == "svc_historian_batch_values_count" { n = $2 }
        $1 == "svc_historian_commit_duration_seconds_sum" { s = $2 }
        $1 == "svc_historian_queue_values" { q = $2 }
        END { printf "%s %s %s %s\n", v + 0, s + 0, q + 0, n + 0 }'
}
# io_bytes PID : bytes the process caused to be written to storage (/proc/<pid>/io).
io_bytes() { awk '$1 == "write_bytes:" { print $2 }' "/proc/$1/io"; }

# recorded FROM_MS TO_MS : "rows distinct wrong blocks block_points": the historian's rows of
# the bench tags with source times in [FROM, TO), distinct (tag, timestamp) pairs among them,
# rows whose value is not timestamp + j (metric j, or not a number), and sealed blocks
# overlapping the window with the points they hold (not counted in rows).
recorded() {
    local from=$1 to=$2 rows blocks
    rows=$(hist "SELECT count(*), count(DISTINCT p.series || ':' || p.ts),
        coalesce(sum(p.num IS NULL OR CAST(p.num - p.ts AS INTEGER) !=
            CAST(substr(s.topic, length(rtrim(s.topic, '0123456789')) + 1) AS INTEGER)), 0)
        FROM hist_points p JOIN hist_series s ON s.id = p.series
        WHERE s.topic LIKE '$TAGS/%' AND p.ts >= $from AND p.ts < $to;")
    blocks=$(hist "SELECT count(*), coalesce(sum(b.count), 0) FROM hist_blocks b JOIN hist_series s ON s.id = b.series
        WHERE s.topic LIKE '$TAGS/%' AND b.end_ts >= $from AND b.start_ts < $to;")
    echo "${rows//|/ } ${blocks//|/ }"
}

# try_get PATH : the body of a GET, or nothing when svc answers otherwise (a route it may lack).
try_get() {
    local code
    code=$(curl -sS -o "$WORK/try-body" -w '%{http_code}' "$SVC_URL$1" -H "Authorization: Bearer $TOKEN" \
        -H "Domain: domains:$DOMAIN") || return 0
    case $code in 2??) cat "$WORK/try-body" ;; esac
}

# generator NAME MODE RATE : starts bench/peers/sparkplug_load.cjs (stdout WORK/NAME.out, stderr
# WORK/NAME.log); sets GEN_PID.
generator() {
    local name=$1 mode=$2 rate=$3
    : >"$WORK/$name.out"
    "${NICE[@]}" env NODE_PATH="$PEERS_DIR/node_modules" node "$ROOT/bench/peers/sparkplug_load.cjs" \
        --mode "$mode" --port "$SVC_MQTT_PORT" --username bench --password "$API_KEY" --group "$GROUP" \
        --nodes "$NODES" --metrics "$METRICS" --rate-hz "$rate" --warmup "$WARMUP" --duration "$DURATION" \
        --tail $((DURATION + GRACE + 300)) --prefix "$TAGS" --qos "$JSON_QOS" --json-writer "$JSON_WRITER" \
        >"$WORK/$name.out" 2>"$WORK/$name.log" &
    GEN_PID=$!
    PIDS+=("$GEN_PID")
}

# wait_line NAME PREFIX SECONDS PID : the JSON after `PREFIX ` in WORK/NAME.out once printed.
wait_line() {
    local name=$1 prefix=$2 limit=$(($3 * 10)) pid=$4 line _
    for _ in $(seq 1 "$limit"); do
        line=$(sed -n "s/^$prefix //p" "$WORK/$name.out")
        if [ -n "$line" ]; then
            echo "$line"
            return 0
        fi
        grep -q '^failed ' "$WORK/$name.out" && die "$name: $(cat "$WORK/$name.out") $(tail -n 5 "$WORK/$name.log")"
        # Looked at again once it has exited: it may have printed the line just before.
        kill -0 "$pid" 2>/dev/null || [ -n "$(sed -n "s/^$prefix //p" "$WORK/$name.out")" ] ||
            die "$name exited without \`$prefix\`: $(tail -n 5 "$WORK/$name.log")"
        sleep 0.1
    done
    die "$name printed no \`$prefix\` line within $3 s"
}

# jnum JSON KEY : a number member of a flat JSON object.
jnum() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }

# wait_births SECONDS : until every bench tag holds a value in the historian (the births'),
# which means the host declared it historized.
wait_births() {
    local limit=$(($1 * 5)) series _
    for _ in $(seq 1 "$limit"); do
        # 404 until the host declared the tag.
        curl -sS -o /dev/null -X PATCH "$SVC_URL/svc/historian/last" -H "Authorization: Bearer $TOKEN" \
            -H "Domain: domains:$DOMAIN" -H 'Content-Type: application/json' \
            --data "{\"topic\":\"$TAGS/node1/m1\",\"limit\":1}" || true
        series=$(hist "SELECT count(*) FROM hist_series WHERE topic LIKE '$TAGS/%';")
        [ "$series" -ge $((NODES * METRICS)) ] && return 0
        sleep 0.2
    done
    die "after ${1}s only $series of $((NODES * METRICS)) tags hold their birth value in the historian"
}

# measure PATH RATE ROUND : one measurement on a fresh svc; its results go to R[<key>.<name>].
declare -A R
measure() {
    local path=$1 rate=$2 round=$3 key="$1:$2:$3" name="$1-$2hz-r$3" ready t0 from to end
    SVC_NAME="svc-$name" SVC_DATA="$WORK/data-$name" start_svc "${NICE[@]}"
    CALL_HEADERS=()
    login_admin
    call POST /auth/domains "{\"name\":\"$DOMAIN\"}" >/dev/null
    CALL_HEADERS=("Domain: domains:$DOMAIN")
    call POST /svc/namespaces '{"name":"plant","path":"bench/plant"}' >/dev/null
    call POST /svc/namespaces "{\"name\":\"spb\",\"path\":\"spBv1.0/$GROUP\"}" >/dev/null
    call POST /svc/sparkplug "{\"name\":\"site\",\"namespace\":\"$NAMESPACE\",\"groups\":[\"$GROUP\"]}" >/dev/null
    API_KEY=$(call POST /auth/keys '{"name":"edge"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$API_KEY" ] || die "no API key"
    local started
    started=$(now_ms)
    if [ "$path" = json ]; then
        # The tags, declared by the host from the nodes' births, as for the Sparkplug path.
        generator "birth-$name" birth "$rate"
        wait_line "birth-$name" done 120 "$GEN_PID" >/dev/null
        stop_pid "$GEN_PID"
        wait_births 120
        generator "gen-$name" json "$rate"
    else
        generator "gen-$name" sparkplug "$rate"
    fi
    ready=$(wait_line "gen-$name" ready 120 "$GEN_PID")
    t0=$(jnum "$ready" t0) from=$(jnum "$ready" from) to=$(jnum "$ready" to) end=$(jnum "$ready" end)
    [ "$path" = json ] || wait_births 120
    R[$key.declared_ms]=$(($(now_ms) - started))
    [ "$(now_ms)" -lt "$from" ] || die "$name: the tags were declared only after the warm-up (${R[$key.declared_ms]} ms); raise BENCH_WARMUP"
    log "$name: nodes connected, every tag born (${R[$key.declared_ms]} ms); warm-up until $from, window ${DURATION}s"
    # The throughput window: DURATION s between two settles (each makes svc fold what it
    # holds).
    sleep_until "$from"
    local perf_pid="" svc_before gen_before folded_from fold_s_from at_from folded_to fold_s_to at_to
    if [ -n "${BENCH_PERF:-}" ]; then
        perf record -g -o "$BENCH_PERF-$name.data" -p "$SVC_PID" 2>"$WORK/perf-$name.log" >&2 &
        perf_pid=$!
    fi
    local folds_from folds_to io_before
    # Times and CPU are taken as each settle starts: its fold holds what arrived until then.
    at_from=$(now_ms)
    svc_before=$(cpu_ticks "$SVC_PID") gen_before=$(cpu_ticks "$GEN_PID") io_before=$(io_bytes "$SVC_PID")
    read -r folded_from fold_s_from _ folds_from <<<"$(folded)"
    R[$key.skew_ms]=$((at_from - from))
    sleep_until $((at_from + DURATION * 1000))
    at_to=$(now_ms)
    R[$key.svc_ticks]=$(($(cpu_ticks "$SVC_PID") - svc_before))
    R[$key.io_bytes]=$(($(io_bytes "$SVC_PID") - io_before))
    R[$key.gen_ticks]=$(($(cpu_ticks "$GEN_PID") - gen_before))
    read -r folded_to fold_s_to "R[$key.queue]" folds_to <<<"$(folded)"
    R[$key.rss]=$(status_kb "$SVC_PID" VmRSS) R[$key.hwm]=$(status_kb "$SVC_PID" VmHWM)
    R[$key.elapsed_ms]=$((at_to - at_from))
    R[$key.folded]=$(awk -v a="$folded_from" -v b="$folded_to" 'BEGIN { printf "%.0f", b - a }')
    R[$key.folds]=$(awk -v a="$folds_from" -v b="$folds_to" 'BEGIN { printf "%.0f", b - a }')
    R[$key.fold_pct]=$(awk -v a="$fold_s_from" -v b="$fold_s_to" -v ms="${R[$key.elapsed_ms]}" 'BEGIN { printf "%.1f", (b - a) * 100000 / ms }')
    R[$key.lag_ms]=$(($(now_ms) - $(hist "SELECT coalesce(min(newest), 0) FROM (SELECT max(p.ts) AS newest FROM hist_points p
        JOIN hist_series s ON s.id = p.series WHERE s.topic IN ('$TAGS/node1/m1', '$TAGS/node$NODES/m$METRICS') GROUP BY s.id);")))
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        log "perf data of svc written to $BENCH_PERF-$name.data"
    fi
    # The window's values (by timestamp) recorded in time: GRACE s after its last tick, the
    # load still on.
    sleep_until $(((to > at_to ? to : at_to) + GRACE * 1000))
    settle
    read -r "R[$key.rows]" "R[$key.distinct]" "R[$key.wrong]" "R[$key.blocks]" "R[$key.block_points]" <<<"$(recorded "$from" "$to")"
    log "$name: ${R[$key.folded]} values recorded in ${R[$key.elapsed_ms]} ms, ${R[$key.rows]} of the window's in time (svc ${R[$key.svc_ticks]} ticks, generator ${R[$key.gen_ticks]})"
    kill -TERM "$GEN_PID" 2>/dev/null || true
    # The generator's counts: its `done` line, or the `failed` one when a connection broke after
    # the window (reported, the run goes on).
    local done_line="" _
    for _ in $(seq 1 1200); do
        done_line=$(sed -n 's/^\(done\|failed\) //p' "$WORK/gen-$name.out")
        [ -n "$done_line" ] && break
        kill -0 "$GEN_PID" 2>/dev/null || [ -n "$(sed -n 's/^\(done\|failed\) //p' "$WORK/gen-$name.out")" ] ||
            die "gen-$name exited without counts: $(tail -n 5 "$WORK/gen-$name.log")"
        sleep 0.1
    done
    [ -n "$done_line" ] || die "gen-$name printed no counts within 120 s of SIGTERM"
    R[$key.gen_error]=$(sed -n 's/.*"error":"\([^"]*\)".*/\1/p' <<<"$done_line")
    [ -z "${R[$key.gen_error]}" ] || log "$name: the generator failed after the window: ${R[$key.gen_error]}"
    stop_pid "$GEN_PID"
    # What svc still holds (its queues, its host's inbox) is recorded once the count stops moving.
    local previous=-1 queue _
    R[$key.drain_ms]=$(now_ms)
    for _ in $(seq 1 300); do
        read -r "R[$key.rows_end]" _ _ _ _ <<<"$(recorded "$from" "$to")"
        read -r _ _ queue _ <<<"$(folded)"
        [ "${R[$key.rows_end]}" = "$previous" ] && [ "$queue" = 0 ] && break
        previous=${R[$key.rows_end]}
        sleep 1
    done
    R[$key.drain_ms]=$(($(now_ms) - R[$key.drain_ms]))
    local stat
    for stat in values_in_window values_sent skipped_values late_ticks max_lag_ms rebirth_requests bytes_sent max_backlog_bytes births; do
        R[$key.$stat]=$(jnum "$done_line" "$stat")
    done
    R[$key.spb_metrics]=$(call GET /metrics | awk '/^svc_sparkplug_/ { printf "%s%s %s", sep, $1, $2; sep = ", " }')
    local nodes
    nodes=$(try_get /svc/sparkplug/nodes)
    if [ -n "$nodes" ]; then
        R[$key.status]=$(python3 -c '
import json, sys
nodes = json.load(sys.stdin)
online = sum(1 for n in nodes if n.get("online"))
rebirths = sum(n.get("rebirths_requested", 0) for n in nodes)
problems = sorted({n["last_problem"] for n in nodes if n.get("last_problem")})
line = "%d nodes known, %d online, %d rebirths requested" % (len(nodes), online, rebirths)
print(line + (", problems: %s" % problems[:3] if problems else ""))' <<<"$nodes")
    else
        R[$key.status]="no \`GET /svc/sparkplug/nodes\` in this svc"
    fi
    stop_pid "$SVC_PID"
    R[$key.log_lines]=$(grep -c . "$WORK/svc-$name.log" || true)
    R[$key.log_first]=$(grep -v '^$' "$WORK/svc-$name.log" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-300 | head -n 3 | tr '\n' ' ' || true)
    if [ -n "${BENCH_LOGS:-}" ]; then
        mkdir -p "$BENCH_LOGS"
        cp "$WORK/svc-$name.log" "$WORK/gen-$name.log" "$WORK/gen-$name.out" "$BENCH_LOGS/" 2>/dev/null || true
    fi
    log "$name: sent ${R[$key.values_in_window]} in the window, recorded ${R[$key.rows]} in time, ${R[$key.rows_end]} in the end; rebirths ${R[$key.rebirth_requests]}; ${R[$key.status]}; svc log ${R[$key.log_lines]} lines"
    rm -rf "$WORK/data-$name"
}

PATHS_ODD=(sparkplug json)
PATHS_EVEN=(json sparkplug)
for round in $(seq 1 "$ROUNDS"); do
    for rate in $RATES; do
        if [ $((round % 2)) -eq 1 ]; then order=("${PATHS_ODD[@]}"); else order=("${PATHS_EVEN[@]}"); fi
        for path in "${order[@]}"; do
            log "round $round of $ROUNDS, $rate Hz: $path"
            measure "$path" "$rate" "$round"
        done
    done
done

# --- report -------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.3f", a / b; else print "-" }'; }
us_per() { awk -v t="$1" -v n="$2" -v hz="$TICKS_PER_SEC" 'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "-" }'; }
pct() { awk -v t="$1" -v ms="$2" -v hz="$TICKS_PER_SEC" 'BEGIN { printf "%.1f", t / hz * 100000 / ms }'; }
per_ms() { awk -v n="$1" -v ms="$2" 'BEGIN { if (ms > 0) printf "%.0f", n * 1000 / ms; else print "-" }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
fmt() { awk -v n="$1" 'BEGIN { if (n == "-") print n; else printf "%.1f", n }'; }
fmt0() { awk -v n="$1" 'BEGIN { if (n == "-") print n; else printf "%.0f", n }'; }
# sum RATE PATH FIELD : FIELD summed over the rounds.
sum() {
    local total=0 round
    for round in $(seq 1 "$ROUNDS"); do total=$((total + ${R[$2:$1:$round.$3]})); done
    echo "$total"
}
label() { if [ "$1" = sparkplug ]; then echo "Sparkplug B"; else echo "JSON (QoS $JSON_QOS)"; fi; }

TABLE=$(
    echo "| rate | path | round | values sent in the window | values/s recorded during the window | window's values recorded in time / in the end / missing | newest value at the window's end (ms old) | svc CPU per value (µs) | svc CPU (% of one CPU) | historian folds: % of the window, values per fold | svc storage writes per value (bytes) | generator CPU per value (µs) | bytes per value on the wire | svc VmRSS / VmHWM (MB) | rebirth requests | generator late ticks / max lag (ms) |"
    echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for rate in $RATES; do
        for path in sparkplug json; do
            for round in $(seq 1 "$ROUNDS"); do
                k="$path:$rate:$round"
                sent=${R[$k.values_in_window]}
                echo "| $rate Hz | $(label "$path") | $round | $sent | $(per_ms "${R[$k.folded]}" "${R[$k.elapsed_ms]}") | ${R[$k.rows]} / ${R[$k.rows_end]} / $((sent - R[$k.rows_end])) | ${R[$k.lag_ms]} | $(us_per "${R[$k.svc_ticks]}" "${R[$k.folded]}") | $(pct "${R[$k.svc_ticks]}" "${R[$k.elapsed_ms]}") | ${R[$k.fold_pct]}%, $(fmt0 "$(ratio "${R[$k.folded]}" "${R[$k.folds]}")") | $(fmt0 "$(ratio "${R[$k.io_bytes]}" "${R[$k.folded]}")") | $(us_per "${R[$k.gen_ticks]}" "$sent") | $(fmt "$(ratio "${R[$k.bytes_sent]}" "${R[$k.values_sent]}")") | $(mb "${R[$k.rss]}") / $(mb "${R[$k.hwm]}") | ${R[$k.rebirth_requests]} | ${R[$k.late_ticks]} / ${R[$k.max_lag_ms]} |"
            done
        done
    done
)

GOAL_FAILED=0
SUMMARY=$(
    echo "| rate (offered values/s) | Sparkplug values/s | JSON values/s | Sparkplug / JSON values/s | goal | result | kept up (window's values recorded in time) | svc CPU per value, Sparkplug / JSON (µs) | CPU ratio Sparkplug / JSON |"
    echo "|---:|---:|---:|---:|---|---|---|---:|---:|"
    for rate in $RATES; do
        offered=$(awk -v r="$rate" -v n="$NODES" -v m="$METRICS" 'BEGIN { printf "%.0f", r * n * m }')
        s_vps=$(per_ms "$(sum "$rate" sparkplug folded)" "$(sum "$rate" sparkplug elapsed_ms)")
        j_vps=$(per_ms "$(sum "$rate" json folded)" "$(sum "$rate" json elapsed_ms)")
        vratio=$(ratio "$s_vps" "$j_vps")
        s_us=$(us_per "$(sum "$rate" sparkplug svc_ticks)" "$(sum "$rate" sparkplug folded)")
        j_us=$(us_per "$(sum "$rate" json svc_ticks)" "$(sum "$rate" json folded)")
        if awk -v v="$vratio" 'BEGIN { exit !(v != "-" && v >= 0.8) }'; then verdict=pass; else verdict="**fail**"; fi
        kept=""
        for path in sparkplug json; do
            rows=$(sum "$rate" "$path" rows) sent=$(sum "$rate" "$path" values_in_window)
            if [ "$rows" -eq "$sent" ]; then state=yes; else state="no, $(awk -v a="$rows" -v b="$sent" 'BEGIN { printf "%.1f", a * 100 / b }')%"; fi
            kept+="${kept:+; }$(label "$path" | cut -d' ' -f1) $state"
        done
        echo "| $rate Hz ($offered) | $s_vps | $j_vps | $vratio | >= 0.8 | $verdict | $kept | $s_us / $j_us | $(ratio "$s_us" "$j_us") |"
    done
)
grep -q '\*\*fail\*\*' <<<"$SUMMARY" && GOAL_FAILED=1

CHECKS=$(
    for rate in $RATES; do
        for path in sparkplug json; do
            for round in $(seq 1 "$ROUNDS"); do
                k="$path:$rate:$round"
                echo "- $rate Hz, $(label "$path"), round $round: rows in the window ${R[$k.rows]} (distinct tag and time ${R[$k.distinct]}, wrong value ${R[$k.wrong]}; sealed blocks overlapping ${R[$k.blocks]} holding ${R[$k.block_points]} points); sent in total ${R[$k.values_sent]} values in ${R[$k.births]} births and the ticks, skipped (socket backlog) ${R[$k.skipped_values]}, largest socket backlog ${R[$k.max_backlog_bytes]} bytes; values folded into the historian in the throughput window ${R[$k.folded]}, values waiting in svc's historian queue at the window's end ${R[$k.queue]}, svc done with the load ${R[$k.drain_ms]} ms after the generator ended; tags born and declared ${R[$k.declared_ms]} ms after the nodes started; throughput window (CPU, folds) from ${R[$k.skew_ms]} ms after the first tick of the window, over ${R[$k.elapsed_ms]} ms; ${R[$k.gen_error]:+**the generator failed after the window: ${R[$k.gen_error]}**; }svc's status: ${R[$k.status]}; its metrics: ${R[$k.spb_metrics]:-none}; svc log (filter \`$SVC_LOG\`): ${R[$k.log_lines]} lines${R[$k.log_first]:+, first: \`${R[$k.log_first]}\`}"
            done
        done
    done
)

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
SVC_VERSION=$("$SVC" --version 2>/dev/null || echo "svc ?")
COMMAND="bash bench/sparkplug.sh"
for var in BENCH_SVC BENCH_NICE BENCH_NODES BENCH_METRICS BENCH_RATE_HZ BENCH_WARMUP BENCH_DURATION BENCH_GRACE BENCH_ROUNDS BENCH_JSON_QOS BENCH_JSON_WRITER BENCH_PERF; do
    [ -z "${!var:-}" ] || COMMAND="$var=\"${!var}\" $COMMAND"
done

{
    echo "# Sparkplug B benchmark: svc's Sparkplug host against plain JSON"
    echo
    echo "Written by \`bench/sparkplug.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- command: \`$COMMAND\`"
    echo "- machine: $(nproc) CPUs, $CPU, $(uname -sr); load average before the report: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- svc: $SVC_VERSION, commit $COMMIT, binary ${BENCH_SVC:-target/release/svc (built by this run)}; a fresh data dir (SQLite) for every measurement, log filter \`$SVC_LOG\`"
    echo "- load: $NODES edge nodes × $METRICS Double metrics at each rate, one MQTT connection per node (API key of the domain), nodes spread evenly over the period, each sending its whole scan at once; warm-up $WARMUP s, window $DURATION s, $ROUNDS round(s), paths interleaved (odd rounds Sparkplug first, even rounds JSON first)"
    echo "- generator: \`bench/peers/sparkplug_load.cjs\`, Node.js $(node --version), mqtt $(package_version "$PEERS_DIR" mqtt), sparkplug-payload $(package_version "$PEERS_DIR" sparkplug-payload); Sparkplug: NBIRTH (names, aliases, bdSeq) then one NDATA per node and tick, metrics by alias, QoS 0; JSON: \`{\"value\":v,\"timestamp\":ms}\` per value on the metric's tag, QoS $JSON_QOS, writer \`$JSON_WRITER\`"
    echo "- same tags for both paths: \`$TAGS/node<i>/m<j>\`, declared historized by svc's host from the nodes' NBIRTHs (for the JSON path the nodes are born, then die, before the JSON load); svc republishes the host's values at QoS 1 (journaled, folded every 4 s), QoS 0 JSON values are folded every 50 ms without the journal"
    echo "- values/s = values svc's historian folded into their series during the window (its metrics, read after a settle at each end) / the time between the reads; CPU per value = svc's user+system CPU time between the reads / those values (all of svc: broker, host, historian); kept up = the window's values (by timestamp) in the historian $GRACE s after the window, the load still on; the generator's CPU is its own process's"
    echo
    echo "$SUMMARY"
    echo
    echo "$TABLE"
    echo
    echo "Checks and raw figures:"
    echo
    echo "$CHECKS"
    echo
    echo "## How to run"
    echo
    echo "\`bash bench/sparkplug.sh\` builds target/release/svc (or takes \`BENCH_SVC=<binary>\`), installs the pinned npm packages under \${CARGO_TARGET_DIR:-target}/bench-peers (Node.js and npm from Debian if missing) and takes about $(( ($(wc -w <<<"$RATES") * 2 * ROUNDS * (WARMUP + DURATION + GRACE + 15)) / 60 + 1 )) minutes with these settings, plus what svc takes to work off the backlog of a rate it cannot keep up with (up to ~1.5 min per measurement at 40 Hz; the defaults took 20 minutes in all on 2 CPUs). Settings and what is measured are in the script's header; \`BENCH_DURATION=10 BENCH_WARMUP=10 BENCH_RATE_HZ=1\` makes a quick run."
} >"$RESULTS"

echo
echo "$SUMMARY"
echo
echo "$TABLE"
echo
log "written to $RESULTS"
if [ "$GOAL_FAILED" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
