#!/usr/bin/env bash
# Device connectors benchmark of `svc serve` against Node-RED, measured in one run on the same
# machine against the same two devices (bench/peers/):
#   - an OPC UA server (npm node-opcua-server) with BENCH_ITEMS (10,000) Double variables that
#     each change once a second (a tenth of them every 100 ms), value = the change's 100 ms
#     slot since the epoch, source timestamp = that slot's start;
#   - a Modbus TCP server (bench/peers/modbus_server.cjs, Node.js alone) with BENCH_REGISTERS
#     (2,000) holding registers that all change every BENCH_MODBUS_CHANGE_MS (1000 ms), value =
#     floor(now / change ms) mod 65536, polled every BENCH_POLL_MS (100 ms).
#
# svc: `opcua` connectors of BENCH_UA_SPLIT (10,000: one connector) points each (every
# variable a subscribed point, sampling interval 0s, 1 s publishing interval) and one `modbus`
# connector (every register a uint16 point
# polled at 100 ms, 16 requests of 125 registers), every point historized. Node-RED (npm
# node-red with node-red-contrib-opcua and node-red-contrib-modbus, installed under the target
# dir): a generated flow doing the same (bench/node_red_flows.py: one OpcUa-Client per
# BENCH_UA_SPLIT items, one Modbus-Read per 125 registers, only changed registers sent) and
# publishing each value as `{"value","timestamp","quality"}`
# to svc's MQTT broker on the same tags (QoS 0, an API key as password), where svc's
# historian records them as it records its own connectors' values.
#
#   bash bench/connectors.sh
#   BENCH_SVC=target/release/svc BENCH_DURATION=30 BENCH_RECONNECTS=200 bash bench/connectors.sh
#
# Phases, one after the other on one svc (so each gateway has the machine's 2 CPUs to itself
# but for the devices and svc's broker):
#   1. svc: the connectors run; after BENCH_WARMUP s, BENCH_DURATION s measured: svc's CPU time
#      (utime + stime of /proc/<pid>/stat) per value recorded, its VmRSS at the end (and
#      VmHWM), the devices' CPU. Then the write round trip: two more connectors with 10
#      writable points each (OPC UA variables `w<i>`, Modbus registers after the polled
#      ones), BENCH_WRITES writes each through `POST /svc/tag/write` (bench/peers/write_rtt.cjs),
#      while the load goes on: request → 200 (the device acknowledged) and request → the new
#      value back in the tag (seen by an MQTT subscriber). The connectors are then deleted.
#   2. Node-RED: started with the generated flow; after the warm-up the same window: Node-RED's
#      CPU per value recorded and its VmRSS (its process alone), and svc's CPU for taking the
#      values in (broker and historian), shown apart.
#   3. Soak, on a fresh svc: a Modbus connector (the registers, 100 ms polls) and an OPC UA
#      connector (BENCH_SOAK_ITEMS variables) reach their devices through
#      bench/peers/flaky_proxy.cjs, which closes every connection BENCH_SOAK_HOLD_MS after
#      accepting it; reconnect backoff 50 ms. svc's VmRSS once both have reconnected
#      BENCH_SOAK_WARM times, every 100 reconnects, and after BENCH_RECONNECTS (1,000) of each.
#
# "Values recorded" are the historian's rows of the bench tags whose source timestamp lies in
# the window (read-only with sqlite3 once the window's last values are in); the expected
# number is BENCH_ITEMS × seconds + BENCH_REGISTERS × seconds × 1000 / change ms. Source
# timestamps are checked row by row: an OPC UA row's timestamp must be value × 100 ms (the
# device's source time), a Modbus row's floor(ts / change ms) mod 65536 must be its value or one
# more (the register turned while the answer travelled). Goals (the connectors issue): svc's
# CPU per value <= 1/5 of Node-RED's, resident memory <= 1/3 of Node-RED's, every change
# recorded with its source timestamp, write round trip reported, RSS after the soak close to
# before (reported: growth per reconnect).
#
# Settings (environment): BENCH_ITEMS (10000), BENCH_REGISTERS (2000), BENCH_POLL_MS (100),
# BENCH_MODBUS_CHANGE_MS (1000), BENCH_WARMUP (20 s), BENCH_DURATION (60 s), BENCH_WRITES (200
# per kind), BENCH_RECONNECTS (1000 per kind; 0 skips the soak), BENCH_SOAK_ITEMS (100),
# BENCH_SOAK_HOLD_MS (200), BENCH_SOAK_WARM (20), BENCH_SVC=<path> (measure this svc binary
# instead of building target/release/svc), SVC_LOG (svc's log filter, default warn),
# BENCH_RESULTS (the report's file, default bench/connectors-results.md), BENCH_STRICT=1 (exit 1
# when a goal is missed), BENCH_NICE=<n> (run svc, Node-RED and the
# devices under `nice -n <n>`: as root a negative value keeps other jobs on a shared machine
# from taking their CPU), BENCH_UA_SPLIT (10000: OPC UA items per connector and per Node-RED
# OpcUa-Client node, see below), BENCH_UA_WRITES (100: OPC UA writes of the round trip),
# BENCH_PERF=<file> (`perf record -g` of svc during its measured window). Findings of the
# first runs: bench/connectors-history.md. Node packages are installed with npm under
# ${CARGO_TARGET_DIR:-target}/bench-peers and …/bench-node-red (pinned versions below).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
ITEMS=${BENCH_ITEMS:-10000}
REGISTERS=${BENCH_REGISTERS:-2000}
POLL_MS=${BENCH_POLL_MS:-100}
CHANGE_MS=${BENCH_MODBUS_CHANGE_MS:-1000}
WARMUP=${BENCH_WARMUP:-20}
DURATION=${BENCH_DURATION:-60}
WRITES=${BENCH_WRITES:-200}
UA_WRITES=${BENCH_UA_WRITES:-100}
RECONNECTS=${BENCH_RECONNECTS:-1000}
SOAK_ITEMS=${BENCH_SOAK_ITEMS:-100}
SOAK_HOLD_MS=${BENCH_SOAK_HOLD_MS:-200}
SOAK_WARM=${BENCH_SOAK_WARM:-20}
PASSWORD="bench-$(date +%s)-$$"
RESULTS=${BENCH_RESULTS:-$ROOT/bench/connectors-results.md}
PREFIX=bench/plant
NICE=()
if [ -n "${BENCH_NICE:-}" ]; then NICE=(nice -n "$BENCH_NICE"); fi
SVC_LOG=${SVC_LOG:-warn}
export SVC_LOG

