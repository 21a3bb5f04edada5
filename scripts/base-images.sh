#!/usr/bin/env bash
# The base images the bundled services' Containerfiles build on, made from Debian packages with mmdebstrap
# (no registry is needed, nor reachable on this project's machines) and imported into the container engine:
#   localhost/svcbench-debian   Debian's minbase of this machine's release: libc, a shell (the Rust services)
#   localhost/svcbench-jre17    the same with Debian's OpenJDK 17 JRE (the JVM services)
# (The Node service's image adds to the minbase the Node.js its process runs on: its Containerfile.)
# An image already there is kept; --force makes them again. Needs root, mmdebstrap and Podman or Docker
# (scripts/setup.sh installs them). About a minute each here; the JRE image is about 400 MB.
# Usage: scripts/base-images.sh [--force] [debian|jre17 ...]   (default: both)
set -euo pipefail
force=""
wanted=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    debian | jre17) wanted+=("$arg") ;;
    *) echo "base-images: unknown argument $arg; give --force and/or debian, jre17" >&2; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=(debian jre17)
if [ "$(id -u)" != 0 ]; then echo "base-images: run as root (mmdebstrap and the engine need it)" >&2; exit 2; fi
command -v mmdebstrap >/dev/null || { echo "base-images: mmdebstrap is missing: run scripts/setup.sh" >&2; exit 2; }
engine=""
if command -v docker >/dev/null && docker info >/dev/null 2>&1 && ! docker --version | grep -qi podman; then
  engine=docker
elif command -v podman >/dev/null; then
  engine=podman
fi
[ -n "$engine" ] || { echo "base-images: no container engine (Podman or Docker): run scripts/setup.sh" >&2; exit 2; }
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")

for name in "${wanted[@]}"; do
  case "$name" in
    debian) include="ca-certificates" ;;
    jre17) include="ca-certificates,openjdk-17-jre-headless" ;;
  esac
  tag="localhost/svcbench-$name"
  if [ -z "$force" ] && $engine image inspect "$tag" >/dev/null 2>&1; then
    echo "base-images: $tag is there"
    continue
  fi
  echo "base-images: making $tag from Debian's $suite packages ($include)"
  t0=$(date +%s)
  # The mirror and keys are this machine's apt sources; the tarball goes straight into the engine.
  mmdebstrap --quiet --variant=minbase --include="$include" "$suite" - |
    $engine import --change 'CMD ["/bin/sh"]' - "$tag" >/dev/null
  echo "base-images: $tag made in $(($(date +%s) - t0)) s"
done
