#!/usr/bin/env bash
# compare's 95 % interval of CPU per request between two services' runs in one store, as one line:
# "<width %> <ratio> [<lo>, <hi>] <verdict>" (nothing when compare gives no interval). Used by duet.sh and
# duet-equal-time.sh to set interleaved runs beside a duet.
# Usage: bench/cpu-per-req-interval.sh BIN DB BASE_SERVICE NEW_SERVICE LABEL
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 BIN DB BASE_SERVICE NEW_SERVICE LABEL" >&2; exit 2; }
"$1" compare --db "$2" --base "service=$3,label=$5" --new "service=$4,label=$5" --format json | python3 -c "
import json, sys
for l in json.load(sys.stdin)['lines']:
    if l['metric'] == 'cpu_per_req' and l.get('ci'):
        lo, hi = l['ci']
        print(f\"{100 * (hi - lo):.1f} {l['ratio']:.4f} [{lo:.4f}, {hi:.4f}] {l['verdict']}\")
        break
"
