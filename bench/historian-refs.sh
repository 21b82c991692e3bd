# The reference historians of bench/historian.sh (sourced after bench/lib.sh, not run):
# VictoriaMetrics, InfluxDB 1.x and Prometheus's TSDB from Debian's packages, each started on
# free loopback ports with its data under WORK, brought to rest the way each documents
# (flush and merge, cache snapshot and full compaction, blocks written by promtool), and
# measured as the bytes of its files. Every helper fails the bench (die) when a tool is missing
# after the install, does not start, or leaves nothing to measure.

# settle_files WHAT QUIET TIMEOUT CHECK PATH… : waits until the files under PATHs (names and
# sizes) stay the same for QUIET seconds while the command CHECK succeeds, at most TIMEOUT
# seconds; prints the seconds it waited.
settle_files() {
    local what=$1 quiet=$2 timeout=$3 check=$4
    shift 4
    local started=$SECONDS last="" now since=$SECONDS
    while :; do
        now=$(files_listing "$@")
        if [ "$now" != "$last" ] || ! $check; then
            last=$now
            since=$SECONDS
        elif [ $((SECONDS - since)) -ge "$quiet" ]; then
            break
        fi
        [ $((SECONDS - started)) -lt "$timeout" ] || die "$what did not come to rest within ${timeout}s"
        sleep 1
    done
    echo $((SECONDS - started))
}

# --- VictoriaMetrics ------------------------------------------------------------------------
# start_victoria NAME : victoria-metrics (single node) with its data in WORK/NAME, retention
# 100 years (the data sets lie in 2025 and 2026), full 64-bit precision (its default: lossless),
# no deduplication; sets VM_URL, VM_DIR and VM_PID.
start_victoria() {
    command -v victoria-metrics >/dev/null 2>&1 || install_deb victoria-metrics
    command -v victoria-metrics >/dev/null 2>&1 || die "victoria-metrics is not installed"
    local port
    port=$(free_port)
    VM_DIR=$WORK/$1
    VM_URL=http://127.0.0.1:$port
    victoria-metrics -storageDataPath "$VM_DIR" -httpListenAddr "127.0.0.1:$port" \
        -retentionPeriod 100y -search.maxSamplesPerSeries 100000000 -loggerLevel ERROR >"$WORK/$1.log" 2>&1 &
    VM_PID=$!
    PIDS+=("$VM_PID")
    wait_http "$VM_URL/health"
    log "$1: victoria-metrics $(deb_version victoria-metrics) on $VM_URL (pid $VM_PID)"
}

