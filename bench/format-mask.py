#!/usr/bin/env python3
"""Masks what legitimately differs between two runs of the same job set (ids, times, dates,
the scratch folder, session ids, loads), so that what is left of a diff between gsched's and
Slurm's outputs is their layout and value formats. Used by bench/format-diff.sh.

    format-mask.py --labels FILE --work DIR [--config] < raw > masked

--labels: lines "RAW_ID LABEL": every job id of the run (array tasks' own ids included) and
the label it is shown as; a label has the width of a four-digit id (both systems number from
FirstJobId=1000), so column widths stay those of the real output.
--config: `scontrol show config`: every value becomes <v>, keeping "Key<padding>= ".
Digits of times and durations become 9 (so "0:05" and "0:07" compare equal, while "05:00"
and "5:00" still differ).
"""
import argparse
import re
import sys

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# squeue -l / sinfo -l first line: "Thu Dec  3 13:14:05 2026"
CTIME = re.compile(r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}\b")
# [D-]H:MM[:SS] / M:SS, not inside a longer word or number
DURATION = re.compile(r"(?<![\w:.])(\d+-)?\d{1,2}(:\d\d){1,2}(?![\w:])")
ID = re.compile(r"(?<![\d.])\d{4,}(?![\d])")
VOLATILE = [
    (re.compile(r"(AllocNode:Sid=[^:\s]+:)\d+"), r"\1<sid>"),
    (re.compile(r"(CPULoad=)[\d.]+"), r"\1<load>"),
    (re.compile(r"(FreeMem=)\d+"), r"\1<mem>"),
    # the daemons' own version (gsched's gsnoded reports its crate version)
    (re.compile(r"\b(Version=)\S+"), r"\1<version>"),
]


def nines(m: re.Match) -> str:
    return re.sub(r"\d", "9", m.group(0))


def mask_line(line: str, labels: dict, work: str) -> str:
    if work:
        line = line.replace(work, "<work>")
    line = CTIME.sub("DAY MON DD HH:MM:SS YYYY", line)
    line = ISO.sub("YYYY-MM-DDTHH:MM:SS", line)
    for pat, rep in VOLATILE:
        line = pat.sub(rep, line)
    line = ID.sub(lambda m: labels.get(m.group(0), m.group(0)), line)
    line = DURATION.sub(nines, line)
    return line


def mask_config_line(line: str) -> str:
    m = re.match(r"^(\S+\s*= ?)(.*)$", line)
    if m:
        return m.group(1) + ("<v>" if m.group(2) else "")
    return line


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", required=True)
    ap.add_argument("--work", default="")
    ap.add_argument("--config", action="store_true")
    a = ap.parse_args()
    labels = {}
    with open(a.labels) as f:
        for row in f:
            parts = row.split()
            if len(parts) == 2:
                labels[parts[0]] = parts[1]
    for line in sys.stdin:
        line = line.rstrip("\n")
        if a.config:
            line = mask_config_line(line)
        line = mask_line(line, labels, a.work)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
