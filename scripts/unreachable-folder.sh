#!/usr/bin/env bash
# Prints the first folder, from / down to FOLDER, that the services' unprivileged user cannot enter, and
# exits 1; exits 0 when it can enter them all. The user is `svcbench` (or `nobody` before setup.sh made it).
# Used by scripts/setup.sh (which refuses such a checkout) and .ci/run (which then runs from a copy).
#   scripts/unreachable-folder.sh FOLDER
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 FOLDER" >&2; exit 2; fi
user=svcbench
id "$user" >/dev/null 2>&1 || user=nobody
dirs=() dir=$(cd "$1" && pwd -P)
while :; do dirs=("$dir" "${dirs[@]}"); [ "$dir" = / ] && break; dir=$(dirname "$dir"); done
for dir in "${dirs[@]}"; do
  if ! setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups test -x "$dir" 2>/dev/null; then
    printf '%s\n' "$dir"
    exit 1
  fi
done
