#!/usr/bin/env bash
# Builds gsstepd, gsnoded's per-job helper, as a static binary (target x86_64-unknown-linux-musl)
# and prints its path.
#
#   scripts/build-stepd.sh [--release]
#
# Why: gsnoded starts one gsstepd per job (and per step), so its start-up is paid by every
# job. A dynamically linked glibc program spends most of a millisecond before main() on a
# virtual machine (the loader, and glibc's start-up, which asks the CPU for its cache layout
# through CPUID instructions, each one a trap to the hypervisor); a static musl program
# starts in about a third of that (bench/RESULTS.md, "Per-job start-up"). gsstepd needs
# nothing from glibc: gsnoded resolves the user and its groups through NSS and passes them in
# the job folder. scripts/install.sh, the local cluster and the integration tests use this
# build (the .deb still packages the glibc one); gsnoded finds it through GSCHED_STEPD, or
# as the gsstepd installed next to it.
# rust-toolchain.toml lists the target; this script adds it to an older toolchain.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET_TRIPLE=x86_64-unknown-linux-musl
PROFILE=debug
ARGS=()
case "${1:-}" in
  --release) PROFILE=release; ARGS+=(--release) ;;
  "") ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "scripts/build-stepd.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
esac
cd "$ROOT"
# rustup installs rust-toolchain.toml's targets with a new toolchain, not into one already
# installed: add it here when it is missing.
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$TARGET_TRIPLE"; then
  echo "build-stepd.sh: installing the Rust target $TARGET_TRIPLE (rustup target add)" >&2
  rustup target add "$TARGET_TRIPLE" >&2 ||
    { echo "build-stepd.sh: cannot install $TARGET_TRIPLE; run: rustup target add $TARGET_TRIPLE" >&2; exit 1; }
fi
cargo build -q "${ARGS[@]}" --target "$TARGET_TRIPLE" -p gsched-noded --bin gsstepd >&2
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
echo "$TARGET/$TARGET_TRIPLE/$PROFILE/gsstepd"
