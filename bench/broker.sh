#!/usr/bin/env bash
# MQTT broker throughput of `svc serve` against Mosquitto, measured in one run on the same machine
# with the same load generator (examples/mqtt_load.rs, rumqttc):
#   20 publishers (`bench/p<i>`) → one `bench/#` subscriber (connected first, same QoS),
#   QoS 0 with 20×20,000 and QoS 1 with 20×5,000 messages of 64 bytes (JSON objects).
#
#   bash bench/broker.sh
#
# svc runs as in production: a fresh data dir, authentication on (an API key created as admin
# is the MQTT password), topic authorization, and the historian recording every `bench/p<i>`
# (declared as historized tags before the load). Mosquitto (Debian package `mosquitto`, installed
# if missing) runs on loopback with anonymous access, no queue or in-flight limits and no
# persistence. Both brokers stay up for the whole run; BENCH_ROUNDS rounds (default 3) each run
# the four measurements interleaved (Mosquitto QoS 0, svc QoS 0, Mosquitto QoS 1, svc QoS 1), and
# the report shows, per broker and QoS, the round with the median delivered msgs/s, plus the loss
# summed over every round, the broker's CPU time per delivered message (from /proc/<pid>/stat;
# steadier than msgs/s on a busy machine), resident memory (VmRSS, and the peak VmHWM) of each
# broker after all rounds, and how many values reached svc's historian (rows of `hist_points`,
# counted read-only with sqlite3 once the count stops moving). Goals: svc >= 1.5x Mosquitto at
# QoS 0 and at QoS 1, nothing lost, svc resident memory <= 100 MB. The report is written to
# bench/broker-results.md (overwritten) with the machine, its load and the date.
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_PUBLISHERS (20), BENCH_QOS0_MESSAGES (20000),
# BENCH_QOS1_MESSAGES (5000), BENCH_SIZE (64), SVC_LOG (svc's log filter, default info; its log is
# kept only on failure), BENCH_STRICT=1 to exit 1 when a goal is missed, BENCH_SVC=<path> to
# measure an already built svc binary instead of building target/release/svc, BENCH_PERF=<file>
# to record `perf record -g` of svc during the first svc run at QoS BENCH_PERF_QOS (default 0), BENCH_NICE (run both brokers
# and the load generator under `nice -n <value>`; a negative value, as root, keeps other jobs on a
# shared machine from stealing the benchmark's CPU), BENCH_SVC_BASELINE=<path> to measure a
# second svc binary (e.g. the previous commit's) interleaved in the same rounds, reported as
# `baseline` with the ratio svc / baseline.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
ROUNDS=${BENCH_ROUNDS:-3}
PUBLISHERS=${BENCH_PUBLISHERS:-20}
QOS0_MESSAGES=${BENCH_QOS0_MESSAGES:-20000}
QOS1_MESSAGES=${BENCH_QOS1_MESSAGES:-5000}
SIZE=${BENCH_SIZE:-64}
PASSWORD="bench-$(date +%s)-$$"
RESULTS="$ROOT/bench/broker-results.md"
NICE=()
if [ -n "${BENCH_NICE:-}" ]; then NICE=(nice -n "$BENCH_NICE"); fi

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# --- tools --------------------------------------------------------------------------------
MOSQUITTO=$(command -v mosquitto || true)
[ -n "$MOSQUITTO" ] || [ ! -x /usr/sbin/mosquitto ] || MOSQUITTO=/usr/sbin/mosquitto
if [ -z "$MOSQUITTO" ]; then
    install_deb mosquitto
    MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)
fi
command -v curl >/dev/null 2>&1 || install_deb curl
command -v sqlite3 >/dev/null 2>&1 || install_deb sqlite3
if [ -n "${BENCH_PERF:-}" ]; then command -v perf >/dev/null 2>&1 || die "BENCH_PERF needs perf"; fi

build_tools mqtt_load
LOADER="$ROOT/target/release/examples/mqtt_load"

# --- brokers ------------------------------------------------------------------------------
bench_workdir broker-bench
start_svc "${NICE[@]}"

# Mosquitto takes a port from its config: try a few random free-looking ports.
MOSQUITTO_PID=""
for _ in 1 2 3 4 5; do
    MOSQUITTO_PORT=$((20000 + RANDOM % 40000))
    cat >"$WORK/mosquitto.conf" <<CONF
