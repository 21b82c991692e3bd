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

# Where cargo puts its builds.
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

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

# start_ready NAME CMD… : runs CMD in the background (stdout WORK/NAME.out, stderr
# WORK/NAME.log) and waits for its `ready {json}` line; sets PID, READY (the JSON) and ADDR (its
# `http` address).
start_ready() {
    local name=$1
    shift
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
# SVC_MQTT_PORT and DB (its database file). SVC_NAME (default svc) names its log files.
start_svc() {
    local data=${SVC_DATA:-$WORK/data}
    log "starting ${SVC_NAME:-svc} serve (fresh data dir)"
    start_ready "${SVC_NAME:-svc}" env SVC_LOG="${SVC_LOG:-info}" "$@" "$SVC" serve --data-dir "$data" \
        --http-port 0 --mqtt-port 0 --ws-port 0 --admin-password "$PASSWORD"
    SVC_PID=$PID
    SVC_URL="http://$ADDR"
    SVC_MQTT_PORT=$(sed -n 's/.*"mqtt":"[^"]*:\([0-9]*\)".*/\1/p' <<<"$READY")
    DB="$data/svc.db"
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
