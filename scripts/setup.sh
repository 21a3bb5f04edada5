#!/usr/bin/env bash
# Installs what svcbench, its reference services and its tests need on a fresh machine of this project's
# kind (Debian with Rust, Go, Java 17 + Temurin 25, Maven, Node, Python), then builds svcbench.
# Idempotent: quick when done.
#   scripts/setup.sh             every package, and target/release/svcbench (thin LTO: for measuring
#                                svcbench itself, bench/)
#   scripts/setup.sh --quick     only what the main job (quick.sh) uses, and target/ci/svcbench (the same
#                                optimisation without link-time optimisation, minutes faster to build)
#   scripts/setup.sh --no-build  every package, no build (test.sh: its tests build the `ci` profile)
#   scripts/setup.sh --packages  only the Debian packages beyond the main job's and Podman's settings
#                                (test.sh installs them while svcbench compiles: neither waits on the other)
set -euo pipefail
cd "$(dirname "$0")/.."

quick="" no_build="" packages_only=""
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-build) no_build=1 ;;
    --packages) packages_only=1 ;;
    *) echo "setup: unknown option $arg; use --quick (the main job's set) and/or --no-build, or --packages alone" >&2; exit 2 ;;
  esac
done
if [ -n "$packages_only" ] && [ -n "$quick$no_build" ]; then
  echo "setup: --packages installs the packages only; give it alone" >&2; exit 2
fi
build=release
if [ -n "$quick" ]; then build=ci; fi
if [ -n "$no_build" ]; then build=""; fi

# The main job needs only acl (below: taking back an ACL entry older versions granted). The rest is for the
# tests, the other scenarios and bench/:
# sqlite3 (a shell to read a store by hand), wrk and nginx (bench/loadgen-vs-wrk.sh), Chromium (the
# report's rendering test), upx-ucl (the users scenario's packed Go binary), unzip (OpenSearch's
# distribution), iproute2 (--net), OpenSSH (--hosts and its test), python3 (the store's data loader and
# the test fixtures), Podman with runc and mmdebstrap (services as containers: docs/containers.md), and
# catatonit, the init Podman builds a pod's infra (pause) image from where no registry is reachable
# (`run --runtime kube`: docs/kubernetes.md).
apt_packages=(acl)
if [ -z "$quick" ]; then
  apt_packages+=(sqlite3 wrk chromium upx-ucl python3 python3-venv nginx-light unzip iproute2 openssh-client openssh-server podman runc mmdebstrap catatonit)
  # A Docker CLI, which the containers test drives against Podman's Docker-compatible API (no Docker daemon
  # is started: policy-rc.d below). This kind of machine ships one; Debian's comes with docker.io.
  command -v docker >/dev/null 2>&1 || apt_packages+=(docker.io)
fi
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # upx-ucl (the users scenario's compressed Go binary) is only in bookworm-backports: add that suite,
  # on the mirror this machine already uses.
  if [[ " ${missing[*]} " == *" upx-ucl "* ]] && ! apt-cache policy upx-ucl 2>/dev/null | grep -q Candidate:.[0-9]; then
    mirror=$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1)
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    if [ -n "$mirror" ] && [ -n "$codename" ]; then
      echo "deb $mirror $codename-backports main" > /etc/apt/sources.list.d/svcbench-backports.list
    fi
  fi
  apt-get update -q >/dev/null
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  # openssh-server is for the hosts test, which starts its own sshd in a namespace: the package's own
  # service must not start (policy-rc.d's 101 tells the package scripts so).
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  # One transaction (dpkg's triggers run once); where it fails (a package only in backports), one by one.
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    for p in "${missing[@]}"; do
      apt-get install -y -q --no-install-recommends "$p" >/dev/null 2>&1 ||
        apt-get install -y -q --no-install-recommends -t "$codename-backports" "$p" >/dev/null
    done
  fi
  if [ -n "$made_policy" ]; then rm -f "$policy"; fi
fi

