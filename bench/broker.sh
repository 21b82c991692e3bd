#!/usr/bin/env bash
# MQTT broker benchmark of `svc serve` against Mosquitto, measured in one run on the same machine
# with the same load generator (examples/mqtt_load, rumqttc):
#   fan-in   20 publishers (`bench/p<i>`) → one `bench/#` subscriber (connected first, same QoS),
#            QoS 0 with 20×20,000 and QoS 1 with 20×5,000 messages: delivered msgs/s;
#   fan-out  one publisher → 200 subscribers of `bench/fanout` (all subscribed first, same QoS),
#            QoS 0 with 2,000 and QoS 1 with 1,000 messages (×200 deliveries): delivered msgs/s;
#   latency  one publisher paced at 20,000 msgs/s (a tokio interval, in batches) → one subscriber
#            of `bench/latency`, QoS 0 and 1, 1 s warm-up then 5 s measured: publish → deliver
#            p50 / p99 (the payload carries its send time; the generator's two sockets get
#            TCP_NODELAY, or Nagle would hold QoS 0 publishes for up to the delayed-ACK time).
#            Generator `--mode latency-raw`: each batch written encoded with one write, its send
#            time taken just before, and the subscriber on a thread of its own that times a
#            read as it returns (BENCH_LATENCY_GENERATOR=rumqttc: `--mode latency`, whose event
#            loop writes a batch one message at a time after the send times are taken, and whose
#            subscriber waits for the publisher on the generator's one runtime);
#   idle     10,000 connections held open (keep alive 60 s), once per broker on the fresh broker
#            before the other loads: memory per connection = (VmRSS with them − VmRSS before) /
#            connections held;
#   queued   a persistent subscriber (MQTT 3.1.1, clean session off) of `bench/queued` goes away
#            and one publisher sends it 100,000 QoS 1 messages (svc's default `mqtt_max_queue`),
#            once per broker after the idle connections: memory per queued message = (VmRSS with
#            the queue − VmRSS before) / messages; the subscriber then comes back for every one.
# Every payload is a 64-byte JSON object.
#
#   bash bench/broker.sh
#   BENCH_ROUNDS=1 BENCH_IDLE_CONNECTIONS=2000 BENCH_QOS0_MESSAGES=5000 bash bench/broker.sh
#
# svc runs as in production: a fresh data dir, authentication on (an API key created as admin
# is the MQTT password), topic authorization, and the historian recording every topic of the
# loads (`bench/p<i>`, `bench/fanout`, `bench/latency`, declared as historized tags before the
# load). Mosquitto (Debian package `mosquitto`, installed if missing) runs on loopback with
# anonymous access, no queue, in-flight or connection limits, TCP_NODELAY (as svc's listener)
# and no persistence. The script raises its RLIMIT_NOFILE (ulimit -n; the hard limit too when it
# may) for the idle connections, and both brokers and the generator inherit it. Both brokers stay up for the whole run;
# BENCH_ROUNDS rounds (default 3) each run every load interleaved (each load and QoS on every
# broker in turn, the order reversed every other round so that no broker always goes first), and
# the report shows per broker and figure the median over the rounds with its spread
# (least–greatest), the loss summed over every round, the broker's CPU time per delivered
# message (from /proc/<pid>/stat; steadier than msgs/s on a busy machine), resident memory (VmRSS
# after all rounds, and the peak VmHWM), and how many values reached svc's historian (hot rows of
# `hist_points` plus the points closed into `hist_blocks`, which never hold the same point;
# counted read-only with sqlite3 once every value is, or the count has stood still for 6 s). Goals (issues 13 and 40):
# fan-in >= 2x Mosquitto's msgs/s at QoS 0 and >= 3x at QoS 1, fan-out >= 1.5x, CPU per message
# below Mosquitto's, at the fixed rate p99 and CPU per message <= Mosquitto's in every round
# (each round's svc against that round's Mosquitto), memory per idle connection <= Mosquitto's, svc
# memory per queued message <= Mosquitto's, resident memory <= 64 MB after the run and <= 100 MB at
# peak, nothing lost and every value
# historized. The report (one table, bench/broker-report.awk) is written to
# bench/broker-results.md (overwritten) with the machine, its load and the date.
#
# Settings (environment): BENCH_ROUNDS (3), BENCH_PUBLISHERS (20), BENCH_QOS0_MESSAGES (20000),
# BENCH_QOS1_MESSAGES (5000), BENCH_SIZE (64), BENCH_FANOUT_SUBSCRIBERS (200),
# BENCH_FANOUT_QOS0_MESSAGES (2000), BENCH_FANOUT_QOS1_MESSAGES (1000), BENCH_LATENCY_RATE
# (20000 msgs/s), BENCH_LATENCY_WARMUP_MS (1000), BENCH_LATENCY_MS (5000, the measured window),
# BENCH_IDLE_CONNECTIONS (10000; 0 skips the idle measurement), BENCH_QUEUED_MESSAGES (100000;
# 0 skips the queued measurement), SVC_LOG (svc's log filter,
# default info; its log is kept only on failure), BENCH_STRICT=1 to exit 1 when a goal is missed,
# BENCH_SVC=<path> to measure an already built svc binary instead of building target/release/svc,
# BENCH_PERF=<file> to record `perf record -g` of svc during the first svc run of the load
# BENCH_PERF_LOAD (fanin, the default, fanout or latency) at QoS BENCH_PERF_QOS (default 0), BENCH_NICE (run both brokers and the load generator under
# `nice -n <value>`; a negative value, as root, keeps other jobs on a shared machine from stealing
# the benchmark's CPU), BENCH_PIN (1, the default: the generator on the first half of the CPUs,
# every broker on the other half, by `taskset`, see `pin_cpus` in bench/lib.sh; 0: unpinned),
# BENCH_SVC_BASELINE=<path> to measure a second svc binary (e.g. the
# previous commit's) interleaved in the same rounds, reported as `baseline` with the ratio
# svc / baseline, BENCH_FANIN_GENERATOR (both, the default: each broker's better run of
# the two; rumqttc; or raw: the fan-in load from pre-encoded packets without a client event
# loop, `--mode fan-in-raw`), BENCH_LATENCY_GENERATOR (raw, the default, or rumqttc: see
# "latency" above).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
ROUNDS=${BENCH_ROUNDS:-3}
PUBLISHERS=${BENCH_PUBLISHERS:-20}
QOS0_MESSAGES=${BENCH_QOS0_MESSAGES:-20000}
QOS1_MESSAGES=${BENCH_QOS1_MESSAGES:-5000}
SIZE=${BENCH_SIZE:-64}
FANOUT_SUBSCRIBERS=${BENCH_FANOUT_SUBSCRIBERS:-200}
FANOUT_QOS0_MESSAGES=${BENCH_FANOUT_QOS0_MESSAGES:-2000}
FANOUT_QOS1_MESSAGES=${BENCH_FANOUT_QOS1_MESSAGES:-1000}
LATENCY_RATE=${BENCH_LATENCY_RATE:-20000}
LATENCY_WARMUP_MS=${BENCH_LATENCY_WARMUP_MS:-1000}
LATENCY_MS=${BENCH_LATENCY_MS:-5000}
IDLE_CONNECTIONS=${BENCH_IDLE_CONNECTIONS:-10000}
QUEUED_MESSAGES=${BENCH_QUEUED_MESSAGES:-100000}
# The fan-in generator: rumqttc's event loops (`fan-in`), pre-encoded packets without one
# (`fan-in-raw`), whose CPU per message is a fraction of a broker's, or both (the default): each
# broker's fan-in figure of a round is then the better of the two runs. A broker that reads a
# message in several small system calls (Mosquitto: three) does worse under the raw
# generator, which keeps its sockets full, than under rumqttc's slower one; svc does better
# under raw, as rumqttc then measures itself (bench/broker-history.md, "The fan-in generator
# was the neighbour"). Each broker is compared at its best.
case ${BENCH_LATENCY_GENERATOR:-raw} in
    raw) LATENCY_MODE=latency-raw
        LATENCY_NOTE="generator \`--mode latency-raw\`: each batch encoded and written with one write, its send time taken just before; the subscriber on a thread of its own, timing each read as it returns" ;;
    rumqttc) LATENCY_MODE=latency
        LATENCY_NOTE="generator \`--mode latency\` (rumqttc: a batch written one message per write after its send times are taken; the subscriber on the publisher's runtime)" ;;
    *) die "BENCH_LATENCY_GENERATOR is raw or rumqttc, not ${BENCH_LATENCY_GENERATOR}" ;;