# Pinned Node packages. Node-RED 4.1 (5.x needs Node.js >= 22.9; Debian's is 20), and
# node-red-contrib-modbus 5.23.3: later releases depend on a tarball outside the npm registry.
NODE_OPCUA_SERVER=node-opcua-server@2.186.4
NODE_RED_PACKAGES=(node-red@4.1.8 node-red-contrib-opcua@0.2.354 node-red-contrib-modbus@5.23.3)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# --- tools --------------------------------------------------------------------------------
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || install_deb nodejs npm
command -v curl >/dev/null 2>&1 || install_deb curl
command -v sqlite3 >/dev/null 2>&1 || install_deb sqlite3
if [ -n "${BENCH_PERF:-}" ]; then command -v perf >/dev/null 2>&1 || die "BENCH_PERF needs perf"; fi

PEERS_DIR="$TARGET/bench-peers"
NODE_RED_DIR="$TARGET/bench-node-red"
npm_install "$PEERS_DIR" "$NODE_OPCUA_SERVER"
npm_install "$NODE_RED_DIR" "${NODE_RED_PACKAGES[@]}"
package_version() { node -p "require('$1/node_modules/$2/package.json').version"; }

if [ -n "${BENCH_SVC:-}" ]; then
    SVC=$(realpath "$BENCH_SVC")
    log "using the svc binary $SVC"
else
    build_tools
fi

bench_workdir connectors-bench
TICKS_PER_SEC=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
now_ms() { date +%s%3N; }

# start_peer NAME CMD… : runs CMD in the background (stdout WORK/NAME.out, stderr WORK/NAME.log)
# and waits for its `ready <port>` line; sets PID and PORT.
start_peer() {
    local name=$1 _
    shift
    : >"$WORK/$name.out"
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 1 600); do
        PORT=$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$WORK/$name.out")
        if [ -n "$PORT" ]; then
            log "$name ready on port $PORT (pid $PID)"
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || die "$name exited early"
        sleep 0.1
    done
    die "$name printed no ready line within 60s"
}

# call_file METHOD PATH FILE : `call` with the body read from FILE (a connector's 10,000 points
# are beyond what one command-line argument may hold).
call_file() {
    local code
    code=$(curl -sS -o "$WORK/body" -w '%{http_code}' -X "$1" "$SVC_URL$2" -H "Authorization: Bearer $TOKEN" \
        -H 'Content-Type: application/json' --data-binary "@$3")
    case $code in
        2??) cat "$WORK/body" ;;
        *) die "$1 $2 → $code: $(head -c 500 "$WORK/body")" ;;
    esac
}

# connector_body FILE NAME KIND ARGS… : writes a connector record (python below) to FILE.
connector_body() {
    python3 - "$@" <<'PY'
import json, sys
path, name, kind, *rest = sys.argv[1:]
opts = dict(a.split("=", 1) for a in rest)
prefix = opts["prefix"]
points = []
if kind == "opcua":
    settings = {"endpoint": opts["endpoint"], "publishing_interval": opts.get("publishing", "1s")}
    first = int(opts.get("first", 0))
    for i in range(first, first + int(opts["count"])):
        var = f'{opts.get("var", "v")}{i}'
        point = {"tag": f"{prefix}/ua/{var}", "historize": True,
                 "address": {"node_id": f"ns=1;s={var}", "mode": "subscribe",
                             "sampling_interval": "0s"}}
        if opts.get("writable"):
            point["writable"] = True
        points.append(point)
else:
    settings = {"host": "127.0.0.1", "port": int(opts["port"]), "unit_id": 1}
    first = int(opts.get("first", 0))
    for i in range(first, first + int(opts["count"])):
        tag = f"{prefix}/mb/w{i - first}" if opts.get("writable") else f"{prefix}/mb/r{i}"
        point = {"tag": tag, "historize": True,
                 "address": {"function": "holding_register", "address": i, "type": "uint16",
                             "poll_interval": opts["poll"]}}
        if opts.get("writable"):
            point["writable"] = True
        points.append(point)
record = {"name": name, "kind": kind, "settings": settings, "points": points}
if "reconnect" in opts:
    record["reconnect"] = json.loads(opts["reconnect"])
with open(path, "w") as f:
    json.dump(record, f)
PY
}

