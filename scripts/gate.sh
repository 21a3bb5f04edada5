#!/usr/bin/env bash
# A pull request's performance gate, the one step the CI workflows in ci/ run (docs/ci.md):
#   scripts/gate.sh SERVICE_FOLDER BASE_REVISION [svcbench gate options…]
# Measures the service at BASE against the working tree by duet and writes results/gate.md (the comment)
# and results/gate.json. Exit 0: no regression; 1: regression; 3: not decided or not measured; 2: refused.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: scripts/gate.sh SERVICE_FOLDER BASE_REVISION [svcbench gate options…]" >&2
  exit 2
fi
service=$1 base=$2
shift 2
svcbench=${SVCBENCH:-svcbench}
mkdir -p results
code=0
"$svcbench" gate "$service" --base "$base" --summary results/gate.md --json results/gate.json "$@" || code=$?
case $code in
  0) echo "gate: no regression" >&2 ;;
  1) echo "gate: regression (results/gate.md says which metric, its ratio and interval)" >&2 ;;
  3) echo "gate: not decided; this is not a pass (results/gate.md says why)" >&2 ;;
  *) echo "gate: svcbench refused or was stopped (exit $code)" >&2 ;;
esac
exit $code
