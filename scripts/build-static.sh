#!/usr/bin/env bash
# Builds the programs that start once per job as static binaries (target
# x86_64-unknown-linux-musl) and prints the directory that holds them:
#   gsstepd   gsnoded's per-job helper
#   gsbatch   the submission command (workflow tools and submission loops run it per job)
#
#   scripts/build-static.sh [--release]
#
# The directory's commands/ holds a link to each static command (gsbatch), for a PATH that
# should find them before the glibc builds (the integration tests' commands).
#
# Why: a dynamically linked glibc program spends most of a millisecond before main() on a
# virtual machine (the loader, and glibc's start-up, which asks the CPU for its cache layout
# through CPUID instructions, each one a trap to the hypervisor); a static musl program
# starts in about a third of that (bench/RESULTS.md, "Per-job start-up"). Neither needs
# glibc: gsnoded resolves the job's user and groups through NSS and passes them in the job
# folder; gsched speaks munged's protocol itself (no libmunge to load); a name that musl's
# files-and-nscd lookup does not know (gsbatch --uid/--gid of an LDAP user) is asked of the
# system's getent. The other commands stay glibc builds: they read long listings, where
# glibc's malloc and memcpy are faster than musl's (squeue at 10,000 jobs: 24 ms against 55).
# The two static programs use dlmalloc instead of musl's malloc, which gave memory back to
# the kernel at almost every free (47 of a submission's 113 system calls).
# scripts/install.sh, the .deb, the local cluster and the integration tests use these builds;
# gsnoded finds gsstepd through GSCHED_STEPD, or as the gsstepd installed next to it.
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
  *) echo "scripts/build-static.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
esac
cd "$ROOT"
# rustup installs rust-toolchain.toml's targets with a new toolchain, not into one already
# installed: add it here when it is missing.
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$TARGET_TRIPLE"; then
  echo "build-static.sh: installing the Rust target $TARGET_TRIPLE (rustup target add)" >&2
  rustup target add "$TARGET_TRIPLE" >&2 ||
    { echo "build-static.sh: cannot install $TARGET_TRIPLE; run: rustup target add $TARGET_TRIPLE" >&2; exit 1; }
fi
cargo build -q "${ARGS[@]}" --target "$TARGET_TRIPLE" -p gsched-noded --bin gsstepd >&2
# gsbatch is linked at a fixed address (not position-independent): a static-pie program
# relocates its own data at every start, which writes, and so copies, each of its ~20 data
# pages (a third of a submission's page faults; bench/RESULTS.md, "Credential checks on the
# controller's thread"). Only the final link changes (the libraries are the same builds as
# gsstepd's); the heap, stack and mappings stay randomized. gsstepd, which starts jobs as
# root, stays position-independent.
cargo rustc -q "${ARGS[@]}" --target "$TARGET_TRIPLE" -p gsched-cli --bin gsbatch -- -C relocation-model=static >&2
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
OUT="$TARGET/$TARGET_TRIPLE/$PROFILE"
mkdir -p "$OUT/commands"
ln -sfn ../gsbatch "$OUT/commands/gsbatch"
echo "$OUT"
