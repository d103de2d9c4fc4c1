#!/usr/bin/env python3
"""How many sharing-eligible pods of the Alibaba GPU v2023 trace one GPU-hour could serve at
best, whatever the scheduler: the ceiling behind docs/results.md section 6.

The pods asking for part of one GPU (num_gpu 1, gpu_milli < 1000) run at their trace times.
Whole GPUs cost the sum of their runtimes. Packed, at every instant the pods running need at
least max(ceil(sum of shares / capacity), number of pods asking for more than half the
capacity) GPUs (two such pods never fit on one GPU); integrated over time this is a lower
bound on the GPU-hours of any packing, even one that moves pods between GPUs at will, so
whole GPU-hours / that bound is the most jobs per GPU-hour packing can gain. The script
also packs the running pods afresh at every instant, first-fit decreasing (what free
migration would reach in practice), and reports the fluid figure (shares x time, no
fragmentation at all), which no packing of whole pods can reach.

Usage: bench/gpu-share-ceiling.py [POD_LIST_CSV] [--capacity MILLI]
  --capacity 1000 (default): shares are reservations (GpuOverSubscribe=1)
  --capacity 2000: shares may add up to twice a GPU (GpuOverSubscribe=2)
"""
import argparse
import collections
import csv
import math

ap = argparse.ArgumentParser()
ap.add_argument(
    "pods",
    nargs="?",
    default="../shared/traces/gpu/alibaba-gpu-v2023/openb_pod_list_default.csv",
)
ap.add_argument("--capacity", type=int, default=1000)
a = ap.parse_args()
cap = a.capacity

events = []
whole = 0
for p in csv.DictReader(open(a.pods)):
    m = int(p["gpu_milli"])
    if p["num_gpu"] != "1" or not 0 < m < 1000:
        continue
    if not p["scheduled_time"] or not p["deletion_time"]:
        continue
    s, e = int(p["scheduled_time"]), int(p["deletion_time"])
    if e <= s:
        continue
    events += [(s, 1, m), (e, -1, m)]
    whole += e - s
events.sort()


def ffd(items):
    bins = []
    for m in sorted(items, reverse=True):
        for i, b in enumerate(bins):
            if b + m <= cap:
                bins[i] += m
                break
        else:
            bins.append(m)
    return len(bins)


def lower(items):
    return max(math.ceil(sum(items) / cap), sum(1 for m in items if 2 * m > cap))


running = collections.Counter()
fluid = packed = bound = 0.0
last = None
i = 0
while i < len(events):
    t = events[i][0]
    if last is not None and running:
        items = list(running.elements())
        dt = t - last
        fluid += dt * sum(items) / cap
        packed += dt * ffd(items)
        bound += dt * lower(items)
    while i < len(events) and events[i][0] == t:
        _, k, m = events[i]
        running[m] += k
        if running[m] == 0:
            del running[m]
        i += 1
    last = t

h = 3600.0
print(f"capacity per GPU: {cap} milli-GPUs")
print(f"whole GPUs:                        {whole / h:9.0f} GPU-hours")
print(f"lower bound of any packing:        {bound / h:9.0f} GPU-hours, gain at most {whole / bound:.2f}x")
print(f"first-fit decreasing, repacked:    {packed / h:9.0f} GPU-hours, gain {whole / packed:.2f}x")
print(f"fluid (shares x time):             {fluid / h:9.0f} GPU-hours, gain {whole / fluid:.2f}x")
