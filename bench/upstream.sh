#!/usr/bin/env bash
# Upstream bridge benchmark (issue 14): two `svc serve` processes on this machine, the edge A
# (domain `acme`, namespace `acme/site1`) bridged to the plant B (domain `corp`, namespace
# `corp/acme`) by an upstream with one `out` binding `acme/site1` → `corp/acme/site1` at QoS 1.
# The load generator is examples/mqtt_load (rumqttc), the same for every measurement:
#
#   direct  BENCH_PUBLISHERS (4) publishers each send BENCH_MESSAGES (25,000) QoS 1 messages
#           straight to B under `corp/acme/site1/d<round>/p<i>`; one QoS 1 subscriber of
#           `corp/acme/site1/d<round>/#` on B counts them. The reference.
#   relay   the same publishers send to A under `acme/site1/r<round>/p<i>`; the bridge carries
#           them to B, where the same subscriber (of `corp/acme/site1/r<round>/#`) counts them.
#           msgs/s = delivered / (first publish → last delivery). Goal: relay >= 80% of direct.
#   catch-up  the upstream is pointed at a port nobody listens on (an outage), BENCH_CATCHUP
#           (100,000) QoS 1 messages are published to A and wait in its durable buffer, a
#           subscriber connects to B, the upstream is pointed back at B (`PUT` of its record):
#           seconds from that PUT until the last message arrived at B. Goal: <= 10 s; shown
#           also as a ratio of the direct rate.
#
# Both servers run as in production (fresh data dirs, authentication on: the generator and the
# bridge connect with API keys of the admin, as devices and bridges do). BENCH_ROUNDS rounds
# (default 3) each run direct
# then relay; the report shows the round with the median msgs/s of each and the ratio of those
# medians, and the catch-up (one outage, after the rounds). Nothing may be lost.
#
#   bash bench/upstream.sh
#   BENCH_ROUNDS=1 BENCH_MESSAGES=5000 BENCH_CATCHUP=20000 bash bench/upstream.sh
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_PUBLISHERS (4), BENCH_MESSAGES (25000 per
# publisher), BENCH_CATCHUP (100000), BENCH_SIZE (64), SVC_LOG (default info; logs are kept
# only on failure), BENCH_PERF=<file> to record `perf record -g` of the edge during the first
# relay run, BENCH_STRICT=1 to exit 1 when a goal is missed, BENCH_SVC=<path> to measure
# an already built svc binary. Results go to bench/upstream-results.md (overwritten) with the
# machine, its load and the date.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
ROUNDS=${BENCH_ROUNDS:-3}
PUBLISHERS=${BENCH_PUBLISHERS:-4}
MESSAGES=${BENCH_MESSAGES:-25000}
CATCHUP=${BENCH_CATCHUP:-100000}
SIZE=${BENCH_SIZE:-64}
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/upstream-results.md"

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

build_tools mqtt_load
LOADER="$ROOT/target/release/examples/mqtt_load"
bench_workdir upstream

# --- the plant (B) and the edge (A) --------------------------------------------------------
# start_site NAME DOMAIN NAMESPACE PATH : a fresh `svc serve` (its logs named NAME) with DOMAIN
# and its namespace NAMESPACE at PATH; sets SITE_URL, SITE_MQTT, SITE_PID and SITE_KEY (an API
# key of the admin). `call` then addresses that server in DOMAIN.
start_site() {
    CALL_HEADERS=()
    SVC_NAME=$1 SVC_DATA="$WORK/$1" start_svc
    SITE_URL=$SVC_URL
    SITE_MQTT=$SVC_MQTT_PORT
    SITE_PID=$SVC_PID
    login_admin
    SITE_KEY=$(call POST /auth/keys '{"name":"bench"}' | jq -r .key)
    call POST /auth/domains "{\"name\":\"$2\"}" >/dev/null
    CALL_HEADERS=("Domain: domains:$2")
    call POST /svc/namespaces "{\"name\":\"$3\",\"path\":\"$4\"}" >/dev/null
}
start_site plant corp acme corp/acme
PLANT_URL=$SITE_URL PLANT_MQTT=$SITE_MQTT PLANT_PID=$SITE_PID PLANT_KEY=$SITE_KEY
start_site edge acme site1 acme/site1
EDGE_URL=$SITE_URL EDGE_MQTT=$SITE_MQTT EDGE_PID=$SITE_PID EDGE_KEY=$SITE_KEY

# upstream_body PORT : the upstream record pointing at PORT on loopback.
upstream_body() {
    printf '{"name":"plant","host":"127.0.0.1","port":%s,"username":"bridge","password":"%s",' "$1" "$PLANT_KEY"
    printf '"reconnect":{"initial":"200ms","max":"1s"},"buffer":{"max_messages":1000000},'
    printf '"bindings":[{"direction":"out","local":"acme/site1","remote":"corp/acme/site1","qos":1}]}'
}
UPSTREAM_ID=$(call POST /svc/upstreams "$(upstream_body "$PLANT_MQTT")" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$UPSTREAM_ID" ] || die "the upstream was not created"
UPSTREAM_PATH="/svc/$(jq -rn --arg id "$UPSTREAM_ID" '$id|@uri')"

# upstream_field JQ : a field of the upstream's status.
upstream_field() {
    call GET "/svc/upstreams/$(jq -rn --arg id "$UPSTREAM_ID" '$id|@uri')/status" | jq -r "$1"
}

# wait_upstream JQ_CONDITION WHAT : polls the status (30 s) until the condition holds.
wait_upstream() {
    local _
    for _ in $(seq 1 600); do
        [ "$(upstream_field "$1")" = true ] && return 0
        sleep 0.05
    done
    die "the upstream was not $2 within 30 s: $(upstream_field .)"
}
wait_upstream '.state == "connected"' connected
log "edge $EDGE_URL bridged to plant $PLANT_URL (mqtt port $PLANT_MQTT)"

# load PORT KEY PREFIX SUB_PREFIX : one fan-in run publishing to PORT (API key KEY) under
# PREFIX, counted on the plant under SUB_PREFIX; prints its JSON line.
load() {
    "$LOADER" --port "$1" --username bench --password "$2" \
        --sub-username bench --sub-password "$PLANT_KEY" \
        --publishers "$PUBLISHERS" --messages "$MESSAGES" --qos 1 --size "$SIZE" \
        --topic-prefix "$3" --sub-port "$PLANT_MQTT" --sub-prefix "$4" 2>>"$WORK/loader.log" ||
        die "mqtt_load failed publishing under $3"
}

TICKS_PER_SEC=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# with_cpu PID… -- CMD… : runs CMD and adds to its JSON line `cpu_us_per_msg_<i>`, the CPU time
# of the i-th PID (0-based) per delivered message, and `cpu_us_per_msg_generator`, the load
# generator's own (CMD's children: user + system time).
with_cpu() {
    local pids=() before=() line i generator
    while [ "$1" != -- ]; do pids+=("$1"); shift; done
    shift
    for i in "${!pids[@]}"; do before[i]=$(cpu_ticks "${pids[$i]}"); done
    local TIMEFORMAT='%U %S'
    { time "$@" >"$WORK/line.json"; } 2>"$WORK/time.txt"
    line=$(cat "$WORK/line.json")
    generator=$(awk '{ print $1 + $2 }' "$WORK/time.txt")
    line=$(jq -c --argjson s "$generator" \
        '. + {cpu_us_per_msg_generator: ($s * 1e6 / .received * 100 | round / 100)}' <<<"$line")
    for i in "${!pids[@]}"; do
        line=$(jq -c --argjson t "$(($(cpu_ticks "${pids[$i]}") - before[i]))" --argjson hz "$TICKS_PER_SEC" \
            ". + {\"cpu_us_per_msg_$i\": (\$t / \$hz * 1e6 / .received * 100 | round / 100)}" <<<"$line")
    done
    echo "$line"
}

DIRECT=()
RELAY=()
for round in $(seq 1 "$ROUNDS"); do
    direct=$(with_cpu "$PLANT_PID" -- load "$PLANT_MQTT" "$PLANT_KEY" "corp/acme/site1/d$round" "corp/acme/site1/d$round")
    if [ "$round" = 1 ] && [ -n "${BENCH_PERF:-}" ]; then
        perf record -g -o "$BENCH_PERF" -p "$EDGE_PID" 2>>"$WORK/perf.log" &
        PERF_PID=$!
        sleep 0.5
    fi
    relay=$(with_cpu "$PLANT_PID" "$EDGE_PID" -- load "$EDGE_MQTT" "$EDGE_KEY" "acme/site1/r$round" "corp/acme/site1/r$round")
    if [ -n "${PERF_PID:-}" ]; then
        kill -INT "$PERF_PID"
        wait "$PERF_PID" || true
        PERF_PID=""
        log "perf profile of the edge during relay round 1: $BENCH_PERF"
    fi
    log "round $round: direct $direct"
    log "round $round: relay  $relay"
    DIRECT+=("$direct")
    RELAY+=("$relay")
done

# median FIELD LINE… : the line whose FIELD is the median.
median() {
    local field=$1
    shift
    printf '%s\n' "$@" | jq -s "sort_by(.$field) | .[length / 2 | floor]" -c
}
DIRECT_MEDIAN=$(median msgs_per_s "${DIRECT[@]}")
RELAY_MEDIAN=$(median msgs_per_s "${RELAY[@]}")
LOST=$(printf '%s\n' "${DIRECT[@]}" "${RELAY[@]}" | jq -s 'map(.lost) | add')

# --- catch-up after an outage ---------------------------------------------------------------
NOWHERE=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
call PUT "$UPSTREAM_PATH" "{\"port\":$NOWHERE}" >/dev/null
wait_upstream '.state == "backoff" or .state == "connecting"' "cut off"
log "outage: publishing $CATCHUP messages to the edge"
CATCHUP_PUBLISHERS=4
"$LOADER" --port "$EDGE_MQTT" --username bench --password "$EDGE_KEY" \
    --publishers "$CATCHUP_PUBLISHERS" --messages $((CATCHUP / CATCHUP_PUBLISHERS)) --qos 1 \
    --size "$SIZE" --topic-prefix acme/site1/c --sub-port "$EDGE_MQTT" --sub-prefix acme/site1/c \
    >"$WORK/outage.json" 2>>"$WORK/loader.log" || die "mqtt_load failed during the outage"
wait_upstream ".buffer.messages == $CATCHUP" "holding $CATCHUP messages"
"$LOADER" --mode drain --port "$PLANT_MQTT" --username bench --password "$PLANT_KEY" --qos 1 \
    --messages "$CATCHUP" --sub-prefix corp/acme/site1/c >"$WORK/drain.json" 2>"$WORK/drain.log" &
DRAIN_PID=$!
PIDS+=("$DRAIN_PID")
for _ in $(seq 1 300); do
    grep -q subscribed "$WORK/drain.log" && break
    sleep 0.05
done
grep -q subscribed "$WORK/drain.log" || die "the drain subscriber did not subscribe"
RESTORED_MS=$(date +%s%3N)
call PUT "$UPSTREAM_PATH" "{\"port\":$PLANT_MQTT}" >/dev/null
wait "$DRAIN_PID" || die "the drain subscriber failed: $(cat "$WORK/drain.log")"
DRAIN=$(cat "$WORK/drain.json")
log "catch-up: $DRAIN (link restored at $RESTORED_MS)"
CATCHUP_RECEIVED=$(jq .received <<<"$DRAIN")
CATCHUP_S=$(jq -n --argjson d "$DRAIN" --argjson t "$RESTORED_MS" '($d.last_ms - $t) / 1000')

# --- report ---------------------------------------------------------------------------------
DIRECT_RATE=$(jq .msgs_per_s <<<"$DIRECT_MEDIAN")
RELAY_RATE=$(jq .msgs_per_s <<<"$RELAY_MEDIAN")
RELAY_RATIO=$(jq -n "$RELAY_RATE / $DIRECT_RATE")
CATCHUP_RATE=$(jq -n "$CATCHUP_RECEIVED / $CATCHUP_S")
CATCHUP_RATIO=$(jq -n "$CATCHUP_RATE / $DIRECT_RATE")
verdict() { if [ "$(jq -n "$1")" = true ]; then echo pass; else echo "**fail**"; fi; }
RELAY_VERDICT=$(verdict "$RELAY_RATIO >= 0.8 and $LOST == 0")
CATCHUP_VERDICT=$(verdict "$CATCHUP_S <= 10 and $CATCHUP_RECEIVED >= $CATCHUP")
{
    echo "# Upstream bridge benchmark"
    echo
    echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d)"
    echo "- svc: $("$SVC" --version 2>/dev/null || echo "$SVC"), both servers on this machine; load: \`examples/mqtt_load\` (rumqttc), $PUBLISHERS QoS 1 publishers × $MESSAGES messages of $SIZE bytes, one QoS 1 subscriber on the plant; $ROUNDS rounds, median shown"
    echo "- command: \`bash bench/upstream.sh\`"
    echo
    echo "| measurement | msgs/s | ratio to direct | goal | result |"
    echo "|---|---:|---:|---|---|"
    printf '| direct: publishers → plant (reference) | %.0f | 1.00 | | |\n' "$DIRECT_RATE"
    printf '| relay: publishers → edge → bridge → plant | %.0f | %.2f | >= 0.80, nothing lost (lost: %s) | %s |\n' \
        "$RELAY_RATE" "$RELAY_RATIO" "$LOST" "$RELAY_VERDICT"
    printf '| catch-up: %s buffered messages after an outage | %.0f (%.2f s) | %.2f | <= 10 s, all arrive (%s) | %s |\n' \
        "$CATCHUP" "$CATCHUP_RATE" "$CATCHUP_S" "$CATCHUP_RATIO" "$CATCHUP_RECEIVED" "$CATCHUP_VERDICT"
    echo
    printf 'CPU per delivered message (median rounds): direct: plant %s µs + generator %s µs; relay: plant %s µs + edge %s µs + generator %s µs (%s CPUs shared by all).\n' \
        "$(jq .cpu_us_per_msg_0 <<<"$DIRECT_MEDIAN")" "$(jq .cpu_us_per_msg_generator <<<"$DIRECT_MEDIAN")" \
        "$(jq .cpu_us_per_msg_0 <<<"$RELAY_MEDIAN")" "$(jq .cpu_us_per_msg_1 <<<"$RELAY_MEDIAN")" \
        "$(jq .cpu_us_per_msg_generator <<<"$RELAY_MEDIAN")" "$(nproc)"
    echo
    echo "Every round:"
    echo
    for i in "${!DIRECT[@]}"; do
        echo "- round $((i + 1)): direct \`${DIRECT[$i]}\`; relay \`${RELAY[$i]}\`"
    done
    echo "- outage publish into the edge's buffer: \`$(cat "$WORK/outage.json")\`"
    echo "- catch-up drain on the plant: \`$DRAIN\`"
} >"$RESULTS"
cat "$RESULTS"
kill "$EDGE_PID" "$PLANT_PID" 2>/dev/null || true
if [ "${BENCH_STRICT:-0}" = 1 ] && grep -q '\*\*fail\*\*' "$RESULTS"; then
    exit 1
fi
