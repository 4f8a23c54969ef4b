#!/usr/bin/env python3
"""Re-saves a trace the way users do: json.load, then json.dump on one line
(--layout oneline, json.dump's default) or indented (--layout indent, indent=2).
For reader benchmarks on traces as users have them.

    scripts/dev/relayout_trace.py IN.json OUT.json --layout oneline|indent
"""
import argparse
import json

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("--layout", choices=["oneline", "indent"], required=True)
a = ap.parse_args()
with open(a.src) as f:
    trace = json.load(f)
with open(a.dst, "w") as f:
    json.dump(trace, f, indent=2 if a.layout == "indent" else None)
