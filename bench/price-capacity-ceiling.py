#!/usr/bin/env python3
"""The most a time-of-use policy could save on the deferrable jobs of an SWF trace when the
cluster's capacity counts: a fluid relaxation solved as a linear program (docs/results.md §7).

The jobs that are not deferrable (requested time at most --long, 2 h) stay where the trace's
own machine ran them (submit + logged wait). Each deferrable job must do its CPU-seconds
(procs x logged runtime) at most `procs` CPUs at a time, anywhere between its submission and
submission + --max-deferral + its runtime, in the CPUs the others leave free; the program
minimises the energy price of that work. The job may pause and resume, and a job's CPUs need
not be free all at once, so no real schedule does better: the result is a ceiling on the
saving against where the trace ran the deferrable jobs. With --no-capacity the CPUs are
unlimited (the ceiling of bench/price-ceiling.py, but pausable).

Prices: the EPEX day-ahead file, Europe/Berlin hours, the trace's first submission at
--start (default Monday 2019-01-07 00:00, as gssim --price-start without --price-local-time).

Usage: bench/price-capacity-ceiling.py TRACE.swf.gz [--jobs 10000] [--cpus N]
        [--max-deferral-hours 24] [--no-capacity]
Needs scipy (pip install scipy).
"""
import argparse
import datetime
import gzip
import math
from zoneinfo import ZoneInfo

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--jobs", type=int, default=10000)
ap.add_argument("--cpus", type=int, help="machine size (default: the header's MaxProcs)")
ap.add_argument("--max-deferral-hours", type=float, default=24)
ap.add_argument("--long", type=int, default=7200, help="deferrable above this requested time, s")
ap.add_argument("--no-capacity", action="store_true")
ap.add_argument("--start", default="2019-01-07")
ap.add_argument(
    "--prices", default="../shared/traces/prices/epex-de-dayahead-hourly-2018-2023.csv.gz"
)
a = ap.parse_args()

tz = ZoneInfo("Europe/Berlin")
price = {}
with gzip.open(a.prices, "rt") as f:
    next(f)
    for line in f:
        d, h, p = line.split(",")[:3]
        y, m, dd = map(int, d.split("-"))
        t = datetime.datetime(y, m, dd, int(h) - 1, tzinfo=tz).timestamp()
        price[int(t)] = float(p)
y, m, d = map(int, a.start.split("-"))
origin = int(datetime.datetime(y, m, d, tzinfo=tz).timestamp())

cpus = a.cpus
jobs = []
opener = gzip.open if a.trace.endswith(".gz") else open
with opener(a.trace, "rt") as f:
    for line in f:
        if line.startswith(";"):
            if "MaxProcs:" in line and cpus is None:
                cpus = int(line.split("MaxProcs:")[1].split()[0])
            continue
        x = line.split()
        if not x:
            continue
        sub, wait, run, procs, req = int(x[1]), int(x[2]), int(x[3]), int(x[4]), int(x[8])
        if procs <= 0:
            procs = int(x[7])
        if run <= 0 or procs <= 0:
            continue
        jobs.append((sub, max(wait, 0), run, procs, req))
        if len(jobs) >= a.jobs:
            break
first = jobs[0][0]
H = 3600
D = int(a.max_deferral_hours * H)


def hour_of(t):  # slot index of absolute time t (slots start at origin)
    return (t - origin) // H


def spread(start, length, procs, load):
    """Adds the CPU-seconds of a run to the per-slot load."""
    t, end = start, start + length
    while t < end:
        k = hour_of(t)
        e = min(end, origin + (k + 1) * H)
        load[k] = load.get(k, 0) + procs * (e - t)
        t = e


def slot_price(k):
    return price.get(origin + k * H, 0.0)


fixed = {}
deferrable = []
base = 0.0
for sub, wait, run, procs, req in jobs:
    s0 = origin + sub - first
    if req > a.long:
        deferrable.append((s0, wait, run, procs))
        load = {}
        spread(s0 + wait, run, procs, load)
        base += sum(slot_price(k) * v for k, v in load.items())
    else:
        spread(s0 + wait, run, procs, fixed)

# Variables: x[j, k] for each deferrable job j and slot k in its window.
cols_c, rows_eq, cols_eq, rows_cap, cols_cap, ub = [], [], [], [], [], []
b_eq = []
slots = set()
n = 0
for j, (s0, wait, run, procs) in enumerate(deferrable):
    # By submission + MaxDeferral, or by where the trace's machine started it if later (a
    # full machine held it longer than any deferral would).
    latest = s0 + max(D, wait)
    lo, hi = hour_of(s0), hour_of(latest + run - 1)
    for k in range(lo, hi + 1):
        # Within the first and last slot only the part after submission / before the deadline.
        a_t = max(s0, origin + k * H)
        b_t = min(latest + run, origin + (k + 1) * H)
        if b_t <= a_t:
            continue
        cols_c.append(slot_price(k))
        ub.append(procs * (b_t - a_t))
        rows_eq.append(j)
        cols_eq.append(n)
        rows_cap.append(k)
        cols_cap.append(n)
        slots.add(k)
        n += 1
    b_eq.append(procs * run)

c = np.array(cols_c)
A_eq = coo_matrix((np.ones(n), (rows_eq, cols_eq)), shape=(len(deferrable), n))
bounds = list(zip([0.0] * n, ub))
kw = {}
if not a.no_capacity:
    order = sorted(slots)
    idx = {k: i for i, k in enumerate(order)}
    A_ub = coo_matrix(
        (np.ones(n), ([idx[k] for k in rows_cap], cols_cap)), shape=(len(order), n)
    )
    b_ub = np.array([max(0.0, cpus * H - fixed.get(k, 0)) for k in order])
    kw = {"A_ub": A_ub.tocsr(), "b_ub": b_ub}
r = linprog(c, A_eq=A_eq.tocsr(), b_eq=np.array(b_eq, dtype=float), bounds=bounds, method="highs", **kw)
if r.status != 0:
    raise SystemExit(f"linear program: {r.message}")
best = r.fun
print(
    f"{a.trace.split('/')[-1]}: {len(jobs)} jobs, {len(deferrable)} deferrable, {cpus} CPUs, "
    f"MaxDeferral {a.max_deferral_hours:g} h, {'no capacity limit' if a.no_capacity else 'capacity counted'}: "
    f"saving at most {(1 - best / base) * 100:.1f} % of the deferrable jobs' cost where the trace ran them"
)
