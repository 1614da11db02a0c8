#!/usr/bin/env bash
# Installs, from Debian, what the tests use beside Go: mosquitto (a reference
# broker the plain-MQTT conformance tests also run against), mosquitto-clients
# (mosquitto_pub/mosquitto_sub) and gcc for the cgo sqlite driver.
set -euo pipefail
need=()
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v mosquitto_pub >/dev/null || need+=(mosquitto-clients)
command -v gcc >/dev/null || need+=(gcc)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