esac
case ${BENCH_FANIN_GENERATOR:-both} in
    rumqttc) FANIN_MODES=(fan-in); FANIN_NOTE="\`--mode fan-in\`" ;;
    raw) FANIN_MODES=(fan-in-raw)
        FANIN_NOTE="\`--mode fan-in-raw\` (pre-encoded packets through rumqttc's codec, no client event loop)" ;;
    both) FANIN_MODES=(fan-in fan-in-raw)
        FANIN_NOTE="both \`--mode fan-in\` (rumqttc) and \`--mode fan-in-raw\` (pre-encoded packets through rumqttc's codec, no client event loop), one after the other; each broker's figure of a round is its better run (which generator gave it: below the table)" ;;
    *) die "BENCH_FANIN_GENERATOR is both, rumqttc or raw, not ${BENCH_FANIN_GENERATOR}" ;;
esac
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

# --- descriptors --------------------------------------------------------------------------
# Each idle connection is a socket in the generator and one in the broker, and the brokers and
# the generator inherit this shell's limit: raise it before starting any of them.
NEED_FDS=$((IDLE_CONNECTIONS + FANOUT_SUBSCRIBERS + 1024))
HARD_FDS=$(ulimit -Hn)
if [ "$HARD_FDS" != unlimited ] && [ "$HARD_FDS" -lt "$NEED_FDS" ]; then
    ulimit -Hn "$NEED_FDS" 2>/dev/null ||
        die "RLIMIT_NOFILE hard limit is $HARD_FDS, $NEED_FDS needed: raise it or lower BENCH_IDLE_CONNECTIONS"
