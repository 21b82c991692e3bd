# Shared by the bench scripts (sourced, not run): logging, Debian installs, building svc and the
# load tools, a work directory removed on exit with every process started into it, `svc serve`
# started on free ports, and an authenticated `call` for its REST API.
#
# The sourcing script sets ROOT (the repository) and PASSWORD (the admin password svc starts
# with) before calling these.

log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# install_deb PACKAGE… : installs Debian packages (through sudo unless root).
install_deb() {
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    log "installing $* from Debian packages"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}

# deb_version PACKAGE : the installed version of a Debian package ("not installed" when absent).
deb_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }

# Where cargo puts its builds.
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

# pin_cpus : splits the machine's CPUs between the load generator and the servers it measures,
# so that a figure measures a server and not its neighbours (issue 40). With BENCH_PIN=1 (the
# caller's default) on a machine of 2 or more CPUs, this shell, and so the load generator and
# every tool it starts, moves to the first half of the CPUs (LOADER_CPUS, `taskset` syntax), and
# servers started under SERVER_PIN (a command prefix, empty when unpinned) run on the other half
# (SERVER_CPUS): every server measured gets the same CPUs. BENCH_PIN=0 leaves everything where
# the kernel puts it; DEFAULT (the first argument, 1 or 0) is used when BENCH_PIN is not set.
# Sets PIN_NOTE, one sentence for the report.
cpu_range() { if [ "$1" = "$2" ]; then echo "$1"; else echo "$1-$2"; fi; }
pin_cpus() {
    local cpus
    cpus=$(nproc)
    SERVER_PIN=()
    PIN_NOTE="not pinned: the load generator and the servers share all $cpus CPUs"
    [ "${BENCH_PIN:-$1}" = 1 ] || return 0
    [ "$cpus" -ge 2 ] || { log "one CPU: nothing to pin"; return 0; }
    command -v taskset >/dev/null 2>&1 || install_deb util-linux
    local half=$((cpus / 2))
    LOADER_CPUS=$(cpu_range 0 $((half - 1))) SERVER_CPUS=$(cpu_range "$half" $((cpus - 1)))
    taskset -pc "$LOADER_CPUS" $$ >/dev/null || die "taskset could not pin the bench to CPUs $LOADER_CPUS"
    SERVER_PIN=(taskset -c "$SERVER_CPUS")
    PIN_NOTE="pinned: the load generator on CPU $LOADER_CPUS, every server measured on CPU $SERVER_CPUS (taskset)"
    log "$PIN_NOTE"
}

# build_tools EXAMPLE… : builds the examples (release) and svc itself unless BENCH_SVC names an
# already built binary; sets SVC.
build_tools() {
    local examples=()
    local name
    for name in "$@"; do examples+=(--example "$name"); done
    if [ -n "${BENCH_SVC:-}" ]; then
        SVC=$(realpath "$BENCH_SVC")
        log "using the svc binary $SVC; building (release): $*"
        cargo build --release --quiet "${examples[@]}"
    else
        log "building (release): svc, $*"
        cargo build --release --quiet --bin svc "${examples[@]}"
        SVC="$TARGET/release/svc"
    fi
}

# npm_install DIR PACKAGE@VERSION… : installs the packages into DIR/node_modules unless each is
# there at its version already.
npm_install() {
    local dir=$1 spec name version missing=()
    shift
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
    for spec in "$@"; do
        name=${spec%@*} version=${spec##*@}
        [ "$(node -p "try { require('$dir/node_modules/$name/package.json').version } catch { '' }")" = "$version" ] ||
            missing+=("$spec")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "npm install ${missing[*]} into $dir"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "${missing[@]}" >"$dir/npm-install.log" 2>&1) ||
        die "npm install failed: $(tail -n 5 "$dir/npm-install.log")"
}

# bench_workdir NAME : WORK, a fresh directory; PIDS, the processes to stop on exit. On a failed
# exit the last lines of every log in WORK are shown first.
bench_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/svc-$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

