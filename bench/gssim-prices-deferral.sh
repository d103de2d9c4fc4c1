#!/bin/sh
# Time-of-use: how the saving on the deferrable part moves with MaxDeferral and
# MinDeferralSaving, on each trace's own machine and on twice its CPUs (docs/results.md §7).
# Release gssim: cargo build --release -p gsched-sim. Prints one line per run:
# TRACE CPUS MAXDEFERRAL MINSAVING deferrable_cost_unaware deferrable_cost_aware change short_wait_unaware short_wait_aware long_wait_aware util
cd "$(dirname "$0")/.."
P=${PRICES:-../shared/traces/prices/epex-de-dayahead-hourly-2018-2023.csv.gz}; S=${SWF:-../shared/traces/swf}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
field() { python3 -c 'import json,sys; r=json.load(sys.stdin); r=r[0] if isinstance(r, list) else r; print(*(r[k] for k in sys.argv[1:]))' "$@"; }
sim() { ./target/release/gssim --trace "$S/$1.swf.gz" --jobs 10000 --config "$2" --policy easy \
  --prices "$P" --price-tz Europe/Berlin --price-start 2019-01-07 --price-local-time $3 --json; }
for spec in SDSC-SP2-1998-4.2-cln:128 HPC2N-2002-2.2-cln:240 KTH-SP2-1996-2.1-cln:100 CTC-SP2-1996-3.1-cln:338; do
  trace=${spec%%:*}; own=${spec##*:}
  for cpus in "$own" $((own * 2)); do
    base="$T/base.conf"
    printf 'SlurmctldHost=localhost\nNodeName=c[1-%s] CPUs=1 RealMemory=1000\nPartitionName=p Nodes=ALL Default=YES MaxTime=INFINITE\n' "$cpus" > "$base"
    set -- $(sim "$trace" "$base" "" | field deferrable_energy_cost short_avg_wait_s)
    ucost=$1; ushort=$2
    for md in 1 2 3; do
      for ms in 0.05 0.01; do
        c="$T/c.conf"; cp "$base" "$c"; printf 'MaxDeferral=%s-00:00:00\nMinDeferralSaving=%s\n' "$md" "$ms" >> "$c"
        set -- $(sim "$trace" "$c" --price-aware | field deferrable_energy_cost short_avg_wait_s long_avg_wait_s utilization)
        echo "$trace $cpus ${md}d $ms $ucost $1 $(awk -v a="$ucost" -v b="$1" 'BEGIN { printf "%+.1f%%", (b / a - 1) * 100 }') $ushort $2 $3 $4"
      done
    done
  done
done