fi
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt "$NEED_FDS" ]; then ulimit -Sn "$NEED_FDS"; fi
log "RLIMIT_NOFILE $(ulimit -Sn) (hard $(ulimit -Hn))"

build_tools mqtt_load
LOADER="$TARGET/release/examples/mqtt_load"
pin_cpus 1

# --- brokers ------------------------------------------------------------------------------
bench_workdir broker-bench
start_svc "${NICE[@]}" "${SERVER_PIN[@]}"

# Mosquitto takes a port from its config: try a few random free-looking ports. Like svc's
# listener it sets TCP_NODELAY (Mosquitto's default leaves Nagle on, which adds up to the peer's
# delayed-ACK time to latency), and it has no connection limit for the idle connections.
MOSQUITTO_PID=""
for _ in 1 2 3 4 5; do
    MOSQUITTO_PORT=$((20000 + RANDOM % 40000))
    cat >"$WORK/mosquitto.conf" <<CONF
listener $MOSQUITTO_PORT 127.0.0.1
max_connections -1
set_tcp_nodelay true
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
    "${NICE[@]}" "${SERVER_PIN[@]}" "$MOSQUITTO" -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.out" 2>"$WORK/mosquitto.log" &
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
# prepare_svc : API_KEY for the svc at SVC_URL, and the historized bench tags declared there:
# the fan-in publishers' `bench/p<i>`, `bench/fanout` and `bench/latency`.
prepare_svc() {
    login_admin
    API_KEY=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$API_KEY" ] || die "no API key"
    local tags=() i
    for i in $(seq 0 $((PUBLISHERS - 1))); do tags+=("bench/p$i"); done
    tags+=(bench/fanout bench/latency)
    log "declaring ${#tags[@]} historized tags: bench/p0..bench/p$((PUBLISHERS - 1)), bench/fanout, bench/latency"
    for i in "${tags[@]}"; do
        call POST /svc/tags "{\"path\":\"$i\",\"historize\":true}" >/dev/null
    done
    HISTORIZED=$(call GET /svc/historian/list | grep -o '"bench/[a-z0-9]*"' | sort -u | wc -l)
    [ "$HISTORIZED" -eq "${#tags[@]}" ] || die "GET /svc/historian/list has $HISTORIZED bench tags, expected ${#tags[@]}"
}
prepare_svc
BASELINE=${BENCH_SVC_BASELINE:-}
if [ -n "$BASELINE" ]; then
    [ -x "$BASELINE" ] || die "BENCH_SVC_BASELINE=$BASELINE is not an executable"
    MAIN=("$SVC" "$SVC_PID" "$SVC_URL" "$SVC_MQTT_PORT" "$DB" "$API_KEY" "$TOKEN")
    SVC=$BASELINE SVC_DATA="$WORK/baseline-data" SVC_NAME=baseline start_svc "${NICE[@]}" "${SERVER_PIN[@]}"
    prepare_svc
    BASE_PID=$SVC_PID BASE_MQTT_PORT=$SVC_MQTT_PORT BASE_API_KEY=$API_KEY
    SVC=${MAIN[0]} SVC_PID=${MAIN[1]} SVC_URL=${MAIN[2]} SVC_MQTT_PORT=${MAIN[3]} DB=${MAIN[4]}
    API_KEY=${MAIN[5]} TOKEN=${MAIN[6]}