# vm_idle : no forced merge running and no rows waiting to be written (from /metrics).
vm_idle() {
    curl -fsS "$VM_URL/metrics" | awk '
        /^vm_active_force_merges / { busy += $2 }
        /^vm_pending_rows\{/ { busy += $2 }
        END { exit busy > 0 }'
}

# vm_settle : /internal/force_flush, then /internal/force_merge (every partition), then waits
# until VictoriaMetrics is idle and its files stay the same for 3 s; prints the seconds waited.
vm_settle() {
    curl -fsS "$VM_URL/internal/force_flush" >/dev/null || die "VictoriaMetrics force_flush failed"
    curl -fsS "$VM_URL/internal/force_merge" >/dev/null || die "VictoriaMetrics force_merge failed"
    settle_files VictoriaMetrics 3 600 vm_idle "$VM_DIR"
}

# vm_bytes : every regular file under -storageDataPath (data parts, indexdb, metadata).
vm_bytes() { files_bytes "$VM_DIR"; }

# --- InfluxDB 1.x ---------------------------------------------------------------------------
# start_influx : influxd with its meta, data and WAL in WORK/influx, HTTP and RPC on free
# ports, the in-memory index (1.6's default), the cache snapshotted after 2 s without writes
# and a shard fully compacted after 5 s (its defaults: 10 min and 4 h); creates database
# `plant`; sets INFLUX_URL, INFLUX_DIR and INFLUX_PID.
start_influx() {
    command -v influxd >/dev/null 2>&1 || install_deb influxdb
    command -v influxd >/dev/null 2>&1 || die "influxd is not installed"
    INFLUX_DIR=$WORK/influx
    mkdir -p "$INFLUX_DIR"
    local http rpc
    http=$(free_port)
    rpc=$(free_port)
    INFLUX_URL=http://127.0.0.1:$http
    cat >"$INFLUX_DIR/influxdb.conf" <<EOF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc"
[meta]
  dir = "$INFLUX_DIR/meta"
[data]
  dir = "$INFLUX_DIR/data"
  wal-dir = "$INFLUX_DIR/wal"
  query-log-enabled = false
  cache-snapshot-write-cold-duration = "2s"
  compact-full-write-cold-duration = "5s"
[http]
  bind-address = "127.0.0.1:$http"
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
EOF
    influxd run -config "$INFLUX_DIR/influxdb.conf" >"$WORK/influxd.log" 2>&1 &
    INFLUX_PID=$!
    PIDS+=("$INFLUX_PID")
    wait_http "$INFLUX_URL/ping"
    curl -fsS -XPOST "$INFLUX_URL/query" --data-urlencode 'q=CREATE DATABASE plant' >/dev/null ||
        die "InfluxDB: CREATE DATABASE failed"
    log "influxd $(deb_version influxdb) on $INFLUX_URL (pid $INFLUX_PID)"
}

# influx_at_rest : every WAL segment empty (the cache is snapshotted into TSM files) and no
# compaction's temporary file present.
influx_at_rest() {
    [ -z "$(find "$INFLUX_DIR/wal" -name '*.wal' -size +0c 2>/dev/null)" ] &&
        [ -z "$(find "$INFLUX_DIR/data" -name '*.tmp' 2>/dev/null)" ]
}

# influx_settle : waits until InfluxDB is at rest and its files stay the same for 10 s (twice
# the full-compaction delay); prints the seconds waited.
influx_settle() { settle_files InfluxDB 10 600 influx_at_rest "$INFLUX_DIR/data" "$INFLUX_DIR/wal"; }

# influx_bytes : the shard directories (TSM files, fields index) and the WAL. Left out: the
# database's series file (data/plant/_series, see influx_series_note) and meta (bytes).
influx_bytes() { files_bytes "$INFLUX_DIR/data" "$INFLUX_DIR/wal" -- -not -path '*/_series/*'; }

# influx_series_note : what the series file holds: 8 segments preallocated at 4 MiB each
# whatever the data, mostly not yet allocated on disk.
influx_series_note() {
    echo "$(files_bytes "$INFLUX_DIR/data/plant/_series") bytes preallocated, $(du -sB1 "$INFLUX_DIR/data/plant/_series" | cut -f1) allocated on disk"
}

# --- Prometheus -----------------------------------------------------------------------------
# prom_blocks FILE DIR : `promtool tsdb create-blocks-from openmetrics` of FILE into DIR with
# blocks up to 31 days (what a server's compaction reaches with a year's retention: 10 % of it,
# at most 31 d; the default 2 h would leave the small blocks a server compacts later); prints
# the bytes of every file of the blocks (chunks, index, meta.json, tombstones).
prom_blocks() {
    command -v promtool >/dev/null 2>&1 || install_deb prometheus
    command -v promtool >/dev/null 2>&1 || die "promtool is not installed"
    promtool tsdb create-blocks-from openmetrics --max-block-duration=744h "$1" "$2" \
        >"$WORK/promtool.log" 2>&1 || die "promtool failed: $(tail -n 5 "$WORK/promtool.log")"
    [ -n "$(find "$2" -mindepth 1 -maxdepth 1 -type d)" ] || die "promtool wrote no block"
    files_bytes "$2"
}
