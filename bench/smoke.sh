#!/usr/bin/env bash
# One repetition of every scenario, at small sizes, on every broker: proves
# the benchmark harness works end to end (CI). It is not judged on speed, so
# its results go to the ignored scratch directory. Extra flags pass through,
# e.g. bench/smoke.sh -brokers saguin,mosquitto where the module proxy (for
# the mochi peer) is out of reach.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/cmd/benchrun -profile smoke -strict -out bench/results/tmp/smoke "$@"
