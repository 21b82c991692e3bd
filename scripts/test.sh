#!/usr/bin/env bash
# Installs what the test suite drives (when missing) and runs it: the README's test command.
#   mosquitto-clients  mosquitto_pub / mosquitto_sub, real MQTT peers
#   mosquitto          a real peer broker (upstream tests), with mosquitto_passwd
#   tmux               the TUI test drives `svc tui` in a real terminal
#   chromium, chromium-driver  the web console's browser tests (headless, through WebDriver)
#   python3            Debian's interpreter, which runs Python processes (svc looks for
#                      /usr/bin/python3 first: a pyenv or venv shim is not an interpreter)
# Needs only the Rust toolchain; system packages come from apt (as root, or through sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mosquitto_pub >/dev/null 2>&1 || need+=(mosquitto-clients)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/bin/python3 ] || need+=(python3)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
{ command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; } || need+=(mosquitto)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}"
fi

exec cargo test --locked "$@"