# Container services (docs/containers.md) run under Podman with these settings, which this kind of machine
# needs: the runtime runc (crun refuses the hybrid v1 + controller-less v2 cgroup layout) and ulimits no
# higher than the host's hard limits (there is no CAP_SYS_RESOURCE to raise them). Written as a drop-in the
# engine reads, and only where the user has not configured Podman themselves.
containers_dropin=/etc/containers/containers.conf.d/50-svcbench.conf
if command -v podman >/dev/null 2>&1; then
  user_config=""
  [ -f /etc/containers/containers.conf ] && user_config=/etc/containers/containers.conf
  for f in /etc/containers/containers.conf.d/*.conf; do
    [ -e "$f" ] && [ "$f" != "$containers_dropin" ] && user_config=$f
  done
  if [ -f "$containers_dropin" ] && ! grep -q '^# Written by scripts/setup.sh of svcbench' "$containers_dropin"; then
    user_config=$containers_dropin
  fi
  if [ -n "$user_config" ]; then
    echo "setup: $user_config configures Podman already; svcbench's settings are not written (this machine may need runtime = \"runc\" and ulimits no higher than \`ulimit -H\`: docs/containers.md)" >&2
  else
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    # runc refused 65536 processes here even under a hard limit of 96364; 32768 was accepted.
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
    if [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ]; then nofile=1048576; fi
    mkdir -p "$(dirname "$containers_dropin")"
    cat > "$containers_dropin.tmp" <<CONF
# Written by scripts/setup.sh of svcbench (docs/containers.md); delete this file to undo.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
CONF
    if ! cmp -s "$containers_dropin.tmp" "$containers_dropin" 2>/dev/null; then
      mv "$containers_dropin.tmp" "$containers_dropin"
      echo "setup: wrote Podman's settings for this machine to $containers_dropin (runtime runc, ulimits nofile $nofile, nproc $nproc)" >&2
    else
      rm -f "$containers_dropin.tmp"
    fi
  fi
fi

if [ -n "$packages_only" ]; then exit 0; fi

# Services under test run as `svcbench`, the second side of a duet as `svcbench-peer`, and the
# dependencies svcbench starts (OpenSearch) as `svcbench-store`: unprivileged users of their own, so no
# part of a measurement can signal, trace or read another (docs/security.md).
for user in svcbench svcbench-peer svcbench-store; do
  id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
done

# It must reach the services' folders in this checkout. A checkout under a folder it cannot enter (/root
# is 0700 on many machines) is refused, not opened up: a search bit for it on a home folder would let the
# services reach every world-readable file there by name (docs/security.md).
# Older versions of this script granted that bit with an ACL entry of exactly `user:svcbench:--x`; such an
# entry on a folder above the checkout is taken back.
dir=$(pwd -P)
while :; do
  if getfacl -cp "$dir" 2>/dev/null | grep -qx 'user:svcbench:--x'; then
    setfacl -x u:svcbench "$dir"
    echo "setup: removed the ACL entry user:svcbench:--x on $dir (an older setup.sh granted it; the services' user no longer crosses folders it could not enter)" >&2
  fi
  [ "$dir" = / ] && break
  dir=$(dirname "$dir")
done
if ! closed=$(scripts/unreachable-folder.sh .); then
  echo "setup: user svcbench (the services') cannot enter $closed, above this checkout $(pwd -P): clone svcbench where every user can enter each folder above it, e.g. git clone $(pwd -P) /srv/svcbench, and run it from there" >&2
  exit 1
fi

# The report's chart library, from npm, embedded into the binary at build time (crates/svcbench/assets).
if [ -f crates/svcbench/assets/package.json ] && [ ! -d crates/svcbench/assets/node_modules ]; then
  (cd crates/svcbench/assets && npm ci --no-audit --no-fund --loglevel=error)
fi

# The development gate (test.sh) needs rustfmt and clippy; rustup's default profile has them.
for c in rustfmt clippy; do
  if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$c" >/dev/null 2>&1 || { echo "setup: cargo $c is missing; install it with: rustup component add $c" >&2; exit 1; }
  fi
done

# The binary: `ci` for the main job (quick.sh), `release` for bench/ and for measuring svcbench itself.
if [ "$build" = ci ]; then
  cargo build --profile ci --locked -p svcbench 2>&1 | tail -n 3 >&2
elif [ "$build" = release ]; then
  cargo build --release --locked -p svcbench 2>&1 | tail -n 3 >&2
fi
