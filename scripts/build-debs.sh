#!/usr/bin/env bash
# Builds gsched's Debian packages with cargo-deb (`cargo install cargo-deb`):
#   gsched-controller  gsctld, its systemd unit, the Grafana dashboard
#   gsched-node        gsnoded + gsstepd (the static build, scripts/build-static.sh), their systemd unit
#   gsched-client      the commands and gssim, man pages, gsched.conf(5), shell completions, an example config
#   gsched-slurm-compat  sbatch, squeue, scancel, sinfo, scontrol, sacct naming the commands
# Usage: scripts/build-debs.sh [--out DIR] [--profile release|dev] [--no-build]
#   --out DIR      where the .deb files go (default target/debian)
#   --profile P    the cargo profile whose binaries are packaged (default release; dev
#                  packages the debug build, for tests)
#   --no-build     package binaries already built
#   --fast         compress quickly (larger packages; for tests)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${CARGO_TARGET_DIR:-$ROOT/target}/debian"
PROFILE=release
BUILD=1
FAST=""
die() { printf 'build-debs.sh: %s\n' "$*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) [[ $# -ge 2 ]] || die "--out needs a directory"; OUT="$2"; shift 2 ;;
    --profile) [[ $# -ge 2 ]] || die "--profile needs release or dev"; PROFILE="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --fast) FAST=--fast; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
cargo deb --version >/dev/null 2>&1 || die "cargo-deb is not installed: cargo install cargo-deb --locked"
cd "$ROOT"
if [[ $BUILD == 1 ]]; then
  if [[ $PROFILE == dev ]]; then cargo build --workspace --bins; else cargo build --workspace --bins --profile "$PROFILE"; fi
fi
# gsstepd and gsbatch are packaged from their static builds, staged as <name>-static in the
# profile's directory (the assets of noded/ and cli/Cargo.toml; cargo-deb maps target/release
# to the profile).
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
if [[ $PROFILE == dev ]]; then PROFDIR=debug; STEPD_ARGS=(); else PROFDIR=$PROFILE; STEPD_ARGS=(--release); fi
if [[ $BUILD == 1 ]]; then
  STATIC=$(scripts/build-static.sh "${STEPD_ARGS[@]}")
else
  STATIC="$TARGET/x86_64-unknown-linux-musl/$PROFDIR"
fi
for b in gsstepd gsbatch; do
  [[ -x $STATIC/$b ]] || die "$STATIC/$b is missing: build it with scripts/build-static.sh ${STEPD_ARGS[*]} (or drop --no-build)"
  install -m 0755 "$STATIC/$b" "$TARGET/$PROFDIR/$b-static"
done
mkdir -p "$OUT"
for args in "-p gsched-ctld" "-p gsched-noded" "-p gsched-cli" "-p gsched-cli --variant slurm-compat"; do
  # shellcheck disable=SC2086 # the words of $args are separate arguments
  cargo deb $args --no-build --profile "$PROFILE" $FAST --output "$OUT/" 2> >(grep -v -e 'dev profile is not supported' -e 'To enable debug symbols' >&2)
done