# connectors_state : one line per connector of GET /svc/connectors/status: name, state,
# values_in, points with a good value.
connectors_state() {
    call GET /svc/connectors/status | python3 -c '
import json, sys
for c in json.load(sys.stdin):
    good = sum(1 for p in c.get("points", []) if p.get("quality") == "good")
    print(c["name"], c["state"], c.get("values_in", 0), good, len(c.get("points", [])))'
}

# wait_connectors_good SECONDS NAME… : waits until every named connector is connected with a
# good value in each of its points.
wait_connectors_good() {
    local limit=$1 _ state ok name
    shift
    for _ in $(seq 1 "$limit"); do
        state=$(connectors_state)
        ok=1
        for name in "$@"; do
            awk -v n="$name" '$1 == n && $2 == "connected" && $4 == $5 && $5 > 0 { f = 1 } END { exit !f }' <<<"$state" || ok=""
        done
        [ -n "$ok" ] && return 0
        sleep 1
    done
    die "connectors not all connected with good values after ${limit}s: $state"
}

# hist SQL : one query, read-only, on svc's database.
hist() { sqlite3 -readonly "$DB" "PRAGMA busy_timeout=10000; $1" | tail -n 1; }

# recorded FROM_MS TO_MS : "ua_rows ua_distinct ua_wrong_ts mb_rows mb_distinct mb_wrong_ts
# blocks": the historian's rows of the bench tags with source times in [FROM, TO), distinct
# (tag, timestamp) pairs among them, rows whose timestamp does not match the device's, and
# sealed blocks overlapping the window (their points are not counted: 0 expected).
recorded() {
    local from=$1 to=$2
    local ua mb blocks
    ua=$(hist "SELECT count(*), count(DISTINCT p.series || ':' || p.ts), coalesce(sum(p.ts != CAST(round(p.num * 100) AS INTEGER)), 0)
        FROM hist_points p JOIN hist_series s ON s.id = p.series
        WHERE s.topic LIKE '$PREFIX/ua/v%' AND p.ts >= $from AND p.ts < $to;")
    mb=$(hist "SELECT count(*), count(DISTINCT p.series || ':' || p.ts),
        coalesce(sum(((p.ts / $CHANGE_MS) - CAST(p.num AS INTEGER)) % 65536 NOT IN (0, 1)), 0)
        FROM hist_points p JOIN hist_series s ON s.id = p.series
        WHERE s.topic LIKE '$PREFIX/mb/r%' AND p.ts >= $from AND p.ts < $to;")
    blocks=$(hist "SELECT count(*) FROM hist_blocks b JOIN hist_series s ON s.id = b.series
        WHERE s.topic LIKE '$PREFIX/%' AND b.end_ts >= $from AND b.start_ts < $to;")
    echo "${ua//|/ } ${mb//|/ } $blocks"
}

# window NAME PID… : warm-up, then DURATION seconds measured; prints "NAME from_ms to_ms
# elapsed_ms ticks(PID)…" and waits until the window's values are in the historian.
window() {
    local name=$1 pid before=() after=() from to perf_pid=""
    shift
    log "$name: warm-up ${WARMUP}s"
    sleep "$WARMUP"
    if [ "$name" = svc ] && [ -n "${BENCH_PERF:-}" ]; then
        perf record -g -o "$BENCH_PERF" -p "$SVC_PID" 2>"$WORK/perf.log" >&2 &
        perf_pid=$!
    fi
    from=$(now_ms)
    for pid in "$@"; do before+=("$(cpu_ticks "$pid")"); done
    log "$name: measuring ${DURATION}s"
    sleep "$DURATION"
    for pid in "$@"; do after+=("$(cpu_ticks "$pid")"); done
    to=$(now_ms)
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
        log "perf data of svc written to $BENCH_PERF"
    fi
    local ticks="" i
    for i in "${!before[@]}"; do ticks+=" $((after[i] - before[i]))"; done
    # The OPC UA values of the window's last second come with the next publish (1 s); then a
    # historian query makes svc fold every value it holds (journaled values wait up to 4 s
    # otherwise) before the counts are read from the database.
    sleep 2
    call PATCH /svc/historian/last "{\"topic\":\"$PREFIX/mb/r0\",\"limit\":1}" >/dev/null
    echo "$name $from $((from + DURATION * 1000)) $((to - from))$ticks"
}

# --- devices ------------------------------------------------------------------------------
WRITABLE=10
start_peer opcua "${NICE[@]}" env NODE_PATH="$PEERS_DIR/node_modules" node "$ROOT/bench/peers/opcua_server.cjs" \
    --items "$ITEMS" --writable "$WRITABLE" --pki "$WORK/opcua-pki"
UA_PORT=$PORT UA_PID=$PID
start_peer modbus "${NICE[@]}" node "$ROOT/bench/peers/modbus_server.cjs" --registers "$REGISTERS" \
    --writable "$WRITABLE" --change-ms "$CHANGE_MS"
MB_PORT=$PORT MB_PID=$PID

# --- phase 1: svc's connectors ------------------------------------------------------------
start_svc "${NICE[@]}"
MAIN_SVC_PID=$SVC_PID
login_admin
API_KEY=$(call POST /auth/keys '{"name":"bench"}' | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
[ -n "$API_KEY" ] || die "no API key"
call POST /svc/namespaces "{\"name\":\"plant\",\"path\":\"$PREFIX\"}" >/dev/null
# The OPC UA items go to connectors of at most UA_SPLIT points each (all in one by default:
# svc's OPC UA connector sends its monitored items in calls of 500, see
# docs/decisions/connectors.md; before it did, a connector of more than 1,000 never connected,
# bench/connectors-history.md).
UA_SPLIT=${BENCH_UA_SPLIT:-10000}
UA_NAMES=()
log "creating the connectors: $ITEMS OPC UA items in connectors of <= $UA_SPLIT, bench-mb ($REGISTERS Modbus registers)"
started=$(now_ms)
for first in $(seq 0 "$UA_SPLIT" $((ITEMS - 1))); do
    name="bench-ua-$((first / UA_SPLIT))"
    count=$(( ITEMS - first < UA_SPLIT ? ITEMS - first : UA_SPLIT ))
    connector_body "$WORK/$name.json" "$name" opcua prefix="$PREFIX" endpoint="opc.tcp://127.0.0.1:$UA_PORT" first="$first" count="$count"
    call_file POST /svc/connectors "$WORK/$name.json" >/dev/null
    UA_NAMES+=("$name")
done
created_ua=$(( $(now_ms) - started ))
connector_body "$WORK/mb.json" bench-mb modbus prefix="$PREFIX" port="$MB_PORT" count="$REGISTERS" poll="${POLL_MS}ms"
started=$(now_ms)
call_file POST /svc/connectors "$WORK/mb.json" >/dev/null
created_mb=$(( $(now_ms) - started ))
log "created in ${created_ua} ms (${UA_NAMES[*]}) and ${created_mb} ms (bench-mb)"
started=$(now_ms)
wait_connectors_good 120 "${UA_NAMES[@]}" bench-mb
first_values=$(( $(now_ms) - started ))
log "every point has a good value ${first_values} ms later"

read -r _ SVC_FROM SVC_TO SVC_ELAPSED SVC_TICKS UA_TICKS_1 MB_TICKS_1 <<<"$(window svc "$SVC_PID" "$UA_PID" "$MB_PID")"
SVC_RSS=$(status_kb "$SVC_PID" VmRSS) SVC_HWM=$(status_kb "$SVC_PID" VmHWM)
SVC_ANON=$(status_kb "$SVC_PID" RssAnon) SVC_FILE=$(status_kb "$SVC_PID" RssFile)
read -r S_UA S_UA_D S_UA_BAD S_MB S_MB_D S_MB_BAD S_BLOCKS <<<"$(recorded "$SVC_FROM" "$SVC_TO")"
log "svc: ${SVC_TICKS} ticks, recorded ua $S_UA (distinct $S_UA_D, wrong ts $S_UA_BAD), mb $S_MB (distinct $S_MB_D, wrong ts $S_MB_BAD), RSS ${SVC_RSS} kB"
connectors_state >"$WORK/svc-status.txt"

# Write round trip, the load going on: two connectors of writable points.
connector_body "$WORK/ua-w.json" bench-ua-w opcua prefix="$PREFIX" endpoint="opc.tcp://127.0.0.1:$UA_PORT" count="$WRITABLE" var=w writable=1 publishing=100ms
connector_body "$WORK/mb-w.json" bench-mb-w modbus prefix="$PREFIX" port="$MB_PORT" first="$REGISTERS" count="$WRITABLE" poll="${POLL_MS}ms" writable=1
call_file POST /svc/connectors "$WORK/ua-w.json" >/dev/null
call_file POST /svc/connectors "$WORK/mb-w.json" >/dev/null
wait_connectors_good 60 bench-ua-w bench-mb-w
write_rtt() {
    NODE_PATH="$NODE_RED_DIR/node_modules" node "$ROOT/bench/peers/write_rtt.cjs" --http "$SVC_URL" \
        --token "$TOKEN" --mqtt-port "$SVC_MQTT_PORT" --key "$API_KEY" --tag "$1" --count "$WRITES" \
        2>>"$WORK/write-rtt.log" || die "write_rtt $1 failed: $(tail -n 5 "$WORK/write-rtt.log")"
}
log "write round trip: $WRITES writes to $PREFIX/mb/w0"
RTT_MB=$(write_rtt "$PREFIX/mb/w0")
log "  $RTT_MB"
log "write round trip: $UA_WRITES writes to $PREFIX/ua/w0"
RTT_UA=$(WRITES=$UA_WRITES write_rtt "$PREFIX/ua/w0")
log "  $RTT_UA"

# The ids from the status: the answer to creating a connector of 5,000 points is empty (see
# the findings).
for id in $(call GET /svc/connectors/status | python3 -c 'import json, sys; print(" ".join(c["id"] for c in json.load(sys.stdin)))'); do
    call DELETE "/svc/$id" >/dev/null
done
sleep 2
[ -z "$(connectors_state)" ] || die "connectors left after deleting them: $(connectors_state)"

# --- phase 2: Node-RED --------------------------------------------------------------------
NR_PORT=$(free_port)
python3 "$ROOT/bench/node_red_flows.py" --dir "$WORK/node-red" --http-port "$NR_PORT" \
    --mqtt-port "$SVC_MQTT_PORT" --api-key "$API_KEY" --opcua-endpoint "opc.tcp://127.0.0.1:$UA_PORT" \
    --items "$ITEMS" --ua-split "$UA_SPLIT" --modbus-port "$MB_PORT" --registers "$REGISTERS" --poll-ms "$POLL_MS" --prefix "$PREFIX"
log "starting Node-RED on port $NR_PORT"
"${NICE[@]}" node "$NODE_RED_DIR/node_modules/node-red/red.js" --userDir "$WORK/node-red" \
    --settings "$WORK/node-red/settings.js" >"$WORK/node-red.log" 2>&1 &
NR_PID=$!
PIDS+=("$NR_PID")
wait_http "http://127.0.0.1:$NR_PORT/" 120
# Values flowing: every OPC UA and Modbus tag has a value with a timestamp after the start.
started=$(now_ms)
for _ in $(seq 1 300); do
    read -r ua_seen mb_seen <<<"$(hist "SELECT count(DISTINCT CASE WHEN s.topic LIKE '$PREFIX/ua/v%' THEN p.series END),
        count(DISTINCT CASE WHEN s.topic LIKE '$PREFIX/mb/r%' THEN p.series END)
        FROM hist_points p JOIN hist_series s ON s.id = p.series WHERE p.ts >= $started;" | tr '|' ' ')"
    [ "$ua_seen" -ge "$ITEMS" ] && [ "$mb_seen" -ge "$REGISTERS" ] && break
    kill -0 "$NR_PID" 2>/dev/null || die "Node-RED exited: $(tail -n 20 "$WORK/node-red.log")"
    sleep 1
done
[ "$ua_seen" -ge "$ITEMS" ] && [ "$mb_seen" -ge "$REGISTERS" ] ||
    die "Node-RED's values reached $ua_seen OPC UA and $mb_seen Modbus tags of $ITEMS and $REGISTERS"
log "Node-RED's values reach every tag ($(( $(now_ms) - started )) ms)"

read -r _ NR_FROM NR_TO NR_ELAPSED NR_TICKS NR_SVC_TICKS UA_TICKS_2 MB_TICKS_2 <<<"$(window node-red "$NR_PID" "$SVC_PID" "$UA_PID" "$MB_PID")"
NR_RSS=$(status_kb "$NR_PID" VmRSS) NR_HWM=$(status_kb "$NR_PID" VmHWM)
NR_ANON=$(status_kb "$NR_PID" RssAnon) NR_FILE=$(status_kb "$NR_PID" RssFile)
read -r N_UA N_UA_D N_UA_BAD N_MB N_MB_D N_MB_BAD N_BLOCKS <<<"$(recorded "$NR_FROM" "$NR_TO")"
log "node-red: ${NR_TICKS} ticks (svc ${NR_SVC_TICKS}), recorded ua $N_UA (distinct $N_UA_D, wrong ts $N_UA_BAD), mb $N_MB (distinct $N_MB_D, wrong ts $N_MB_BAD), RSS ${NR_RSS} kB"
stop_pid "$NR_PID"
stop_pid "$MAIN_SVC_PID"

# --- phase 3: reconnect soak on a fresh svc -----------------------------------------------
SOAK=""
if [ "$RECONNECTS" -gt 0 ]; then
    start_peer proxy-ua node "$ROOT/bench/peers/flaky_proxy.cjs" --target "127.0.0.1:$UA_PORT" --hold-ms "$SOAK_HOLD_MS"
    PROXY_UA_PORT=$PORT
    start_peer proxy-mb node "$ROOT/bench/peers/flaky_proxy.cjs" --target "127.0.0.1:$MB_PORT" --hold-ms "$SOAK_HOLD_MS"
    PROXY_MB_PORT=$PORT
    SVC_NAME=soak SVC_DATA="$WORK/soak-data" start_svc "${NICE[@]}"
    login_admin
    call POST /svc/namespaces "{\"name\":\"plant\",\"path\":\"$PREFIX\"}" >/dev/null
    backoff='{"initial":"50ms","max":"50ms","jitter":0}'
    connector_body "$WORK/soak-ua.json" soak-ua opcua prefix="$PREFIX" endpoint="opc.tcp://127.0.0.1:$PROXY_UA_PORT" count="$SOAK_ITEMS" reconnect="$backoff"
    connector_body "$WORK/soak-mb.json" soak-mb modbus prefix="$PREFIX" port="$PROXY_MB_PORT" count="$REGISTERS" poll="${POLL_MS}ms" reconnect="$backoff"
    call_file POST /svc/connectors "$WORK/soak-ua.json" >/dev/null
    call_file POST /svc/connectors "$WORK/soak-mb.json" >/dev/null
    accepted() { grep -c '^cut' "$WORK/proxy-$1.out" || true; }
    reconnects() { local a b; a=$(accepted ua) b=$(accepted mb); echo $(( a < b ? a : b )); }
    log "soak: waiting for $SOAK_WARM reconnects of each connector"
    started=$(now_ms)
    while [ "$(reconnects)" -lt "$SOAK_WARM" ]; do
        [ $(( $(now_ms) - started )) -lt 120000 ] || die "soak: fewer than $SOAK_WARM reconnects in 120 s (ua $(accepted ua), mb $(accepted mb))"
        sleep 0.2
    done
    SOAK_BEFORE=$(status_kb "$SVC_PID" VmRSS)
    SOAK_TICKS_BEFORE=$(cpu_ticks "$SVC_PID")
    SOAK_SERIES="$(reconnects):$SOAK_BEFORE"
    log "soak: RSS $SOAK_BEFORE kB after $(reconnects) reconnects each"
    next=$(( (SOAK_WARM / 100 + 1) * 100 ))
    started=$(now_ms)
    while :; do
        n=$(reconnects)
        if [ "$n" -ge "$next" ] || [ "$n" -ge "$RECONNECTS" ]; then
            SOAK_SERIES+=" $n:$(status_kb "$SVC_PID" VmRSS)"
            next=$((next + 100))
        fi
        [ "$n" -ge "$RECONNECTS" ] && break
        [ $(( $(now_ms) - started )) -lt 1800000 ] || die "soak: $n reconnects in 30 min"
        kill -0 "$SVC_PID" 2>/dev/null || die "svc exited during the soak"
        sleep 0.2
    done
    SOAK_SECONDS=$(( ($(now_ms) - started) / 1000 ))
    SOAK_AFTER=$(status_kb "$SVC_PID" VmRSS) SOAK_HWM=$(status_kb "$SVC_PID" VmHWM)
    SOAK_TICKS=$(( $(cpu_ticks "$SVC_PID") - SOAK_TICKS_BEFORE ))
    SOAK_STATE=$(connectors_state | awk '{ printf "%s%s %s (values_in %s)", sep, $1, $2, $3; sep = "; " }')
    log "soak: RSS $SOAK_BEFORE → $SOAK_AFTER kB after ua $(accepted ua), mb $(accepted mb) connections cut in ${SOAK_SECONDS}s"
    SOAK=1
fi

# --- report -------------------------------------------------------------------------------
# ratio A B : A / B with 3 decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }
us_per() { awk -v t="$1" -v n="$2" -v hz="$TICKS_PER_SEC" 'BEGIN { if (n > 0) printf "%.2f", t / hz * 1e6 / n; else print "-" }'; }
pct() { awk -v t="$1" -v ms="$2" -v hz="$TICKS_PER_SEC" 'BEGIN { printf "%.1f", t / hz * 100000 / ms }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
verdict() { if awk -v v="$1" -v g="$2" 'BEGIN { exit !(v != "-" && v <= g) }'; then echo pass; else echo "**fail**"; fi; }
jf() { python3 -c 'import json,sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("-" if v is None else v)' "$1" "$2"; }
EXPECT_UA=$((ITEMS * DURATION))
EXPECT_MB=$((REGISTERS * DURATION * 1000 / CHANGE_MS))
SVC_VALUES=$((S_UA + S_MB))
NR_VALUES=$((N_UA + N_MB))
SVC_US=$(us_per "$SVC_TICKS" "$SVC_VALUES")
NR_US=$(us_per "$NR_TICKS" "$NR_VALUES")
NR_SVC_US=$(us_per "$NR_SVC_TICKS" "$NR_VALUES")
CPU_RATIO=$(ratio "$SVC_US" "$NR_US")
RSS_RATIO=$(ratio "$SVC_RSS" "$NR_RSS")
CPU_VERDICT=$(verdict "$CPU_RATIO" 0.2)
RSS_VERDICT=$(verdict "$RSS_RATIO" 0.3333)
# ua_complete ROWS DISTINCT WRONG : every OPC UA change once with its source time.
ua_complete() { if [ "$1" -eq "$EXPECT_UA" ] && [ "$2" -eq "$1" ] && [ "$3" -eq 0 ]; then echo pass; else echo "**fail**"; fi; }
# mb_complete ROWS DISTINCT WRONG : every Modbus change once (± one poll of each register at
# the window's edges), with the time of its poll.
mb_complete() {
    if [ "$1" -ge $((EXPECT_MB - REGISTERS)) ] && [ "$1" -le $((EXPECT_MB + REGISTERS)) ] && [ "$2" -eq "$1" ] && [ "$3" -eq 0 ]; then
        echo pass
    else
        echo "**fail**"
    fi
}
UA_LATE=$(sed -n 's/^stats .*"late_slots":\([0-9]*\).*/\1/p' "$WORK/opcua.out" | tail -n 1)

CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
[ -n "$CPU" ] || CPU=$(uname -m)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "${BENCH_SVC:-}" ] && [ -n "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ]; then
    COMMIT="$COMMIT (src modified)"
fi
SVC_VERSION=$("$SVC" --version 2>/dev/null || echo "svc ?")
NR_VERSIONS="node-red $(package_version "$NODE_RED_DIR" node-red), node-red-contrib-opcua $(package_version "$NODE_RED_DIR" node-red-contrib-opcua) (node-opcua $(package_version "$NODE_RED_DIR" node-opcua)), node-red-contrib-modbus $(package_version "$NODE_RED_DIR" node-red-contrib-modbus), Node.js $(node --version)"
PEER_VERSIONS="node-opcua-server $(package_version "$PEERS_DIR" node-opcua-server); bench/peers/modbus_server.cjs"
COMMAND="bash bench/connectors.sh"
for var in BENCH_SVC BENCH_NICE BENCH_UA_SPLIT BENCH_ITEMS BENCH_REGISTERS BENCH_POLL_MS BENCH_MODBUS_CHANGE_MS BENCH_WARMUP BENCH_DURATION BENCH_WRITES BENCH_RECONNECTS BENCH_SOAK_ITEMS BENCH_SOAK_HOLD_MS; do
    [ -z "${!var:-}" ] || COMMAND="$var=${!var} $COMMAND"
done

REPORT=$(
    echo "| measurement | svc | Node-RED | svc / Node-RED | goal | result |"
    echo "|---|---:|---:|---:|---|---|"
    echo "| CPU per value recorded (µs) | $SVC_US | $NR_US | $CPU_RATIO | <= 0.2 | $CPU_VERDICT |"
    echo "| resident memory at the window's end (MB) | $(mb "$SVC_RSS") | $(mb "$NR_RSS") | $RSS_RATIO | <= 0.333 | $RSS_VERDICT |"
    echo "| of which anonymous, RssAnon (MB) | $(mb "$SVC_ANON") | $(mb "$NR_ANON") | $(ratio "$SVC_ANON" "$NR_ANON") | | |"
    echo "| of which mapped files, RssFile (MB) | $(mb "$SVC_FILE") | $(mb "$NR_FILE") | $(ratio "$SVC_FILE" "$NR_FILE") | | |"
    echo "| peak resident memory, VmHWM (MB) | $(mb "$SVC_HWM") | $(mb "$NR_HWM") | $(ratio "$SVC_HWM" "$NR_HWM") | | |"
    echo "| CPU use during the window (% of one CPU) | $(pct "$SVC_TICKS" "$SVC_ELAPSED") | $(pct "$NR_TICKS" "$NR_ELAPSED") | | | |"
    echo "| OPC UA changes recorded / expected (wrong source time) | $S_UA / $EXPECT_UA ($S_UA_BAD) | $N_UA / $EXPECT_UA ($N_UA_BAD) | | all, once, with the source time | svc $(ua_complete "$S_UA" "$S_UA_D" "$S_UA_BAD"), Node-RED $(ua_complete "$N_UA" "$N_UA_D" "$N_UA_BAD") |"
    echo "| Modbus changes recorded / expected (wrong time) | $S_MB / $EXPECT_MB ($S_MB_BAD) | $N_MB / $EXPECT_MB ($N_MB_BAD) | | all, once (± one poll at the window's edges) | svc $(mb_complete "$S_MB" "$S_MB_D" "$S_MB_BAD"), Node-RED $(mb_complete "$N_MB" "$N_MB_D" "$N_MB_BAD") |"
    echo "| write round trip, Modbus register: request → device acknowledged, p50 / p99 (ms) | $(jf "$RTT_MB" ack_p50_ms) / $(jf "$RTT_MB" ack_p99_ms) | not measured | | reported | |"
    echo "| write round trip, Modbus register: request → value back in the tag, p50 / p99 (ms) | $(jf "$RTT_MB" back_p50_ms) / $(jf "$RTT_MB" back_p99_ms) | not measured | | reported | |"
    echo "| write round trip, OPC UA variable: request → device acknowledged, p50 / p99 (ms) | $(jf "$RTT_UA" ack_p50_ms) / $(jf "$RTT_UA" ack_p99_ms) | not measured | | reported | |"
    echo "| write round trip, OPC UA variable: request → value back in the tag, p50 / p99 (ms) | $(jf "$RTT_UA" back_p50_ms) / $(jf "$RTT_UA" back_p99_ms) | not measured | | reported | |"
    if [ -n "$SOAK" ]; then
        growth=$(awk -v a="$SOAK_BEFORE" -v b="$SOAK_AFTER" -v n="$RECONNECTS" -v w="$SOAK_WARM" 'BEGIN { printf "%.0f", (b - a) * 1024 / (n - w) }')
        echo "| soak: resident memory before → after $RECONNECTS reconnects of each connector (MB) | $(mb "$SOAK_BEFORE") → $(mb "$SOAK_AFTER") ($growth bytes per reconnect) | | | reported | |"
    fi
)

{
    echo "# Connectors benchmark: svc against Node-RED"
    echo
    echo "Written by \`bench/connectors.sh\`; overwritten on every run."
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- command: \`$COMMAND\`"
    echo "- machine: $(nproc) CPUs, $CPU, $(uname -sr); load average before the report: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- svc: $SVC_VERSION, commit $COMMIT, binary ${BENCH_SVC:-target/release/svc (built by this run)}; fresh data dir (SQLite), log filter \`$SVC_LOG\`"
    echo "- Node-RED: $NR_VERSIONS; flow generated by \`bench/node_red_flows.py\`, publishing to svc's MQTT broker (QoS 0, API key)"
    echo "- devices: $PEER_VERSIONS"
    echo "- load: OPC UA $ITEMS variables changing at 1 Hz (subscribed, publishing interval 1 s; svc's \`sampling_interval: 0s\` and Node-RED's \`multiple\` group both ask for 0, which node-opcua serves on change); Modbus $REGISTERS holding registers changing every ${CHANGE_MS} ms, polled every ${POLL_MS} ms in requests of 125; every value historized in svc; warm-up ${WARMUP} s, window ${DURATION} s, one gateway at a time"
    echo "- CPU per value: the gateway process's user+system CPU time over the window / the values recorded in svc's historian with a source time in the window (svc's figure includes its broker and historian; Node-RED's is its process alone: svc spent a further $NR_SVC_US µs per value taking Node-RED's values in over MQTT and recording them)"
    echo "- the OPC UA device ran ${UA_LATE:-?} of its 100 ms change slots more than 100 ms late over the whole run (it then makes the late slots' changes at once): a gateway whose server samples on a timer rather than on change could miss a change made late"
    echo "- devices' CPU during the windows (% of one CPU, OPC UA / Modbus): svc $(pct "$UA_TICKS_1" "$SVC_ELAPSED") / $(pct "$MB_TICKS_1" "$SVC_ELAPSED"), Node-RED $(pct "$UA_TICKS_2" "$NR_ELAPSED") / $(pct "$MB_TICKS_2" "$NR_ELAPSED")"
    echo "- svc setup: $ITEMS OPC UA items in ${#UA_NAMES[@]} connector(s) of at most $UA_SPLIT points (BENCH_UA_SPLIT; see the findings), creating them took ${created_ua} ms, bench-mb ${created_mb} ms; every point had a good value ${first_values} ms later"
    echo "- write round trip: $WRITES writes to a Modbus register and $UA_WRITES to an OPC UA variable, one after the other (\`POST /svc/tag/write\`, bench/peers/write_rtt.cjs), while the load went on, through two more connectors of 10 writable points each; back in the tag = seen by an MQTT subscriber of the tag (Modbus: svc reads the register back once the device acknowledged; OPC UA: the next publish of the write connector's subscription, publishing interval 100 ms)"
    if [ -n "$SOAK" ]; then
        echo "- soak: fresh svc, connectors soak-mb ($REGISTERS registers, ${POLL_MS} ms) and soak-ua ($SOAK_ITEMS items) through bench/peers/flaky_proxy.cjs closing every connection ${SOAK_HOLD_MS} ms after accepting it, reconnect backoff 50 ms; $RECONNECTS connections of each in ${SOAK_SECONDS} s after the first $SOAK_WARM; svc CPU $(pct "$SOAK_TICKS" $((SOAK_SECONDS * 1000)))% of one CPU meanwhile; connections accepted by the proxies (OPC UA: GetEndpoints, then the session) ua $(grep -c '^accepted' "$WORK/proxy-ua.out"), mb $(grep -c '^accepted' "$WORK/proxy-mb.out"); peak RSS $(mb "$SOAK_HWM") MB; state at the end: $SOAK_STATE"
        echo "- soak RSS (reconnects of each: kB): $SOAK_SERIES"
    fi
    echo
    echo "$REPORT"
    echo
    echo "Raw: svc window \`$SVC_FROM..$SVC_TO\` ${SVC_TICKS} ticks, rows ua $S_UA (distinct $S_UA_D) mb $S_MB (distinct $S_MB_D), blocks $S_BLOCKS;" \
        "Node-RED window \`$NR_FROM..$NR_TO\` ${NR_TICKS} ticks (svc ${NR_SVC_TICKS}), rows ua $N_UA (distinct $N_UA_D) mb $N_MB (distinct $N_MB_D), blocks $N_BLOCKS; CLK_TCK $TICKS_PER_SEC."
    echo
    echo "Write round trips: Modbus \`$RTT_MB\`; OPC UA \`$RTT_UA\`."
    echo
    echo "## How to run"
    echo
    echo "\`bash bench/connectors.sh\` builds target/release/svc (or takes \`BENCH_SVC=<binary>\`), installs the pinned npm packages under \${CARGO_TARGET_DIR:-target}/bench-peers and …/bench-node-red (Node.js and npm from Debian if missing), and takes about $(( (2 * (WARMUP + DURATION) + 120) / 60 )) minutes plus the soak. Settings and what each phase does are in the script's header; \`BENCH_DURATION=20 BENCH_RECONNECTS=100\` makes a quick run."
} >"$RESULTS"

GOALS=$(grep -c '\*\*fail\*\*' <<<"$REPORT" || true)
echo
echo "$REPORT"
echo
log "written to $RESULTS"
if [ "$GOALS" -ne 0 ] && [ "${BENCH_STRICT:-0}" = 1 ]; then exit 1; fi
exit 0
