#!/usr/bin/env python3
"""Makes N rank traces of about SIZE MB each from one real rank trace, for `attnprof doctor DIR`'s scale
benchmark: the trace's events repeated (each copy shifted past the last, so a copy is more steps of the
same program), distributedInfo set to rank i of N, one event per line as Kineto writes them.

    scripts/dev/make_rank_traces.py tests/data/ranks/ddp_llama_rank0.json.gz 64 100 /tmp/ranks64
"""
import argparse
import gzip
import json
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("ranks", type=int)
    ap.add_argument("size_mb", type=float)
    ap.add_argument("out")
    a = ap.parse_args()
    opener = gzip.open if a.source.endswith(".gz") else open
    with opener(a.source, "rt") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    timed = [e for e in events if "ts" in e]
    span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - min(float(e["ts"]) for e in timed)
    lines = [json.dumps(e, separators=(",", ":")) for e in events]
    per_copy = sum(len(x) + 2 for x in lines)
    copies = max(1, int(a.size_mb * 1e6 / per_copy))
    body = []
    for c in range(copies):
        shift = c * (span + 1000.0)
        for e in events:
            if c and e.get("ph") == "M":
                continue  # process and thread names once
            if c and "ts" in e:
                e = dict(e, ts=float(e["ts"]) + shift)
                if "args" in e and "correlation" in e["args"]:
                    e["args"] = dict(e["args"], correlation=e["args"]["correlation"] + c * 10_000_000)
                if "id" in e and e.get("ph") in ("s", "f"):
                    e["id"] = e["id"] + c * 10_000_000
                body.append(json.dumps(e, separators=(",", ":")))
            elif not c:
                body.append(json.dumps(e, separators=(",", ":")))
    text = ",\n  ".join(body)
    os.makedirs(a.out, exist_ok=True)
    for r in range(a.ranks):
        meta = dict(doc)
        meta["distributedInfo"] = dict(doc.get("distributedInfo", {}), rank=r, world_size=a.ranks)
        head = json.dumps(meta, separators=(",", ":"))[:-1]
        with open(os.path.join(a.out, f"job_rank{r}.json"), "w") as f:
            f.write(head + ',\n"traceEvents": [\n  ' + text + "\n]}\n")
    print(f"{a.ranks} traces of {os.path.getsize(os.path.join(a.out, 'job_rank0.json')) / 1e6:.0f} MB "
          f"({copies} copies of {a.source}'s events) in {a.out}")


if __name__ == "__main__":
    main()
