#!/usr/bin/env bash
# Installs what the test suite drives (when missing) and runs it: the README's test command.
#   mosquitto-clients  mosquitto_pub / mosquitto_sub, real MQTT peers
#   mosquitto          a real peer broker (upstream tests), with mosquitto_passwd
#   tmux               the TUI test drives `svc tui` in a real terminal
#   chromium, chromium-driver  the web console's browser tests (headless, through WebDriver)
#   python3            Debian's interpreter, which runs Python processes (svc looks for
#                      /usr/bin/python3 first: a pyenv or venv shim is not an interpreter)
#   python3-venv, python3-pip  a venv under target/ holding schemathesis (pinned), which
#                      tests/it/schemathesis.rs runs against the served OpenAPI document
#   (PyPI, pinned) asyncua and pymodbus in target/peers-venv: the OPC UA and Modbus TCP
#                      servers the connector tests start (tests/peers/); mqtt-spb-wrapper, a
#                      Python Sparkplug B edge node independent of Eclipse Tahu, the second
#                      edge node of the Sparkplug tests (tests/peers/sparkplug_edge.py);
#                      aiosmtpd, the SMTP server the alarm notification tests mail to
#                      (tests/peers/smtp_sink.py)
#   (npm, pinned) node-opcua-server in target/peers-node: the second OPC UA server;
#                      sparkplug-client and sparkplug-payload (Eclipse Tahu's reference edge
#                      node and payload codec) with mqtt 4.x, the one sparkplug-client runs on:
#                      the Sparkplug edge node and the Sparkplug decoder of the tests
#                      (tests/peers/sparkplug_edge.cjs, sparkplug_listen.cjs)
#   postgresql         the PostgreSQL engine's tests start a private server of their own
#                      (initdb in a temporary directory, as an unprivileged user)
#   lintian, systemd   the Debian package's test (tests/it/package.rs) checks the .deb with
#                      lintian and its unit with systemd-analyze (no running systemd needed)
#   (crates.io, pinned) cargo-deb: builds that package (scripts/deb)
# Needs only the Rust toolchain; system packages come from apt (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mosquitto_pub >/dev/null 2>&1 || need+=(mosquitto-clients)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/bin/python3 ] || need+=(python3)
/usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv python3-pip)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
{ command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; } || need+=(mosquitto)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
command -v lintian >/dev/null 2>&1 || need+=(lintian)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}"
  $SUDO apt-get clean # the downloaded packages are installed; their copies only take disk
fi

# cargo-deb from crates.io, pinned (its asset paths and profile handling are what scripts/deb
# relies on); about 3 minutes to build once.
CARGO_DEB_VERSION=3.8.0
if [ "$(cargo deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
  cargo install --locked --quiet --version "$CARGO_DEB_VERSION" cargo-deb
fi

# schemathesis from PyPI, pinned, in its own venv (tests/it/schemathesis.rs looks for it there).
SCHEMATHESIS_VERSION=4.32.5
venv="${CARGO_TARGET_DIR:-target}/schemathesis-venv"
if [ "$("$venv/bin/schemathesis" --version 2>/dev/null | grep -o '[0-9][0-9.]*$')" != "$SCHEMATHESIS_VERSION" ]; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "schemathesis==$SCHEMATHESIS_VERSION"
fi

# The connector tests' device peers: Python's asyncua and pymodbus, and npm's node-opcua; the
# Sparkplug tests' edge nodes: Python's mqtt-spb-wrapper, and npm's sparkplug-client (Tahu); the
# alarm notification tests' SMTP server: Python's aiosmtpd.
PEERS_PY="asyncua==2.1.0 pymodbus==3.16.1 mqtt-spb-wrapper==2.1.2 aiosmtpd==1.4.6"
peers="${CARGO_TARGET_DIR:-target}/peers-venv"
if [ "$(cat "$peers/.pinned" 2>/dev/null)" != "$PEERS_PY" ]; then
  /usr/bin/python3 -m venv "$peers"
  # shellcheck disable=SC2086
  "$peers/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir $PEERS_PY
  echo "$PEERS_PY" >"$peers/.pinned"
fi
# mqtt is pinned to the 4.x release that sparkplug-client 3.2.4 (mqtt ^4.2.8) resolves to, so
# the Sparkplug peers and sparkplug-client share one copy.
PEERS_NODE="node-opcua-server@2.186.4 sparkplug-client@3.2.4 sparkplug-payload@1.0.3 mqtt@4.3.8"
peers_node="${CARGO_TARGET_DIR:-target}/peers-node"
if [ "$(cat "$peers_node/.pinned" 2>/dev/null)" != "$PEERS_NODE" ]; then
  command -v npm >/dev/null 2>&1 || need_node=1
  if [ -n "${need_node:-}" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq nodejs npm
  fi
  mkdir -p "$peers_node"
  # shellcheck disable=SC2086
  (cd "$peers_node" && npm install --silent --no-audit --no-fund $PEERS_NODE)
  echo "$PEERS_NODE" >"$peers_node/.pinned"
fi

# The whole suite on each store engine: SQLite (the embedded default), then PostgreSQL, where
# every test server gets a fresh database on a private cluster its test binary starts
# (tests/it/common/postgres.rs).
status=0
echo "== the suite on the SQLite engine"
cargo test --locked "$@" || status=$?
echo "== the suite on the PostgreSQL engine"
SVC_TEST_ENGINE=postgres cargo test --locked "$@" || status=$?
exit "$status"
