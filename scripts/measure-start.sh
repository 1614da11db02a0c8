#!/usr/bin/env bash
# The start-up figures of docs/packaging.md: for a saguin binary (through
# qemu when QEMU names one), on memory and on sqlite storage, the time from
# exec to the first MQTT connection answered (mosquitto_pub connecting,
# publishing at QoS 1 and getting its PUBACK), and the resident memory then.
# Best of RUNS (default 5); a loaded machine only makes the numbers larger.
#
#   scripts/measure-start.sh dist/bin/saguin-linux-amd64
#   QEMU=qemu-aarch64-static scripts/measure-start.sh dist/bin/saguin-linux-arm64
set -euo pipefail
bin=$(realpath "${1:?usage: measure-start.sh SAGUIN_BINARY}")
runs=${RUNS:-5}
port=${PORT:-18839}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT

config() { # memory|sqlite
	cat <<YAML
broker:
  id: measure
  mqtt:
    listen:
      tcp:
        address: 127.0.0.1:$port
  storage:
    default: p
    default_retention_period: 1d
    default_retention_bytes: 64MiB
    providers:
      p:
YAML
	if [ "$1" = sqlite ]; then
		printf '        type: sqlite\n        file_path: %s/saguin.db\n' "$work"
	else
		printf '        type: memory\n        snapshot_dir: none\n'
	fi
}

printf '%-8s %-8s %12s %10s\n' storage size start_ms rss_kib
for storage in memory sqlite; do
	config $storage >"$work/$storage.yaml"
	best_ms= best_rss=
	for _ in $(seq "$runs"); do
		rm -f "$work"/saguin.db*
		t0=$(date +%s%N)
		${QEMU:-} "$bin" --config "$work/$storage.yaml" >"$work/log" 2>&1 &
		pid=$!
		until mosquitto_pub -h 127.0.0.1 -p "$port" -q 1 -t measure/start -m x 2>/dev/null; do
			kill -0 $pid 2>/dev/null || { cat "$work/log" >&2; exit 1; }
			sleep 0.002
		done
		t1=$(date +%s%N)
		rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
		kill -9 $pid; wait $pid 2>/dev/null || true; pid=
		ms=$(( (t1 - t0) / 1000000 ))
		if [ -z "$best_ms" ] || [ "$ms" -lt "$best_ms" ]; then best_ms=$ms; fi
		if [ -z "$best_rss" ] || [ "$rss" -lt "$best_rss" ]; then best_rss=$rss; fi
	done
	printf '%-8s %-8s %12s %10s\n' "$storage" "$(stat -c %s "$bin")" "$best_ms" "$best_rss"
done