bench_cleanup() {
    local status=$?
    local pid file
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ]; then
        for file in "$WORK"/*.log; do
            [ -s "$file" ] || continue
            log "$(basename "$file" .log) log (last lines):"
            tail -n 20 "$file" >&2 || true
        done
    fi
    rm -rf "$WORK"
}

# free_port : a loopback TCP port nothing listens on right now.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# stop_pid PID : stops a process this script started (SIGTERM, then waits for it) and forgets
# it, so the exit trap does not signal a recycled pid.
stop_pid() {
    local pid=$1 kept=() p
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
    PIDS=("${kept[@]}")
}

# wait_http URL [SECONDS] : waits until URL answers 2xx (default 30 s).
wait_http() {
    local url=$1 tries=$(( ${2:-30} * 10 )) _
    for _ in $(seq 1 "$tries"); do
        curl -fsS -o /dev/null "$url" 2>/dev/null && return 0
        sleep 0.1
    done
    die "$url did not answer within ${2:-30}s"
}

# files_bytes PATH… [-- FIND-TESTS…] : the sum of the sizes (st_size, bytes) of the regular files
# under PATHs, with optional extra find tests after `--` (e.g. `-not -path '*/_series/*'`).
files_bytes() {
    local paths=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do paths+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    find "${paths[@]}" -type f "$@" -printf '%s\n' | awk '{ n += $1 } END { printf "%d\n", n }'
}

# files_listing PATH… : one line per regular file, path and size, sorted (to see when a data
# directory stops changing).
files_listing() { find "$@" -type f -printf '%p %s\n' 2>/dev/null | sort; }

# start_ready NAME CMD… : runs CMD in the background (stdout WORK/NAME.out, stderr
# WORK/NAME.log) and waits for its `ready {json}` line; sets PID, READY (the JSON) and ADDR (its
# `http` address).
start_ready() {
    local name=$1
    shift
    # Made before the background job opens it, so the first look below finds the file.
    : >"$WORK/$name.out"
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
    PID=$!
    PIDS+=("$PID")
    local _
    for _ in $(seq 1 300); do
        READY=$(sed -n 's/^ready //p' "$WORK/$name.out")
        if [ -n "$READY" ]; then
            ADDR=$(sed -n 's/.*"http":"\([^"]*\)".*/\1/p' <<<"$READY")
            log "$name ready on $ADDR (pid $PID)"
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || die "$name exited early"
        sleep 0.1
    done
    die "$name printed no ready line within 30s"
}

# start_svc [WRAPPER…] : `svc serve` (the binary SVC) on a fresh data dir (SVC_DATA, default
# $WORK/data) and free ports, under WRAPPER (e.g. `nice -n -10`); sets SVC_PID, SVC_URL,
# SVC_MQTT_PORT and DB (its database: the SQLite file, or SVC_DATABASE when that is set, passed
# as `--database`). SVC_NAME (default svc) names its log files; SVC_SERVE_ARGS (split on
# spaces) adds options to `svc serve`.
start_svc() {
    local data=${SVC_DATA:-$WORK/data}
    log "starting ${SVC_NAME:-svc} serve (fresh data dir)"
    start_ready "${SVC_NAME:-svc}" env SVC_LOG="${SVC_LOG:-info}" "$@" "$SVC" serve --data-dir "$data" \
        --http-port 0 --mqtt-port 0 --ws-port 0 --admin-password "$PASSWORD" \
        ${SVC_DATABASE:+--database "$SVC_DATABASE"} ${SVC_SERVE_ARGS:-}
    SVC_PID=$PID
    SVC_URL="http://$ADDR"
    SVC_MQTT_PORT=$(sed -n 's/.*"mqtt":"[^"]*:\([0-9]*\)".*/\1/p' <<<"$READY")
    DB=${SVC_DATABASE:-$data/svc.db}
}

# start_postgres : a private PostgreSQL server (Debian's package) in $WORK/pg on a free
# loopback port, as the package's unprivileged user when run as root (PostgreSQL refuses
# root), with its default durability (fsync, synchronous commits); sets PG_PORT and PG_PID.
# pg_database NAME creates a database and prints its URL.
start_postgres() {
    compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || install_deb postgresql
    local bin
    bin=$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/postgres' | sort -V | tail -n 1)")
    PG_BIN=$bin
    PG_AS=()
    if [ "$(id -u)" -eq 0 ]; then PG_AS=(runuser -u postgres --); fi
    mkdir -p "$WORK/pg"
    [ "$(id -u)" -eq 0 ] && chown postgres "$WORK" "$WORK/pg"
    PG_PORT=$(free_port)
    log "starting a private PostgreSQL ($("$bin/postgres" --version)) on port $PG_PORT"
    "${PG_AS[@]}" "$bin/initdb" -D "$WORK/pg/data" -U svc --auth=trust -E UTF8 --locale=C >"$WORK/pg-initdb.log" 2>&1 ||
        die "initdb failed: $(cat "$WORK/pg-initdb.log")"
    "${PG_AS[@]}" "$bin/postgres" -D "$WORK/pg/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
        -c unix_socket_directories= -c shared_buffers=512MB -c max_connections=200 \
        >"$WORK/postgres.log" 2>&1 &
    PG_PID=$!
    PIDS+=("$PG_PID")
    local _
    for _ in $(seq 1 100); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && return 0
        sleep 0.1
    done
    die "PostgreSQL did not start: $(tail -n 5 "$WORK/postgres.log")"
}

pg_database() {
    "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U svc "$1" || die "createdb $1 failed"
    echo "postgres://svc@127.0.0.1:$PG_PORT/$1?sslmode=disable"
}

# call METHOD PATH [BODY] : the response body on stdout; fails unless the status is 2xx. Sends
# TOKEN when set, and the headers of the CALL_HEADERS array.
TOKEN=""
CALL_HEADERS=()
call() {
    local method=$1 path=$2 body=${3:-}
    local args=(-sS -o "$WORK/body" -w '%{http_code}' -X "$method" "$SVC_URL$path")
    local header
    for header in "${CALL_HEADERS[@]}"; do args+=(-H "$header"); done
    [ -n "$TOKEN" ] && args+=(-H "Authorization: Bearer $TOKEN")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
    local code
    code=$(curl "${args[@]}")
    case $code in
        2??) cat "$WORK/body" ;;
        *) die "$method $path → $code: $(cat "$WORK/body")" ;;
    esac
}

