#!/usr/bin/env bash
# Installs gsched's binaries, and optionally Slurm's command names pointing at them, so that
# existing job scripts and tools (submitit, snakemake, dask-jobqueue, Parsl...) run unchanged.
#
#   scripts/install.sh [--prefix DIR] [--slurm-names] [--force] [--from DIR] [--no-build]
#
#   --prefix DIR     install under DIR (default /usr/local): DIR/bin, DIR/sbin, DIR/share/man
#   --slurm-names    also DIR/bin/sbatch -> gsbatch, squeue, scancel, sinfo, scontrol, sacct,
#                    sacctmgr, sprio, seff, srun, sstat, sshare
#   --force          replace existing files of those names (a real Slurm installed there)
#   --from DIR       take the binaries from DIR (default: target/release, built first)
#   --no-build       do not run `cargo build --release --bins`
#
# The daemons go to DIR/sbin (gsctld, gsnoded, and gsstepd next to gsnoded, which starts it).
# gsstepd and gsbatch, which start once per job, are the static builds of
# scripts/build-static.sh when they were built for the same profile as DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX=/usr/local
NAMES=0
FORCE=0
FROM=""
BUILD=1

die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --prefix) [[ $# -ge 2 ]] || die "--prefix needs a directory"; PREFIX="$2"; shift 2 ;;
    --prefix=*) PREFIX="${1#*=}"; shift ;;
    --slurm-names) NAMES=1; shift ;;
    --force) FORCE=1; shift ;;
    --from) [[ $# -ge 2 ]] || die "--from needs a directory"; FROM="$2"; BUILD=0; shift 2 ;;
    --from=*) FROM="${1#*=}"; BUILD=0; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

if [[ -z $FROM ]]; then
  TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
  case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
  FROM="$TARGET/release"
fi
STATIC_DIR=""
if [[ $BUILD == 1 ]]; then
  (cd "$ROOT" && cargo build --release --bins)
  STATIC_DIR=$("$ROOT/scripts/build-static.sh" --release)
else
  # The static builds of the same profile, when there are (target/<triple>/<profile>).
  s="$(dirname "$FROM")/x86_64-unknown-linux-musl/$(basename "$FROM")"
  if [[ -d $s ]]; then STATIC_DIR=$s; fi
fi
STATIC=(gsstepd gsbatch)
# static_or NAME: the static build of NAME when it is one of STATIC and built, else FROM's.
static_or() {
  if [[ -n $STATIC_DIR && " ${STATIC[*]} " == *" $1 "* && -x $STATIC_DIR/$1 ]]; then
    echo "$STATIC_DIR/$1"
  else
    echo "$FROM/$1"
  fi
}

DAEMONS=(gsctld gsnoded gsstepd)
COMMANDS=(gsbatch gsqueue gscancel gsinfo gscontrol gsacct gsacctmgr gsprio gseff gsrun gsstat gsshare)
# Slurm's name for each command, in the order of COMMANDS.
SLURM=(sbatch squeue scancel sinfo scontrol sacct sacctmgr sprio seff srun sstat sshare)
# Tools without a Slurm counterpart.
TOOLS=(gssim)

for b in "${DAEMONS[@]}" "${COMMANDS[@]}" "${TOOLS[@]}"; do
  [[ -x "$FROM/$b" ]] || die "$FROM/$b is missing: build with 'cargo build --release --bins' or pass --from"
done

install -d "$PREFIX/bin" "$PREFIX/sbin" "$PREFIX/share/man/man1" "$PREFIX/share/man/man5" "$PREFIX/share/man/man7" "$PREFIX/share/man/man8"
# gsstepd and gsbatch start once per job: their static builds when there are.
for b in "${DAEMONS[@]}"; do install -m 0755 "$(static_or "$b")" "$PREFIX/sbin/$b"; done
for b in "${COMMANDS[@]}" "${TOOLS[@]}"; do install -m 0755 "$(static_or "$b")" "$PREFIX/bin/$b"; done
for s in 1 5 7 8; do install -m 0644 "$ROOT"/man/man$s/*.$s "$PREFIX/share/man/man$s/"; done
# Shell completions, where each shell looks for them under the prefix.
BASHC="$PREFIX/share/bash-completion/completions"
ZSHC="$PREFIX/share/zsh/vendor-completions"
FISHC="$PREFIX/share/fish/vendor_completions.d"
install -d "$BASHC" "$ZSHC" "$FISHC"
for b in "${COMMANDS[@]}"; do
  install -m 0644 "$ROOT/packaging/completions/bash/$b" "$BASHC/$b"
  install -m 0644 "$ROOT/packaging/completions/zsh/_$b" "$ZSHC/_$b"
  install -m 0644 "$ROOT/packaging/completions/fish/$b.fish" "$FISHC/$b.fish"
done

if [[ $NAMES == 1 ]]; then
  for i in "${!COMMANDS[@]}"; do
    link="$PREFIX/bin/${SLURM[$i]}"
    if [[ -e $link || -L $link ]]; then
      if [[ -L $link && "$(readlink "$link")" == "${COMMANDS[$i]}" ]]; then
        continue
      fi
      [[ $FORCE == 1 ]] || die "$link exists (a real Slurm?); pass --force to replace it"
      rm -f "$link"
    fi
    ln -s "${COMMANDS[$i]}" "$link"
    # bash and fish load a completion by the command's name; zsh's #compdef names both.
    ln -sfn "${COMMANDS[$i]}" "$BASHC/${SLURM[$i]}"
    ln -sfn "${COMMANDS[$i]}.fish" "$FISHC/${SLURM[$i]}.fish"
  done
fi
printf 'installed gsched into %s%s\n' "$PREFIX" "$([[ $NAMES == 1 ]] && echo ' with the Slurm command names')"
