#!/usr/bin/env bash
# Installs, from Debian and npm, what the tests and the release targets use beside Go:
#   mosquitto (a reference broker the plain-MQTT conformance tests also run
#     against, and mosquitto_passwd for make deb-check), mosquitto-clients
#     (mosquitto_pub/mosquitto_sub, also over TLS with client certificates),
#     gcc for the cgo sqlite driver;
#   for the transport tests (docs/transports.md): haproxy and nginx with its
#     stream module (TLS-terminating proxies in front of a unix door, sending
#     PROXY headers), chromium (a real browser page over WebSocket), nodejs
#     and npm with MQTT.js (pinned by conformance/interop's lock file, put in
#     conformance/interop/node_modules, which git ignores);
#   for make dist: the cross compilers of arm64 and armhf with their C
#     libraries, help2man (the man page is made from --help);
#   for make arm-test: qemu-user-static (the ARM builds run under it);
#   for make deb-check: lintian, and systemd for systemd-analyze verify;
#   prometheus: promtool checks the shipped alert rules, and the server
#     scrapes a running broker (conformance/monitoring_test.go).
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
have mosquitto || need+=(mosquitto)
have mosquitto_pub || need+=(mosquitto-clients)
have gcc || need+=(gcc)
dpkg-query -W -f='${Status}' libc6-dev 2>/dev/null | grep -q 'ok installed' || need+=(libc6-dev)
have aarch64-linux-gnu-gcc || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
have arm-linux-gnueabihf-gcc || need+=(gcc-arm-linux-gnueabihf)
[ -e /usr/arm-linux-gnueabihf/lib/libc.a ] || need+=(libc6-dev-armhf-cross)
have qemu-aarch64-static && have qemu-arm-static || need+=(qemu-user-static)
have help2man || need+=(help2man)
have lintian || need+=(lintian)
have systemd-analyze || need+=(systemd)
have promtool || need+=(prometheus)
have haproxy || need+=(haproxy)
have nginx || need+=(nginx-light)
[ -e /usr/lib/nginx/modules/ngx_stream_module.so ] || need+=(libnginx-mod-stream)
have chromium || need+=(chromium)
have npm || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$here/conformance/interop/node_modules/mqtt" ]; then
  (cd "$here/conformance/interop" && npm ci --no-audit --no-fund --loglevel=error)
fi