# login_admin : TOKEN, the admin's JWT.
login_admin() {
    TOKEN=$(call POST /auth/login "{\"username\":\"admin\",\"password\":\"$PASSWORD\"}" |
        sed -n 's/.*"tkn":"\([^"]*\)".*/\1/p')
    [ -n "$TOKEN" ] || die "login failed"
}

# --- measurements shared by run.sh and engines.sh -------------------------------------------
# They read the caller's settings: THREADS and CONNS (wrk -t/-c), WARMUP and DURATION, and the
# running svc's SVC_URL and SVC_PID.

# collection NAME : a collection laid out like every benchmarked table.
collection() {
    call POST /svc/collections '{"name":"'"$1"'","fields":[{"name":"sku","type":"string"},{"name":"line","type":"string"},{"name":"value","type":"number"},{"name":"note","type":"string","searchable":true}],"indexDetails":[{"fields":["line"],"isUnique":false},{"fields":["sku"],"isUnique":true}]}' >/dev/null
}
TICKS_PER_SEC=$(getconf CLK_TCK)
# cpu_ticks PID : user + system CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# steal_ticks : clock ticks the hypervisor has taken from this machine's CPUs (all of them).
steal_ticks() { awk '$1 == "cpu" { print $9 }' /proc/stat; }
# measure MODE URL PID : warmup, then the measured run; prints its RESULT line followed by the
# server's CPU time per request in µs.
measure() {
    local mode=$1 url=$2 pid=$3 conns=${4:-$CONNS} before after
    log "measuring $mode: warmup $WARMUP, then wrk -t$THREADS -c$conns -d$DURATION"
    BENCH_MODE=$mode wrk -t"$THREADS" -c"$conns" -d"$WARMUP" --timeout 30s -s bench/wrk.lua "$url" >/dev/null
    before=$(cpu_ticks "$pid")
    BENCH_MODE=$mode wrk -t"$THREADS" -c"$conns" -d"$DURATION" --timeout 30s --latency -s bench/wrk.lua "$url" \
        >"$WORK/wrk-$mode.txt"
    after=$(cpu_ticks "$pid")
    grep '^RESULT ' "$WORK/wrk-$mode.txt" | tr -d '\n' || die "wrk printed no result for $mode"
    echo " $(( (after - before) * 1000000 / TICKS_PER_SEC ))"
}
# create_rate CLIENTS TABLE : POSTs new records into a fresh collection TABLE for DURATION with
# wrk (CLIENTS connections, `create` mode of bench/wrk.lua, after a warmup into the same table);
# checks that every answered create was stored; prints records/s and the server's CPU time per
# record in µs.
create_rate() {
    local clients=$1 table=$2 threads=$THREADS before after result stored answered errors
    [ "$clients" -lt "$threads" ] && threads=$clients
    collection "$table"
    BENCH_MODE=create BENCH_TABLE=$table wrk -t"$threads" -c"$clients" -d"$WARMUP" --timeout 30s \
        -s bench/wrk.lua "$SVC_URL" >/dev/null
    stored=$(call GET "/svc/$table/count" | sed -n 's/.*"count":\([0-9]*\).*/\1/p')
    before=$(cpu_ticks "$SVC_PID")
    # Each wrk run numbers its threads from 1 again: the measured run takes its own id range.
    BENCH_MODE=create BENCH_TABLE=$table BENCH_ID_BASE=1000000 wrk -t"$threads" -c"$clients" \
        -d"$DURATION" --timeout 30s -s bench/wrk.lua "$SVC_URL" >"$WORK/wrk-create-$table.txt"
    after=$(cpu_ticks "$SVC_PID")
    result=$(grep '^RESULT ' "$WORK/wrk-create-$table.txt") || die "wrk printed no result for creates"
    read -r _ _ rps _ _ _ _ answered errors <<<"$result"
    [ "$errors" -eq 0 ] || die "$table: $errors creates failed: $(cat "$WORK/wrk-create-$table.txt")"
    stored=$(( $(call GET "/svc/$table/count" | sed -n 's/.*"count":\([0-9]*\).*/\1/p') - stored ))
    # Requests in flight when either wrk run stopped may be stored without being counted as
    # answered (the warmup's land after the count before the measured run when commits are slow).
    [ "$stored" -ge "$answered" ] && [ "$stored" -le $((answered + 2 * clients)) ] ||
        die "$table: wrk saw $answered creates answered, the table gained $stored records"
    log "$table: $answered creates answered in $DURATION by $clients clients ($rps/s), $stored stored"
    echo "${rps%.*} $(( (after - before) * 1000000 / TICKS_PER_SEC / stored ))"
}
