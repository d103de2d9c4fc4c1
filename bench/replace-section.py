#!/usr/bin/env python3
"""replace-section.py OUT NEW HEADING: puts the text of file NEW in place of OUT's section
that starts with the line HEADING (up to the next top-level "# " heading), or appends it.
The benchmark scripts share bench/RESULTS.md, each owning one section."""
import sys

out, new_path, head = sys.argv[1], sys.argv[2], sys.argv[3]
new = open(new_path).read().rstrip("\n") + "\n"
try:
    lines = open(out).read().splitlines(keepends=True)
except FileNotFoundError:
    lines = []
start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == head), None)
if start is None:
    text = "".join(lines).rstrip("\n") + ("\n\n" if lines else "") + new
else:
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("# ")), len(lines))
    rest = "".join(lines[end:])
    text = "".join(lines[:start]) + new + ("\n" + rest if rest else "")
with open(out + ".new", "w") as f:
    f.write(text)
