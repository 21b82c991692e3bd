#!/usr/bin/env bash
# Broker throughput of `svc serve` against Mosquitto, measured in one run with the same load
# generator (examples/mqtt_load.rs): 20 publishers → one `bench/#` subscriber, QoS 0 with
# 20×20,000 and QoS 1 with 20×5,000 messages of 64 bytes. svc runs as in production:
# authentication on (an API key as the MQTT password) and the historian recording every
# `bench/p<i>` tag. Mosquitto (Debian package) runs on loopback with unlimited queues.
# Prints msgs/s delivered, loss, the svc/Mosquitto ratio and each broker's resident memory after
# the run, and writes bench/broker-results.md.
#
#   bash bench/broker.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v mosquitto >/dev/null 2>&1 && [ ! -x /usr/sbin/mosquitto ]; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mosquitto >/dev/null
fi
MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)

cargo build --release --quiet --bin svc --example mqtt_load
LOAD=target/release/examples/mqtt_load
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

rss_mb() { awk '/VmRSS/{printf "%.1f", $2/1024}' "/proc/$1/status"; }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# --- svc ---
target/release/svc serve --data-dir "$work/svc" --http-port 0 --mqtt-port 0 --ws-port 0 \
  --admin-password bench-admin-pass >"$work/svc.out" 2>"$work/svc.err" &
pids+=($!); svc_pid=$!
for _ in $(seq 100); do grep -q '^ready ' "$work/svc.out" && break; sleep 0.1; done
http=$(sed -n 's/.*"http":"\([^"]*\)".*/\1/p' "$work/svc.out")
mqtt_port=$(sed -n 's/.*"mqtt":"[^"]*:\([0-9]*\)".*/\1/p' "$work/svc.out")
token=$(curl -s "http://$http/auth/login" -d '{"username":"admin","password":"bench-admin-pass"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["tkn"])')
key=$(curl -s "http://$http/auth/keys" -H "Authorization: Bearer $token" -d '{"name":"bench"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
for i in $(seq 0 19); do
  curl -s -o /dev/null "http://$http/svc/tags" -H "Authorization: Bearer $token" \
    -d "{\"path\":\"bench/p$i\",\"historize\":true}"
done

# --- Mosquitto ---
mosquitto_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/mosquitto.conf" <<CONF
listener $mosquitto_port 127.0.0.1
allow_anonymous true
max_queued_messages 0
max_inflight_messages 0
persistence false
CONF
"$MOSQUITTO" -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 &
pids+=($!); mosquitto_pid=$!
sleep 0.5

run() { # broker port qos messages [username password]
  "$LOAD" --port "$2" --qos "$3" --publishers 20 --messages "$4" --size 64 \
    ${5:+--username "$5" --password "$6"}
}

rows=()
for spec in "0 20000" "1 5000"; do
  set -- $spec
  qos=$1 messages=$2
  m=$(run mosquitto "$mosquitto_port" "$qos" "$messages")
  s=$(run svc "$mqtt_port" "$qos" "$messages" bench "$key")
  m_rate=$(field "$m" msgs_per_s); s_rate=$(field "$s" msgs_per_s)
  ratio=$(python3 -c "print(f'{$s_rate/$m_rate:.2f}')")
  rows+=("| QoS $qos, 20×$messages | $m_rate | $(field "$m" lost) | $s_rate | $(field "$s" lost) | ${ratio}× |")
done
sleep 1
historized=$(python3 - "$work/svc/svc.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(db.execute("SELECT COUNT(*) FROM hist_points").fetchone()[0])
PY
)
svc_rss=$(rss_mb "$svc_pid"); mosquitto_rss=$(rss_mb "$mosquitto_pid")

report=$(cat <<MD
# Broker benchmark: svc against Mosquitto

Written by \`bench/broker.sh\`; overwritten on every run.

- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); machine: $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)
- load: 20 publishers → one \`bench/#\` subscriber, 64-byte payloads (examples/mqtt_load.rs)
- svc: API-key authentication, topic authorization, historian recording all 20 topics
- Mosquitto $("$MOSQUITTO" -h 2>/dev/null | head -1 | awk '{print $3}'): anonymous, unlimited queues, no persistence

| run | Mosquitto msgs/s | lost | svc msgs/s | lost | svc / Mosquitto |
|---|---:|---:|---:|---:|---:|
$(printf '%s\n' "${rows[@]}")

- values in svc's historian after both runs: $historized of 500000
- resident memory after the runs: svc $svc_rss MB, Mosquitto $mosquitto_rss MB
MD
)
echo "$report"
echo "$report" > bench/broker-results.md
