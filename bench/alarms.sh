#!/usr/bin/env bash
# Alarm benchmark of `svc serve` (issue 37): the broker's fan-in load with BENCH_ALARMS (10,000)
# alarm definitions watching its topics, against the same binary with none, and value → alarm
# event latency, in one run on the same machine with the load generator of bench/broker.sh
# (examples/mqtt_load):
#   fan-in    20 publishers → one `bench/plant/#` subscriber, as in bench/broker.sh, except that
#             publisher i cycles its messages over 500 topics `bench/plant/p<i>/t<k>` (20 × 500 =
#             10,000 topics, one alarm each: `high`, setpoint 1,000,000, which the load's values,
#             its message numbers, never reach), QoS 0 with 20×20,000 and QoS 1 with 20×5,000
#             messages: delivered msgs/s and svc's CPU per message, with alarms and without;
#   latency   one subscriber of `$SYS/svc/alarms/bench/#` and one publisher paced at
#             BENCH_CROSSING_RATE (200) crossings/s: each sets a random alarmed topic above the
#             setpoint (to 1,000,000,000 + its number, which the alarm event carries back) and
#             BENCH_RESET_MS (50) ms later below it again; p50 / p99 / max of event receipt −
#             crossing publish over BENCH_LATENCY_MS (5000) ms after a 1 s warm-up, on an idle
#             broker and while fan-in QoS 0 bursts run back to back; beside it, as a reference,
#             plain publish → deliver latency at the same rate (`--mode latency`) under the same
#             two conditions, so what the alarms add is told apart from a saturated machine.
#
#   bash bench/alarms.sh
#   BENCH_SVC=/path/to/svc BENCH_ROUNDS=1 bash bench/alarms.sh
#
# Two instances of the same svc binary run for the whole run, each on a fresh SQLite data dir
# with domain `bench` owning `bench/plant` (a namespace) and an admin API key as the MQTT
# password: `alarms`, with the alarm definitions created through the record routes (`svc
# records import alarms`, 8 requests in flight; the time it takes is reported), and `plain`
# with none. BENCH_SVC_BASELINE=<binary> adds a third, `baseline` (no alarms), e.g. a build from
# before the alarm work, reported as plain / baseline. Each of BENCH_ROUNDS (3) rounds runs
# fan-in QoS 0 and QoS 1 on every instance (the order of instances alternates between rounds),
# then the latency measurements on `alarms`; the report shows per instance and QoS the round
# with the median msgs/s, the latency round with the median p99, and every round's figures.
# Goals (issue 37): fan-in msgs/s with alarms >= 0.9 × without (both QoS), and alarm event p99
# <= 10 ms (idle and under load). Results: bench/alarms-results.md (overwritten).
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_ALARMS (10000; a multiple of
# BENCH_PUBLISHERS), BENCH_PUBLISHERS (20), BENCH_QOS0_MESSAGES (20000), BENCH_QOS1_MESSAGES
# (5000), BENCH_SIZE (64), BENCH_CROSSING_RATE (200), BENCH_RESET_MS (50), BENCH_LATENCY_MS
# (5000), BENCH_SVC, BENCH_SVC_BASELINE, BENCH_LOADER=<mqtt_load binary> (with BENCH_SVC: build
# nothing), BENCH_NICE (all processes under `nice -n <value>`),
# BENCH_PERF=<file> (`perf record` of the BENCH_PERF_INSTANCE instance, `alarms` or `plain`,
# during its first fan-in at QoS BENCH_PERF_QOS, default 0, with call graphs by
# BENCH_PERF_CALLS: fp, the default, or dwarf for a binary without frame pointers),
# BENCH_STRICT=1 (exit 1 when a goal is missed), SVC_LOG (warn).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
ROUNDS=${BENCH_ROUNDS:-3}
ALARMS=${BENCH_ALARMS:-10000}
PUBLISHERS=${BENCH_PUBLISHERS:-20}
QOS0_MESSAGES=${BENCH_QOS0_MESSAGES:-20000}
QOS1_MESSAGES=${BENCH_QOS1_MESSAGES:-5000}
SIZE=${BENCH_SIZE:-64}
CROSSING_RATE=${BENCH_CROSSING_RATE:-200}
RESET_MS=${BENCH_RESET_MS:-50}
LATENCY_MS=${BENCH_LATENCY_MS:-5000}
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/alarms-results.md"
DOMAIN=bench
PREFIX=bench/plant
SETPOINT=1000000
CROSSING_BASE=1000000000
NICE=()
if [ -n "${BENCH_NICE:-}" ]; then NICE=(nice -n "$BENCH_NICE"); fi
SVC_LOG=${SVC_LOG:-warn}
export SVC_LOG

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

[ $((ALARMS % PUBLISHERS)) -eq 0 ] || die "BENCH_ALARMS ($ALARMS) must be a multiple of BENCH_PUBLISHERS ($PUBLISHERS)"
TOPICS=$((ALARMS / PUBLISHERS))
command -v curl >/dev/null 2>&1 || install_deb curl
if [ -n "${BENCH_PERF:-}" ]; then command -v perf >/dev/null 2>&1 || die "BENCH_PERF needs perf"; fi
if [ -n "${BENCH_LOADER:-}" ]; then
    # Both prebuilt: nothing to build (a quick check of the script with debug builds).
    [ -n "${BENCH_SVC:-}" ] || die "BENCH_LOADER needs BENCH_SVC"
    SVC=$(realpath "$BENCH_SVC") LOADER=$(realpath "$BENCH_LOADER")
else
    build_tools mqtt_load
    LOADER="$TARGET/release/examples/mqtt_load"
fi
BASELINE=${BENCH_SVC_BASELINE:-}
if [ -n "$BASELINE" ]; then [ -x "$BASELINE" ] || die "BENCH_SVC_BASELINE=$BASELINE is not an executable"; fi

bench_workdir alarms-bench
TICKS_PER_SEC=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# field JSON KEY : the number after "KEY": in JSON, or `-`.
field() {
    local v
    v=$(sed -n "s/.*\"$2\":\(-\?[0-9.]*\).*/\1/p" <<<"$1")
    echo "${v:--}"
}

# --- instances ----------------------------------------------------------------------------
# instance NAME BINARY WITH_ALARMS : a fresh svc with the domain, its namespace and an API key;
# with alarms (yes) the definitions too. Fills INST_PID, INST_PORT, INST_KEY, INST_URL and
# INST_TOKEN (the admin's login) for NAME.
declare -A INST_PID INST_PORT INST_KEY INST_URL INST_TOKEN
CREATE_SECONDS=-
instance() {
    local name=$1 bin=$2 with=$3 key
    SVC=$bin SVC_NAME=$name SVC_DATA="$WORK/data-$name" start_svc "${NICE[@]}"
    CALL_HEADERS=()
    login_admin
    call POST /auth/domains "{\"name\":\"$DOMAIN\"}" >/dev/null
    CALL_HEADERS=("Domain: domains:$DOMAIN")
    call POST /svc/namespaces "{\"name\":\"plant\",\"path\":\"$PREFIX\"}" >/dev/null
    key=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$key" ] || die "$name: no API key"
    INST_PID[$name]=$SVC_PID INST_PORT[$name]=$SVC_MQTT_PORT INST_KEY[$name]=$key
    INST_URL[$name]=$SVC_URL INST_TOKEN[$name]=$TOKEN
    [ "$with" = yes ] || return 0
    log "$name: creating $ALARMS alarms (svc records import, 8 in flight)"
    local p k started ended count
    for p in $(seq 0 $((PUBLISHERS - 1))); do
        for k in $(seq 0 $((TOPICS - 1))); do
            printf '{"name":"a%d_%d","tag":"%s/p%d/t%d","kind":"high","setpoint":%d,"priority":"low"}\n' \
                "$p" "$k" "$PREFIX" "$p" "$k" "$SETPOINT"
        done
    done >"$WORK/alarms.jsonl"
    started=$(date +%s%3N)
    "$bin" --url "$SVC_URL" --api-key "$key" --domain "$DOMAIN" --output json \
        records import alarms "$WORK/alarms.jsonl" --concurrency 8 >"$WORK/import.out" 2>"$WORK/import.log" ||
        die "$name: importing the alarms failed: $(tail -n 5 "$WORK/import.log")"
    ended=$(date +%s%3N)
    count=$(call GET /svc/alarms/count | sed -n 's/.*"count":\([0-9]*\).*/\1/p')
    [ "$count" = "$ALARMS" ] || die "$name: $count alarms stored, $ALARMS expected"
    CREATE_SECONDS=$(awk -v ms=$((ended - started)) 'BEGIN { printf "%.1f", ms / 1000 }')
    log "$name: $ALARMS alarms created in $CREATE_SECONDS s"
}

instance alarms "$SVC" yes
instance plain "$SVC" no
INSTANCES=(plain alarms)
if [ -n "$BASELINE" ]; then
    instance baseline "$(realpath "$BASELINE")" no
    INSTANCES+=(baseline)
fi

# Alarms are evaluated: a crossing raises an event, and the fan-in's next value clears it.
check_alarms_live() {
    local out
    out=$("$LOADER" --mode alarm-latency --host 127.0.0.1 --port "${INST_PORT[alarms]}" --username bench \
        --password "${INST_KEY[alarms]}" --alarm-filter "\$SYS/svc/alarms/$DOMAIN/#" --topic-prefix "$PREFIX" \
        --publishers "$PUBLISHERS" --topics "$TOPICS" --rate 20 --warmup-ms 0 --duration-ms 1000 \
        --crossing-base "$CROSSING_BASE" --reset-ms "$RESET_MS" --subscriber-qos 1 2>>"$WORK/loader.log") ||
        die "the alarm check failed"
    [ "$(field "$out" samples)" = 20 ] || die "alarm events missing on an idle broker: $out"
    log "alarms raise events: $out"
}
check_alarms_live

# --- measurements -------------------------------------------------------------------------
# forget_pid PID : a process that exited (and was waited for) leaves the exit trap's list.
forget_pid() {
    local kept=() p
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
    PIDS=("${kept[@]}")
}

# fanin INSTANCE QOS [TAG] : one fan-in run; prints "TAG INSTANCE QOS sent received lost
# msgs_per_s cpu_us_per_100_msgs" (TAG: fanin, or loaded for the bursts under a latency run).
PERF_DONE=""
fanin() {
    local name=$1 qos=$2 tag=${3:-fanin} messages=$QOS0_MESSAGES before after out perf_pid="" received
    [ "$qos" = 0 ] || messages=$QOS1_MESSAGES
    local pid=${INST_PID[$name]}
    if [ "$name" = "${BENCH_PERF_INSTANCE:-alarms}" ] && [ "$tag" = fanin ] && [ "$qos" = "${BENCH_PERF_QOS:-0}" ] &&
        [ -n "${BENCH_PERF:-}" ] && [ -z "$PERF_DONE" ]; then
        perf record --call-graph "${BENCH_PERF_CALLS:-fp}" -o "$BENCH_PERF" -p "$pid" 2>"$WORK/perf.log" >&2 &
        perf_pid=$!
        PERF_DONE=1
        sleep 0.5
    fi
    before=$(cpu_ticks "$pid")
    out=$("${NICE[@]}" "$LOADER" --host 127.0.0.1 --port "${INST_PORT[$name]}" --username bench \
        --password "${INST_KEY[$name]}" --mode fan-in --publishers "$PUBLISHERS" --messages "$messages" \
        --topics "$TOPICS" --qos "$qos" --subscriber-qos "$qos" --size "$SIZE" --topic-prefix "$PREFIX" \
        2>>"$WORK/loader.log") || die "fan-in against $name failed"
    after=$(cpu_ticks "$pid")
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        log "perf data of the $name instance written to $BENCH_PERF"
    fi
    [ "$tag" = fanin ] && log "$name fan-in QoS $qos: $out"
    received=$(field "$out" received)
    echo "$tag $name $qos $(field "$out" sent) $received $(field "$out" lost) $(field "$out" msgs_per_s)" \
        "$(( received > 0 ? (after - before) * 1000000 / TICKS_PER_SEC * 100 / received : 0 ))"
}

# latency KIND LOAD : KIND alarm (value → alarm event) or mqtt (publish → deliver, the
# reference) on the alarms instance, LOAD idle or fanin (QoS 0 fan-in bursts back to back
# meanwhile); prints "latency KIND LOAD crossings samples missing p50 p99 max fanin_msgs_per_s".
latency() {
    local kind=$1 load=$2 flags out pid bursts=0 rate_sum=0 line
    if [ "$kind" = alarm ]; then
        flags=(--mode alarm-latency --alarm-filter "\$SYS/svc/alarms/$DOMAIN/#" --publishers "$PUBLISHERS"
            --topics "$TOPICS" --crossing-base "$CROSSING_BASE" --reset-ms "$RESET_MS")
    else
        flags=(--mode latency)
    fi
    "${NICE[@]}" "$LOADER" --host 127.0.0.1 --port "${INST_PORT[alarms]}" --username bench \
        --password "${INST_KEY[alarms]}" "${flags[@]}" --topic-prefix "$PREFIX" --rate "$CROSSING_RATE" \
        --warmup-ms 1000 --duration-ms "$LATENCY_MS" --qos 0 --subscriber-qos 1 --size "$SIZE" \
        >"$WORK/latency.out" 2>>"$WORK/loader.log" &
    pid=$!
    PIDS+=("$pid")
    if [ "$load" = fanin ]; then
        while kill -0 "$pid" 2>/dev/null; do
            line=$(fanin alarms 0 loaded)
            bursts=$((bursts + 1))
            rate_sum=$((rate_sum + $(cut -d' ' -f7 <<<"$line")))
        done
    fi
    wait "$pid" || die "latency ($kind, $load) failed: $(tail -n 3 "$WORK/loader.log")"
    forget_pid "$pid"
    out=$(cat "$WORK/latency.out")
    log "latency $kind $load: $out${bursts:+ (fan-in bursts: $bursts)}"
    local crossings samples missing
    if [ "$kind" = alarm ]; then
        crossings=$(field "$out" crossings) samples=$(field "$out" samples) missing=$(field "$out" missing)
    else
        samples=$(field "$out" samples) crossings=$samples missing=$(field "$out" lost)
    fi
    echo "latency $kind $load $crossings $samples $missing $(field "$out" p50_us) $(field "$out" p99_us)" \
        "$(field "$out" max_us) $([ "$bursts" -gt 0 ] && echo $((rate_sum / bursts)) || echo -)"
}

# One unrecorded QoS 0 fan-in per instance first: svc registers a tag for each of the 10,000
# topics the first time it sees it, a cost of the first run only (round 1 of the first run
# measured 57k msgs/s without it, against ~170k after).
for name in "${INSTANCES[@]}"; do
    log "$name: warm-up fan-in (registers the topics as tags)"
    fanin "$name" 0 warmup >/dev/null
done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
{
    for round in $(seq 1 "$ROUNDS"); do
        log "round $round of $ROUNDS"
        order=("${INSTANCES[@]}")
        if [ $((round % 2)) -eq 0 ]; then
            order=()
            for ((i = ${#INSTANCES[@]} - 1; i >= 0; i--)); do order+=("${INSTANCES[$i]}"); done
        fi
        for qos in 0 1; do
            for name in "${order[@]}"; do fanin "$name" "$qos"; done
        done
        for load in idle fanin; do
            latency alarm "$load"
            latency mqtt "$load"
        done
    done
} >"$WORK/results"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
for name in "${INSTANCES[@]}"; do
    echo "memory $name $(status_kb "${INST_PID[$name]}" VmRSS) $(status_kb "${INST_PID[$name]}" VmHWM)"
done >>"$WORK/results"
# What the run left in the alarm system: the crossings raised and cleared, nothing else (the
# list of chattering alarms, topics crossed 3 times within a minute, is left out).
HEALTH=$(curl -sS "${INST_URL[alarms]}/svc/alarms/health" -H "Authorization: Bearer ${INST_TOKEN[alarms]}" \
    -H "Domain: domains:$DOMAIN" | sed 's/"chattering":\[[^]]*\]/"chattering":"…"/' || true)

# --- report -------------------------------------------------------------------------------
REPORT=$(awk -v baseline="$BASELINE" -v pubs="$PUBLISHERS" -v q0="$QOS0_MESSAGES" -v q1="$QOS1_MESSAGES" \
    -v alarms="$ALARMS" -v rate="$CROSSING_RATE" -v created="$CREATE_SECONDS" '
function median(list, n,    a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
}
function verdict(ok) { checked++; if (!ok) failed++; return ok ? "**pass**" : "**FAIL**" }
$1 == "fanin" {
    k = $2 " " $3
    rates[k] = rates[k] (rates[k] == "" ? "" : " ") $7
    cpu[k, $7] = $8; lost[k] += $6
    next
}
$1 == "latency" {
    k = $2 " " $3
    p99s[k] = p99s[k] (p99s[k] == "" ? "" : " ") $8
    row[k, $8] = $0
    next
}
$1 == "memory" { rss[$2] = $3; hwm[$2] = $4 }
END {
    B = (baseline != "")
    printf "| measurement | with %d alarms | without | with / without | goal | result |%s\n", alarms, B ? " baseline (no alarms) | without / baseline |" : ""
    printf "|---|---:|---:|---:|---|---|%s\n", B ? "---:|---:|" : ""
    for (q = 0; q <= 1; q++) {
        what = sprintf("fan-in QoS %d (%d×%d → 1, %d topics)", q, pubs, q == 0 ? q0 : q1, alarms)
        a = median(rates["alarms " q]); p = median(rates["plain " q]); b = B ? median(rates["baseline " q]) : 0
        printf "| %s: delivered msgs/s | %.0f | %.0f | %.3f | ≥ 0.9 | %s |", what, a, p, a / p, verdict(a >= 0.9 * p)
        if (B) printf " %.0f | %.3f |", b, p / b
        printf "\n"
        ca = cpu["alarms " q, a] / 100; cp = cpu["plain " q, p] / 100
        printf "| %s: svc CPU per message | %.2f µs | %.2f µs | %.2f | | |", what, ca, cp, ca / cp
        if (B) { cb = cpu["baseline " q, b] / 100; printf " %.2f µs | %.2f |", cb, cp / cb }
        printf "\n"
        printf "| %s: lost (all rounds) | %d | %d | | 0 | %s |%s\n", what, lost["alarms " q], lost["plain " q], \
            verdict(lost["alarms " q] + lost["plain " q] == 0), B ? sprintf(" %d | |", lost["baseline " q]) : ""
    }
    split("idle fanin", loads, " ")
    for (l = 1; l <= 2; l++) {
        k = "alarm " loads[l]; m = "mqtt " loads[l]
        split(row[k, median(p99s[k])], A, " "); split(row[m, median(p99s[m])], M, " ")
        what = loads[l] == "idle" ? "idle broker" : "under fan-in QoS 0 bursts"
        printf "| value → alarm event, %s, %d crossings/s: p50 / p99 / max | %.2f / %.2f / %.2f ms | | | p99 ≤ 10 ms | %s |%s\n", \
            what, rate, A[7] / 1000, A[8] / 1000, A[9] / 1000, verdict(A[8] <= 10000), B ? " | |" : ""
        printf "| value → alarm event, %s: events matched / crossings (missing) | %d / %d (%d) | | | | |%s\n", \
            what, A[5], A[4], A[6], B ? " | |" : ""
        printf "| reference: MQTT publish → deliver, %s, %d msgs/s: p50 / p99 / max | %.2f / %.2f / %.2f ms | | | | |%s\n", \
            what, rate, M[7] / 1000, M[8] / 1000, M[9] / 1000, B ? " | |" : ""
        if (loads[l] == "fanin")
            printf "| fan-in QoS 0 msgs/s during the alarm latency run (mean of its bursts) | %s | | | | |%s\n", A[10], B ? " | |" : ""
    }
    printf "| resident memory after the run / peak (VmRSS / VmHWM) | %.1f / %.1f MB | %.1f / %.1f MB | | | |%s\n", \
        rss["alarms"] / 1024, hwm["alarms"] / 1024, rss["plain"] / 1024, hwm["plain"] / 1024, \
        B ? sprintf(" %.1f / %.1f MB | |", rss["baseline"] / 1024, hwm["baseline"] / 1024) : ""
    printf "| creating the %d alarms (`svc records import`, 8 in flight) | %s s | | | | |%s\n", alarms, created, B ? " | |" : ""
    printf "\nGoals met: %d of %d.\n\nEvery round (fan-in: delivered msgs/s; latency: p99 µs):\n\n", checked - failed, checked
    split("plain alarms baseline", names, " ")
    for (q = 0; q <= 1; q++) for (i = 1; i <= 3; i++) if ((names[i] " " q) in rates)
        printf "- %s, fan-in QoS %d: %s\n", names[i], q, rates[names[i] " " q]
    split("alarm mqtt", kinds, " ")
    for (i = 1; i <= 2; i++) for (l = 1; l <= 2; l++) printf "- %s latency, %s: %s\n", kinds[i], loads[l], p99s[kinds[i] " " loads[l]]
    exit failed ? 3 : 0
}' "$WORK/results") && GOALS=0 || GOALS=$?
[ "$GOALS" -le 3 ] || die "the report failed (awk exit $GOALS)"

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
{
    echo "# Alarm benchmark: the broker's fan-in with $ALARMS alarms, and value → alarm event latency"
    echo
    echo "Written by \`bench/alarms.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc) CPUs, ${CPU:-$(uname -m)}, $(uname -sr)"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}; nice: ${BENCH_NICE:-0}; log filter \`$SVC_LOG\`"
    echo "- instances (same binary, fresh SQLite data dirs, up for the whole run): \`alarms\` with $ALARMS alarm definitions (\`high\`, setpoint $SETPOINT, one per topic \`$PREFIX/p<i>/t<k>\`), \`plain\` with none${BASELINE:+, \`baseline\` = $BASELINE with none}; domain \`$DOMAIN\` owns \`$PREFIX\`, admin API key as MQTT password, no historized tags"
    echo "- fan-in: \`examples/mqtt_load --mode fan-in --topics $((ALARMS / PUBLISHERS))\`: one \`$PREFIX/#\` subscriber first, then $PUBLISHERS publishers each cycling over its $((ALARMS / PUBLISHERS)) topics, $SIZE-byte JSON payloads whose value (the message number) stays below the setpoint; msgs/s = delivered / (first publish → last delivery); $ROUNDS round(s), instance order alternating, the median round shown"
    echo "- latency: \`--mode alarm-latency\`, $CROSSING_RATE crossings/s on random alarmed topics (QoS 0), each reset below the setpoint ${RESET_MS} ms later; the event subscriber on \`\$SYS/svc/alarms/$DOMAIN/#\` at QoS 1; 1 s warm-up then ${LATENCY_MS} ms measured; \"under fan-in\" = QoS 0 fan-in bursts run back to back on the same instance meanwhile; reference: \`--mode latency\` (publish → deliver on \`$PREFIX/latency\`, no alarm) at the same rate; the round with the median p99 shown"
    echo "- load average (1, 5, 15 min) before / after measuring: $LOAD_BEFORE / $LOAD_AFTER (above ~0.5 before: something else was running, treat the numbers as noisy)"
    echo "- alarm health after the run (GET /svc/alarms/health): \`$HEALTH\`"
    echo
    echo "$REPORT"
} >"$RESULTS"
echo
echo "$REPORT"
echo
log "written to bench/alarms-results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
