#!/usr/bin/env bash
# Build and start Meridian (embedded GTM, coordinator and datanode in one process).
# Default: data in ./meridian-data, listening on 127.0.0.1:5433; any arguments are passed
# to `meridian start` (e.g. --listen 0.0.0.0:5433 --cache-size 256MB).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SUDO=()
[ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && SUDO=(sudo); }
missing=()
command -v cc >/dev/null || missing+=(build-essential)
command -v pkg-config >/dev/null || missing+=(pkg-config)
[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing build dependencies: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || {
  echo "cargo (Rust) is not installed: install a stable toolchain with rustup (https://rustup.rs)" >&2
  exit 1
}

cargo build --release -p meridian

args=("$@")
have() { local o; for o in "${args[@]}"; do [ "$o" = "$1" ] && return 0; done; return 1; }
have --data-dir || args+=(--data-dir "$ROOT/meridian-data")
have --listen || args+=(--listen 127.0.0.1:5433)
exec "$ROOT/target/release/meridian" start "${args[@]}"