listener $MOSQUITTO_PORT 127.0.0.1
allow_anonymous true
max_queued_messages 0
max_queued_bytes 0
max_inflight_messages 0
max_inflight_bytes 0
persistence false
log_dest stderr
log_type error
log_type warning
CONF
    "${NICE[@]}" "$MOSQUITTO" -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.out" 2>"$WORK/mosquitto.log" &
    pid=$!
    up=""
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        if (exec 3<>"/dev/tcp/127.0.0.1/$MOSQUITTO_PORT") 2>/dev/null; then up=1; break; fi
        sleep 0.1
    done
    if [ -n "$up" ]; then
        MOSQUITTO_PID=$pid
        PIDS+=("$pid")
        break
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
done
[ -n "$MOSQUITTO_PID" ] || { cat "$WORK/mosquitto.log" >&2; die "mosquitto did not start"; }
MOSQUITTO_VERSION=$({ "$MOSQUITTO" -h 2>/dev/null || true; } | sed -n 's/^mosquitto version \([^ ]*\).*/\1/p' | head -n 1)
log "mosquitto ${MOSQUITTO_VERSION:-?} ready on port $MOSQUITTO_PORT (pid $MOSQUITTO_PID)"

# --- svc credentials and historized tags --------------------------------------------------
# prepare_svc : API_KEY for the svc at SVC_URL, and the historized bench tags declared there.
prepare_svc() {
    login_admin
    API_KEY=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$API_KEY" ] || die "no API key"
    log "declaring $PUBLISHERS historized tags bench/p0..bench/p$((PUBLISHERS - 1))"
    for i in $(seq 0 $((PUBLISHERS - 1))); do
        call POST /svc/tags "{\"path\":\"bench/p$i\",\"historize\":true}" >/dev/null
    done
    HISTORIZED=$(call GET /svc/historian/list | grep -o '"bench/p[0-9]*"' | wc -l)
    [ "$HISTORIZED" -eq "$PUBLISHERS" ] || die "GET /svc/historian/list has $HISTORIZED bench tags, expected $PUBLISHERS"
}
prepare_svc
BASELINE=${BENCH_SVC_BASELINE:-}
if [ -n "$BASELINE" ]; then
    [ -x "$BASELINE" ] || die "BENCH_SVC_BASELINE=$BASELINE is not an executable"
    MAIN=("$SVC" "$SVC_PID" "$SVC_URL" "$SVC_MQTT_PORT" "$DB" "$API_KEY" "$TOKEN")
    SVC=$BASELINE SVC_DATA="$WORK/baseline-data" SVC_NAME=baseline start_svc "${NICE[@]}"
    prepare_svc
    BASE_PID=$SVC_PID BASE_MQTT_PORT=$SVC_MQTT_PORT BASE_API_KEY=$API_KEY
    SVC=${MAIN[0]} SVC_PID=${MAIN[1]} SVC_URL=${MAIN[2]} SVC_MQTT_PORT=${MAIN[3]} DB=${MAIN[4]}
    API_KEY=${MAIN[5]} TOKEN=${MAIN[6]}
fi

