#!/usr/bin/env python3
"""Builds a large Kineto trace from the real H200 traces, for reader benchmarks.

Repeats the traceEvents of each input trace with timestamps shifted past the
previous copy and correlation / External ids renumbered, so every copy is a
valid, distinct set of forwards. Streams its output: memory stays small.

--layout kineto (the default) keeps each event's text as PyTorch wrote it
(Kineto puts an event on several lines) and changes only the numbers;
--layout compact writes one event per line (as json.dumps, and as attnprof's
own writer does).

    scripts/dev/make_big_trace.py OUT.json --mb 600 [--layout kineto|compact] [TRACE ...]
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [os.path.join(HERE, "..", "..", "examples", "traces", n)
           for n in ("sdpa_math.json", "manual.json", "sdpa_flash.json", "sdpa_cudnn.json", "sdpa_efficient.json")]


def lowest_ids(events):
    """Smallest correlation (and flow) id and smallest External id of a source."""
    low = {"corr": [], "ext": []}
    for e in events:
        if isinstance(e.get("id"), int):
            low["corr"].append(e["id"])
        a = e.get("args")
        if isinstance(a, dict):
            for key, counter in (("correlation", "corr"), ("External id", "ext")):
                if isinstance(a.get(key), int):
                    low[counter].append(a[key])
    return {k: min(v, default=0) for k, v in low.items()}


def raw_events(path):
    """Each traceEvents element of a trace file as (parsed, text as written)."""
    text = open(path).read()
    at = text.index("[", text.index('"traceEvents"'))
    decoder = json.JSONDecoder()
    pos, out = at + 1, []
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return out
        obj, end = decoder.raw_decode(text, pos)
        out.append((obj, text[pos:end]))
        pos = end


def with_numbers(raw, new):
    """`raw`, an event's text, with its ts, id, correlation and External id
    values set to those of `new` (its renumbered copy)."""
    def sub(key, value, text):
        return re.sub(r'("%s":\s*)-?[0-9.eE+]+' % re.escape(key), lambda m: m.group(1) + value, text, count=1)
    if "ts" in new:
        raw = sub("ts", f'{new["ts"]:.3f}', raw)
    if isinstance(new.get("id"), int):
        raw = sub("id", str(new["id"]), raw)
    for key in ("correlation", "External id"):
        if isinstance(new.get("args"), dict) and isinstance(new["args"].get(key), int):
            raw = sub(key, str(new["args"][key]), raw)
    return raw


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=600.0, help="target size in MB (default 600)")
    ap.add_argument("--layout", choices=("kineto", "compact"), default="kineto",
                    help="kineto: events as PyTorch wrote them (several lines each); compact: one per line")
    ap.add_argument("traces", nargs="*", default=DEFAULT)
    args = ap.parse_args()

    raws = [raw_events(p) for p in args.traces]
    events = [[obj for obj, _ in r] for r in raws]
    head = {k: v for k, v in json.load(open(args.traces[0])).items() if k != "traceEvents"}
    target = int(args.mb * 1e6)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as out:
        out.write("{\n")
        for k, v in head.items():
            out.write(f'  {json.dumps(k)}: {json.dumps(v)},\n')
        out.write('  "traceEvents": [\n')
        written, copy, first = 0, 0, True
        ts_shift = 0.0
        shift = {"corr": 0, "ext": 0}
        while written < target:
            src = events[copy % len(events)]
            src_raw = raws[copy % len(events)]
            span_end, top = 0.0, {"corr": 0, "ext": 0}

            def renumber(value, counter):
                top[counter] = max(top[counter], value + shift[counter])
                return value + shift[counter]

            for n, e in enumerate(src):
                e = dict(e)
                if "ts" in e:
                    e["ts"] = round(e["ts"] + ts_shift, 3)
                    span_end = max(span_end, e["ts"] + e.get("dur", 0))
                if "id" in e and isinstance(e["id"], int):
                    e["id"] = renumber(e["id"], "corr")  # flow ids are correlation ids
                a = e.get("args")
                if isinstance(a, dict):
                    a = dict(a)
                    for key, counter in (("correlation", "corr"), ("External id", "ext")):
                        if isinstance(a.get(key), int):
                            a[key] = renumber(a[key], counter)
                    e["args"] = a
                if e.get("ph") == "M" and copy > 0:
                    continue
                if args.layout == "kineto":
                    text = with_numbers(src_raw[n][1], e)
                else:
                    text = json.dumps(e)
                line = ("" if first else ",\n") + "  " + text
                first = False
                out.write(line)
                written += len(line)
            # The next copy starts 100 us after this one ends and numbers its
            # correlation and External ids on from this one's: time runs forward
            # and ids stay dense, as in one long real trace (each source has its
            # own clock and id bases).
            nxt = events[(copy + 1) % len(events)]
            ts_shift = span_end + 100.0 - min(x["ts"] for x in nxt if "ts" in x)
            for counter, low in lowest_ids(nxt).items():
                shift[counter] = top[counter] + 1 - low
            copy += 1
        out.write("\n  ]\n}\n")
    os.replace(tmp, args.out)
    print(f"{args.out}: {os.path.getsize(args.out) / 1e6:.0f} MB, {copy} trace copies", file=sys.stderr)


if __name__ == "__main__":
    main()
