#!/bin/sh
# Time-of-use runs of docs/results.md section 6 (release gssim: cargo build --release -p gsched-sim).
cd "$(dirname "$0")/.."
P=${PRICES:-../shared/traces/prices/epex-de-dayahead-hourly-2018-2023.csv.gz}; S=${SWF:-../shared/traces/swf}
run() { T=$1; shift; for aw in "" "--price-aware"; do echo "== $T $* $aw"; ./target/release/gssim --trace $S/$T.swf.gz --jobs 10000 "$@" --policy easy --prices $P --price-tz Europe/Berlin --price-start 2019-01-07 $aw --json | grep -E '"policy|"avg_wait|energy|short_avg|long_avg|utiliz' | tr -d '\n '; echo; done; }
# First with the trace's first submission at Monday midnight, then on the trace's own
# local clock (its weekday and time of day from the SWF header).
for clock in "" --price-local-time; do
  run SDSC-SP2-1998-4.2-cln $clock
  run HPC2N-2002-2.2-cln $clock
  run KTH-SP2-1996-2.1-cln $clock
  run CTC-SP2-1996-3.1-cln $clock
  run SDSC-SP2-1998-4.2-cln --nodes 256 --cpus-per-node 1 $clock
  run HPC2N-2002-2.2-cln --nodes 480 --cpus-per-node 1 $clock
done