# --- measure ------------------------------------------------------------------------------
TICKS_PER_SEC=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# measure BROKER QOS MESSAGES : one load run; prints "BROKER QOS sent received lost seconds
# msgs_per_s cpu_us_per_msg".
PERF_DONE=""
measure() {
    local broker=$1 qos=$2 messages=$3 port pid creds=() before after out perf_pid=""
    if [ "$broker" = svc ]; then
        port=$SVC_MQTT_PORT pid=$SVC_PID creds=(--username bench --password "$API_KEY")
    elif [ "$broker" = baseline ]; then
        port=$BASE_MQTT_PORT pid=$BASE_PID creds=(--username bench --password "$BASE_API_KEY")
    else
        port=$MOSQUITTO_PORT pid=$MOSQUITTO_PID
    fi
    if [ "$broker" = svc ] && [ "$qos" = "${BENCH_PERF_QOS:-0}" ] && [ -n "${BENCH_PERF:-}" ] && [ -z "$PERF_DONE" ]; then
        perf record -g -o "$BENCH_PERF" -p "$SVC_PID" 2>"$WORK/perf.log" >&2 &
        perf_pid=$!
        PERF_DONE=1
        sleep 0.5
    fi
    log "$broker QoS $qos: $PUBLISHERS x $messages messages of $SIZE bytes"
    before=$(cpu_ticks "$pid")
    out=$("${NICE[@]}" "$LOADER" --host 127.0.0.1 --port "$port" "${creds[@]}" --publishers "$PUBLISHERS" \
        --messages "$messages" --qos "$qos" --subscriber-qos "$qos" --size "$SIZE" \
        --topic-prefix bench 2>>"$WORK/loader.log") || die "mqtt_load failed against $broker"
    after=$(cpu_ticks "$pid")
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        log "perf data of svc written to $BENCH_PERF"
    fi
    log "  $out"
    local received
    received=$(field "$out" received)
    echo "$broker $qos $(field "$out" sent) $received $(field "$out" lost) $(field "$out" seconds)" \
        "$(field "$out" msgs_per_s)" \
        "$(( received > 0 ? (after - before) * 1000000 / TICKS_PER_SEC * 100 / received : 0 ))"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$ROUNDS"); do
    log "round $round of $ROUNDS"
    measure mosquitto 0 "$QOS0_MESSAGES"
    measure svc 0 "$QOS0_MESSAGES"
    [ -z "$BASELINE" ] || measure baseline 0 "$QOS0_MESSAGES"
    measure mosquitto 1 "$QOS1_MESSAGES"
    measure svc 1 "$QOS1_MESSAGES"
    [ -z "$BASELINE" ] || measure baseline 1 "$QOS1_MESSAGES"
done >"$WORK/results"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# QoS 0 values are committed asynchronously: wait until the row count stops moving.
EXPECTED_HIST=$((ROUNDS * PUBLISHERS * (QOS0_MESSAGES + QOS1_MESSAGES)))
HIST=-1
for _ in $(seq 1 60); do
    sleep 0.5
    NOW=$(sqlite3 -readonly "$WORK/data/svc.db" 'PRAGMA busy_timeout=5000; SELECT count(*) FROM hist_points;' | tail -n 1)
    [ "$NOW" = "$HIST" ] && break
    HIST=$NOW
    [ "$HIST" -ge "$EXPECTED_HIST" ] && break
done
SVC_RSS=$(status_kb "$SVC_PID" VmRSS)
SVC_HWM=$(status_kb "$SVC_PID" VmHWM)
MOSQUITTO_RSS=$(status_kb "$MOSQUITTO_PID" VmRSS)
MOSQUITTO_HWM=$(status_kb "$MOSQUITTO_PID" VmHWM)

# --- report -------------------------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
REPORT=$(awk -v svc_rss="$SVC_RSS" -v svc_hwm="$SVC_HWM" -v m_rss="$MOSQUITTO_RSS" \
    -v m_hwm="$MOSQUITTO_HWM" -v hist="$HIST" -v hist_expected="$EXPECTED_HIST" \
    -v pubs="$PUBLISHERS" -v q0="$QOS0_MESSAGES" -v q1="$QOS1_MESSAGES" -v rounds="$ROUNDS" \
    -v baseline="$BASELINE" '
    # $1 broker $2 qos $3 sent $4 received $5 lost $6 seconds $7 msgs/s $8 cpu us per 100 msgs
    { k = $1 " " $2; c[k]++; line[k, c[k]] = $0; r[k, c[k]] = $7; lost[k] += $5 }
    function pick(k,    i, j, t, idx, f) {
        for (i = 1; i <= c[k]; i++) idx[i] = i
        for (i = 1; i <= c[k]; i++) for (j = i + 1; j <= c[k]; j++)
            if (r[k, idx[j]] < r[k, idx[i]]) { t = idx[i]; idx[i] = idx[j]; idx[j] = t }
        split(line[k, idx[int((c[k] + 1) / 2)]], f, " ")
        rate[k] = f[7]; secs[k] = f[6]; cpu[k] = f[8] / 100
        all[k] = ""
        for (i = 1; i <= c[k]; i++) all[k] = all[k] (i > 1 ? ", " : "") r[k, i]
    }
    END {
        nb = split(baseline == "" ? "mosquitto svc" : "mosquitto svc baseline", brokers, " ")
        print "| broker | load | delivered msgs/s (median) | all rounds | seconds | lost (all rounds) | broker CPU/msg | svc / Mosquitto |"
        print "|---|---|---:|---|---:|---:|---:|---:|"
        for (q = 0; q <= 1; q++) {
            for (b = 1; b <= nb; b++) {
                k = brokers[b] " " q; pick(k)
                ratio = (b >= 2 && rate["mosquitto " q] > 0) ? sprintf("**%.2fx**", rate[k] / rate["mosquitto " q]) : ""
                printf "| %s | QoS %d, %dx%d | %.0f | %s | %.2f | %d | %.2f µs | %s |\n", brokers[b], q, pubs, q == 0 ? q0 : q1, rate[k], all[k], secs[k], lost[k], cpu[k], ratio
            }
        }
        print ""
        printf "- resident memory after all rounds (VmRSS; peak VmHWM): svc %.1f MB (peak %.1f MB), Mosquitto %.1f MB (peak %.1f MB)\n", svc_rss / 1024, svc_hwm / 1024, m_rss / 1024, m_hwm / 1024
        printf "- values in svc'"'"'s historian (`hist_points` rows) after all rounds: %d of %d published\n", hist, hist_expected
        print ""
        ok0 = rate["svc 0"] >= 1.5 * rate["mosquitto 0"]
        ok1 = rate["svc 1"] >= 1.5 * rate["mosquitto 1"]
        okl = (lost["svc 0"] + lost["svc 1"]) == 0
        okm = svc_rss <= 100 * 1024
        okh = hist >= hist_expected
        printf "- svc >= 1.5x Mosquitto at QoS 0: %.2fx → %s\n", rate["svc 0"] / rate["mosquitto 0"], ok0 ? "**met**" : "**NOT met**"
        printf "- svc >= 1.5x Mosquitto at QoS 1: %.2fx → %s\n", rate["svc 1"] / rate["mosquitto 1"], ok1 ? "**met**" : "**NOT met**"
        printf "- nothing lost by svc: %d lost → %s\n", lost["svc 0"] + lost["svc 1"], okl ? "**met**" : "**NOT met**"
        printf "- svc resident memory <= 100 MB after the run: %.1f MB → %s (peak during the run: %.1f MB, %s)\n", svc_rss / 1024, okm ? "**met**" : "**NOT met**", svc_hwm / 1024, svc_hwm <= 100 * 1024 ? "also within 100 MB" : "**above 100 MB**"
        printf "- every published value historized: %d of %d → %s\n", hist, hist_expected, okh ? "**yes**" : "**no**"
        if (baseline != "") {
            for (q = 0; q <= 1; q++)
                printf "- svc / baseline (`%s`) at QoS %d: %.2fx msgs/s, CPU/msg %.2f µs against %.2f µs\n", baseline, q, rate["svc " q] / rate["baseline " q], cpu["svc " q], cpu["baseline " q]
        }
        if (lost["mosquitto 0"] + lost["mosquitto 1"] > 0) print "- Mosquitto lost messages: its rate is not a clean reference"
        exit (ok0 && ok1 && okl && okm) ? 0 : 3
    }' "$WORK/results") && GOALS=0 || GOALS=$?

{
    echo "# Broker benchmark: svc against Mosquitto"
    echo
    echo "Written by \`bench/broker.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc) CPUs, $CPU, $(uname -sr)"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}; nice: ${BENCH_NICE:-0} (both brokers and the load generator)"
    echo "- load: \`examples/mqtt_load.rs\` (rumqttc): one \`bench/#\` subscriber connected first at the run's QoS, then $PUBLISHERS concurrent publishers on \`bench/p<i>\`, $SIZE-byte JSON payloads; msgs/s = messages delivered to the subscriber / (first publish → last delivery); QoS 1 publishers wait for every PUBACK; the load generator shares the machine with the brokers"
    echo "- svc: fresh data dir, API-key authentication, topic authorization, historian recording all $PUBLISHERS topics (historized tags); log filter \`${SVC_LOG:-info}\`"
    echo "- Mosquitto ${MOSQUITTO_VERSION:-?} (Debian): loopback listener, anonymous, \`max_queued_messages 0\`, \`max_inflight_messages 0\` (no limits), no persistence"
    echo "- $ROUNDS interleaved round(s); per broker and QoS the round with the median msgs/s is shown; broker CPU/msg = the broker's user+system CPU time during that run / messages delivered"
    echo "- load average (1, 5, 15 min) before / after measuring: $LOAD_BEFORE / $LOAD_AFTER (anything above ~0.5 before means something else was running: treat the numbers as noisy)"
    echo
    echo "$REPORT"
} >"$RESULTS"

echo
echo "$REPORT"
echo
log "written to bench/broker-results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