fi
BROKERS=(mosquitto svc)
[ -z "$BASELINE" ] || BROKERS+=(baseline)

# --- measure ------------------------------------------------------------------------------
# (cpu_ticks, steal_ticks and TICKS_PER_SEC come from bench/lib.sh.)
# field JSON KEY : the number after "KEY": in JSON, or `-` when there is none (or it is null).
field() {
    local v
    v=$(sed -n "s/.*\"$2\":\(-\?[0-9.]*\).*/\1/p" <<<"$1")
    echo "${v:--}"
}
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
fd_count() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

# target BROKER : PORT, PID and CREDS (the generator's credential flags) of that broker.
target() {
    case $1 in
        svc) PORT=$SVC_MQTT_PORT PID=$SVC_PID CREDS=(--username bench --password "$API_KEY") ;;
        baseline) PORT=$BASE_MQTT_PORT PID=$BASE_PID CREDS=(--username bench --password "$BASE_API_KEY") ;;
        *) PORT=$MOSQUITTO_PORT PID=$MOSQUITTO_PID CREDS=() ;;
    esac
}

# measure BROKER LOAD QOS : one run of LOAD (fanin, fanout or latency); prints "BROKER LOAD QOS
# sent published received lost seconds msgs_per_s cpu_us_per_100_msgs p50_us p99_us max_us
# send_rate steal_ms" (`-` where the load has no such number; steal_ms: CPU time the hypervisor
# took from the machine during the run, every CPU summed). A fan-in runs once per generator of
# FANIN_MODES and prints the run with the most msgs/s; each run goes to $WORK/generators as
# "BROKER QOS MODE msgs_per_s published".
PERF_DONE=""
measure() {
    local broker=$1 load=$2 qos=$3
    if [ "$load" != fanin ]; then
        measure_with "$broker" "$load" "$qos" ""
        return
    fi
    local mode line best="" best_rate=-1 rate
    for mode in "${FANIN_MODES[@]}"; do
        # Not in a command substitution: the perf recording's flag must outlive the run.
        measure_with "$broker" "$load" "$qos" "$mode" >"$WORK/run"
        line=$(cat "$WORK/run")
        rate=$(cut -d' ' -f9 <<<"$line")
        echo "$broker $qos $mode $rate $(cut -d' ' -f5 <<<"$line")" >>"$WORK/generators"
        if [ "${rate%.*}" -gt "$best_rate" ]; then best=$line best_rate=${rate%.*}; fi
    done
    echo "$best"
}

# measure_with BROKER LOAD QOS FANIN_MODE : one run, as `measure` prints it.
measure_with() {
    local broker=$1 load=$2 qos=$3 mode=$4 before after steal_before steal_after out perf_pid="" flags=()
    target "$broker"
    case $load in
        fanin)
            local messages=$QOS0_MESSAGES
            [ "$qos" = 0 ] || messages=$QOS1_MESSAGES
            flags=(--mode "$mode" --publishers "$PUBLISHERS" --messages "$messages")
            log "$broker fan-in ($mode) QoS $qos: $PUBLISHERS x $messages messages → 1 subscriber" ;;
        fanout)
            local messages=$FANOUT_QOS0_MESSAGES
            [ "$qos" = 0 ] || messages=$FANOUT_QOS1_MESSAGES
            flags=(--mode fan-out --subscribers "$FANOUT_SUBSCRIBERS" --messages "$messages")
            log "$broker fan-out QoS $qos: $messages messages → $FANOUT_SUBSCRIBERS subscribers" ;;
        latency)
            flags=(--mode "$LATENCY_MODE" --rate "$LATENCY_RATE" --warmup-ms "$LATENCY_WARMUP_MS" --duration-ms "$LATENCY_MS")
            log "$broker latency QoS $qos: $LATENCY_RATE msgs/s, ${LATENCY_WARMUP_MS} ms warm-up + ${LATENCY_MS} ms" ;;
    esac
    if [ "$broker" = svc ] && [ "$load" = "${BENCH_PERF_LOAD:-fanin}" ] && [ "$qos" = "${BENCH_PERF_QOS:-0}" ] &&
        [ -n "${BENCH_PERF:-}" ] && [ -z "$PERF_DONE" ]; then
        perf record -g -o "$BENCH_PERF" -p "$SVC_PID" 2>"$WORK/perf.log" >&2 &
        perf_pid=$!
        PERF_DONE=1
        sleep 0.5
    fi
    before=$(cpu_ticks "$PID")
    steal_before=$(steal_ticks)
    out=$("${NICE[@]}" "$LOADER" --host 127.0.0.1 --port "$PORT" "${CREDS[@]}" "${flags[@]}" \
        --qos "$qos" --subscriber-qos "$qos" --size "$SIZE" --topic-prefix bench \
        2>>"$WORK/loader.log") || die "mqtt_load ${flags[*]} failed against $broker"
    after=$(cpu_ticks "$PID")
    steal_after=$(steal_ticks)
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        log "perf data of svc written to $BENCH_PERF"
    fi
    log "  $out"
    local received
    received=$(field "$out" received)
    echo "$broker $load $qos $(field "$out" sent) $(field "$out" published) $received" \
        "$(field "$out" lost) $(field "$out" seconds) $(field "$out" msgs_per_s)" \
        "$(( received > 0 ? (after - before) * 1000000 / TICKS_PER_SEC * 100 / received : 0 ))" \
        "$(field "$out" p50_us) $(field "$out" p99_us) $(field "$out" max_us) $(field "$out" send_rate)" \
        "$(( (steal_after - steal_before) * 1000 / TICKS_PER_SEC ))"
}

# measure_idle BROKER : IDLE_CONNECTIONS held open against the broker, which reads its VmRSS
# before and with them; prints "idle BROKER connections held failed rss_before_kb rss_with_kb
# bytes_per_connection connect_seconds", then waits until the broker has closed them.
measure_idle() {
    local broker=$1 out fds_before
    target "$broker"
    fds_before=$(fd_count "$PID")
    log "$broker idle: $IDLE_CONNECTIONS connections (keep alive 60 s)"
    out=$("${NICE[@]}" "$LOADER" --mode idle --host 127.0.0.1 --port "$PORT" "${CREDS[@]}" \
        --connections "$IDLE_CONNECTIONS" --keep-alive 60 --broker-pid "$PID" \
        2>>"$WORK/loader.log") || die "mqtt_load --mode idle failed against $broker"
    log "  $out"
    echo "idle $broker $(field "$out" connections) $(field "$out" held) $(field "$out" failed)" \
        "$(field "$out" rss_before_kb) $(field "$out" rss_with_kb) $(field "$out" bytes_per_connection)" \
        "$(field "$out" connect_seconds)"
    # The generator has exited: let the broker close its side before the next measurement.
    local _
    for _ in $(seq 1 300); do
        [ "$(fd_count "$PID")" -le $((fds_before + 16)) ] && break
        sleep 0.1
    done
}

# measure_queued BROKER : QUEUED_MESSAGES QoS 1 messages kept for a persistent subscriber that is
# away, the broker's VmRSS read before and with them; prints "queued BROKER sent published
# received lost rss_before_kb rss_with_kb bytes_per_message".
measure_queued() {
    local broker=$1 out
    target "$broker"
    log "$broker queued: $QUEUED_MESSAGES QoS 1 messages for a persistent subscriber away"
    out=$("${NICE[@]}" "$LOADER" --mode queued --host 127.0.0.1 --port "$PORT" "${CREDS[@]}" \
        --messages "$QUEUED_MESSAGES" --qos 1 --size "$SIZE" --topic-prefix bench --broker-pid "$PID" \
        2>>"$WORK/loader.log") || die "mqtt_load --mode queued failed against $broker"
    log "  $out"
    echo "queued $broker $(field "$out" sent) $(field "$out" published) $(field "$out" received)" \
        "$(field "$out" lost) $(field "$out" rss_before_kb) $(field "$out" rss_with_kb)" \
        "$(field "$out" bytes_per_message)"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$WORK/generators"
{
    # On the fresh brokers, before any other load: the memory a connection costs, not what an
    # earlier load left in the allocator.
    if [ "$IDLE_CONNECTIONS" -gt 0 ]; then
        for broker in "${BROKERS[@]}"; do measure_idle "$broker"; done
    fi
    if [ "$QUEUED_MESSAGES" -gt 0 ]; then
        for broker in "${BROKERS[@]}"; do measure_queued "$broker"; done
    fi
    for round in $(seq 1 "$ROUNDS"); do
        log "round $round of $ROUNDS"
        ORDER=("${BROKERS[@]}")
        if [ $((round % 2)) = 0 ]; then
            ORDER=()
            for ((i = ${#BROKERS[@]} - 1; i >= 0; i--)); do ORDER+=("${BROKERS[i]}"); done
        fi
        for load in fanin fanout latency; do
            for qos in 0 1; do
                for broker in "${ORDER[@]}"; do measure "$broker" "$load" "$qos"; done
            done
        done
    done
} >"$WORK/results"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# Values reach the historian's tables asynchronously: QoS 0 values within 50 ms, journaled
# (QoS 1) ones up to 4 s after they arrived (FOLD_DURABLE_EVERY in src/historian/writer.rs).
# Wait until every value is counted, or the count has stood still for 6 s (longer than that
# 4 s), or 60 s have passed.
# Every fan-in run published into svc's historian, not only the better one of a round.
EXPECTED_HIST=$(awk '$1 == "svc" && $2 != "fanin" { n += $5 } END { print n + 0 }' "$WORK/results")
EXPECTED_HIST=$((EXPECTED_HIST + $(awk '$1 == "svc" { n += $5 } END { print n + 0 }' "$WORK/generators")))
HIST=-1
STILL=0
for _ in $(seq 1 120); do
    sleep 0.5
    NOW=$(sqlite3 -readonly "$WORK/data/svc.db" \
        'PRAGMA busy_timeout=5000; SELECT (SELECT count(*) FROM hist_points) + (SELECT coalesce(sum(count), 0) FROM hist_blocks);' | tail -n 1)
    if [ "$NOW" = "$HIST" ]; then STILL=$((STILL + 1)); else STILL=0; fi
    HIST=$NOW
    [ "$HIST" -ge "$EXPECTED_HIST" ] && break
    [ "$STILL" -lt 12 ] || break
done
{
    for broker in "${BROKERS[@]}"; do
        target "$broker"
        echo "memory $broker $(status_kb "$PID" VmRSS) $(status_kb "$PID" VmHWM)"
    done
    echo "historian svc $HIST $EXPECTED_HIST"
} >>"$WORK/results"

# --- report -------------------------------------------------------------------------------
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
REPORT=$(awk -f "$ROOT/bench/broker-report.awk" -v rounds="$ROUNDS" -v baseline="$BASELINE" \
    -v pubs="$PUBLISHERS" -v q0="$QOS0_MESSAGES" -v q1="$QOS1_MESSAGES" \
    -v subs="$FANOUT_SUBSCRIBERS" -v f0="$FANOUT_QOS0_MESSAGES" -v f1="$FANOUT_QOS1_MESSAGES" \
    -v rate="$LATENCY_RATE" -v idle="$IDLE_CONNECTIONS" -v queued="$QUEUED_MESSAGES" "$WORK/results") && GOALS=0 || GOALS=$?
[ "$GOALS" -le 3 ] || die "the report failed (awk exit $GOALS)"

{
    echo "# Broker benchmark: svc against Mosquitto"
    echo
    echo "Written by \`bench/broker.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- machine: $(nproc --all) CPUs, $CPU, $(uname -sr)"
    echo "- commit: $COMMIT; svc binary: ${BENCH_SVC:-target/release/svc (built by this run)}; nice: ${BENCH_NICE:-0} (both brokers and the load generator)"
    echo "- load: \`examples/mqtt_load\` (rumqttc), $SIZE-byte JSON payloads; $PIN_NOTE; msgs/s = messages delivered to the subscribers / (first publish → last delivery); QoS 1 publishers wait for every PUBACK"
    echo "  - fan-in: one \`bench/#\` subscriber connected first at the run's QoS, then $PUBLISHERS concurrent publishers on \`bench/p<i>\`; generator $FANIN_NOTE"
    echo "  - fan-out: $FANOUT_SUBSCRIBERS subscribers of \`bench/fanout\` (all SUBACKs in first), then one publisher there"
    echo "  - latency: one subscriber of \`bench/latency\`, one publisher paced at $LATENCY_RATE msgs/s (1 ms tokio interval, batches), both with TCP_NODELAY; $LATENCY_NOTE; publish → deliver over the ${LATENCY_MS} ms after a ${LATENCY_WARMUP_MS} ms warm-up"
    echo "  - idle: $IDLE_CONNECTIONS connections (keep alive 60 s) on the fresh broker before the other loads; per connection = (VmRSS with them, from 2 s after the last CONNACK − VmRSS before) / connections held, each VmRSS read once reads 500 ms apart have agreed within 256 kB for 5 s (longer than svc returns freed memory, every 2 s)"
    echo "  - queued: a persistent subscriber (MQTT 3.1.1, clean session off) of \`bench/queued\` subscribes at QoS 1 and disconnects, one publisher sends it $QUEUED_MESSAGES QoS 1 messages (every PUBACK in), once per broker after the idle connections; per message = (VmRSS with the queue − VmRSS before) / messages, read as for idle; then the subscriber comes back for every message"
    echo "- svc: fresh data dir, API-key authentication, topic authorization, historian recording every load's topics (historized tags); log filter \`${SVC_LOG:-info}\`"
    echo "- Mosquitto ${MOSQUITTO_VERSION:-?} (Debian): loopback listener, anonymous, \`max_connections -1\`, \`set_tcp_nodelay true\` (as svc), \`max_queued_messages 0\`, \`max_inflight_messages 0\` (no limits), no persistence"
    echo "- $ROUNDS interleaved round(s); per broker and figure the median over the rounds is shown with its spread (least–greatest), the brokers' order reversed every other round; broker CPU/msg = the broker's user+system CPU time during the run / messages delivered; RLIMIT_NOFILE $(ulimit -Sn)"
    echo "- load average (1, 5, 15 min) before / after measuring: $LOAD_BEFORE / $LOAD_AFTER (anything above ~0.5 before means something else was running: treat the numbers as noisy)"
    echo
    echo "$REPORT"
    if [ "${#FANIN_MODES[@]}" -gt 1 ]; then
        echo
        echo "Fan-in, each generator's msgs/s per round (the better one is the round's figure):"
        echo
        awk '{ key = $1 ", QoS " $2 ", " ($3 == "fan-in" ? "rumqttc" : "raw"); if (!(key in runs)) order[++n] = key
               runs[key] = runs[key] (key in runs && runs[key] != "" ? ", " : "") $4 }
             END { for (i = 1; i <= n; i++) print "- " order[i] ": " runs[order[i]] }' "$WORK/generators"
    fi
} >"$RESULTS"

echo
echo "$REPORT"
echo
log "written to bench/broker-results.md"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
