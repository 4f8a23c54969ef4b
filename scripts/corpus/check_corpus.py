#!/usr/bin/env python3
"""Checks doctor's attention view of real-program traces against how each
program was built (DIR/facts.json, from make_corpus.py --list), and doctor's
fused-time estimate for unfused attention against the fused backend's measured
time in the twin trace of the same program.

    scripts/corpus/check_corpus.py ATTNPROF DIR

Prints one line per trace (ok / FAIL and why), then the estimate table.
Exit 1 when any trace fails.
"""
import json
import os
import subprocess
import sys


def doctor(binary, path):
    out = subprocess.run([binary, "doctor", "--json", path], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)


def check(facts, report):
    """What is wrong with the report, by the facts (empty: nothing)."""
    wrong = []
    exp = facts["expected"]
    calls = {"forward": 0, "backward": 0}
    by_impl = exp.get("calls_by_implementation")  # a program whose calls run on more than one implementation
    seen = {}
    for a in report["attention"]:
        calls[a["pass"]] += a["calls"]
        seen.setdefault(a["implementation"], {"forward": 0, "backward": 0})[a["pass"]] += a["calls"]
        if by_impl is None and a["implementation"] != exp["implementation"]:
            wrong.append(f"{a['pass']} is {a['implementation']}, built as {exp['implementation']}")
        accepted = exp.get("precision", facts["dtype"])  # one precision, or the ones the trace may show
        if a["precision"] not in (accepted if isinstance(accepted, list) else [accepted]):
            wrong.append(f"{a['pass']} precision {a['precision']}, built in {facts['dtype']}")
    if exp["forward_calls"] is not None and calls["forward"] != exp["forward_calls"]:
        wrong.append(f"{calls['forward']} forward calls, built with {exp['forward_calls']}")
    if calls["backward"] != exp["backward_calls"]:
        wrong.append(f"{calls['backward']} backward calls, built with {exp['backward_calls']}")
    if by_impl is not None:
        for impl, want in by_impl.items():
            got = seen.get(impl, {"forward": 0, "backward": 0})
            if got != want:
                wrong.append(f"{impl} calls {got}, built with {want}")
        for impl in seen.keys() - by_impl.keys():
            wrong.append(f"{impl} calls {seen[impl]}, built with none")
    if "phases" in exp:  # generate() and serving programs: forward calls per phase, as built
        got = {"prefill": 0, "decode": 0, "mixed": 0}
        got.update({k: 0 for k in exp["phases"]})
        untold = 0
        for a in report["attention"]:
            if a["pass"] == "forward" and a.get("phase") in got:
                got[a["phase"]] += a["calls"]
            elif a["pass"] == "forward":
                untold += a["calls"]
        # An attnprof record trace has no shapes: where no kernel says its phase (a split-KV combine, a
        # serving engine's name), doctor leaves calls untold; a told phase must still be right.
        want = {k: exp["phases"].get(k, 0) for k in got}
        if facts["tracer"] == "attnprof record" and untold:
            if any(got[k] > want[k] for k in got):
                wrong.append(f"forward calls by phase {got} ({untold} untold), built with {exp['phases']}")
        elif got != want:
            wrong.append(f"forward calls by phase {got}, built with {exp['phases']}")
    if "decode_kv_len" in exp and facts["tracer"] == "torch.profiler":
        wrong += decode_bytes_wrong(facts, report)
    scopes = {(f["id"], f["scope"]) for f in report["findings"]}
    if exp["implementation"] == "fused":
        # attention-host names fused calls that held the CPU (a plan built for each new shape, as a cache
        # growing every forward makes cuDNN do), not the kernels: no blame on the implementation; kv-repeat
        # the K/V copies made for fused calls where the program repeats K/V; kv-cache-gather the gathers of a
        # paged cache made for them; unsplit-decode fused decode calls that paged SDPA runs on a CTA a head.
        blamed = sorted(i for i, s in scopes if s == "attention" and i != "attention-host"
                        and not (i == "kv-repeat" and repeats_kv(facts))
                        and not (i == "kv-cache-gather" and gathers_kv(facts))
                        and not (i == "unsplit-decode" and decodes_unsplit(facts)))
        if blamed:
            wrong.append(f"attention is fused but blamed: {blamed}")
    elif ("unfused-attention", "attention") not in scopes:
        wrong.append("no unfused-attention finding")
    return wrong


def repeats_kv(facts):
    """Whether transformers 5.17 copies K and V to every query head before a fused call (repeat_kv, which
    kv-repeat names): its SDPA path does where it passes SDPA a mask (use_gqa_in_sdpa: a static cache's
    decode forwards, padded batches), its paged SDPA always; with more than one K/V head (the copy of one
    is a view)."""
    sh, exp = facts["shape"], facts["expected"]
    masked = exp.get("kv_cache") in ("static", "paged") or facts.get("kind") == "padded"
    return 1 < sh["kv_heads"] < sh["q_heads"] and masked and facts["impl"] in ("sdpa", "paged-sdpa")


def gathers_kv(facts):
    """Whether transformers 5.17 gathers a paged cache into dense K/V before the calls that read it
    (PagedAttentionCache.update's index_select, which kv-cache-gather names): continuous batching's paged SDPA
    and eager attention, where the trace has the ops (torch.profiler)."""
    return facts["impl"] in ("paged-sdpa", "paged-eager") and facts["tracer"] == "torch.profiler"


def decodes_unsplit(facts):
    """Whether the program's decode calls run a few CTAs without splitting the keys (unsplit-decode):
    continuous batching's paged SDPA hands SDPA a decode forward's tokens, one a request, as one sequence under
    a mask, which its kernels run a CTA a query tile and head; where the facts count decode calls (16 packed
    queries or fewer, or any under attnprof record)."""
    return facts["impl"] == "paged-sdpa" and facts["expected"].get("phases", {}).get("decode", 0) > 0


def decode_bytes_wrong(facts, report):
    """A decode call's bytes against what its shape implies: q and the output once, K and V once per K/V
    head over the mean of the KV lengths the cache had (within 5%). transformers hands SDPA K and V repeated
    to the query heads (repeat_kv) where it passes a mask, as a static cache's decode forwards do."""
    sh, exp = facts["shape"], facts["expected"]
    elem = {"bf16": 2, "fp16": 2, "fp32": 4}[facts["dtype"]]
    # a static cache's decode and continuous batching's paged SDPA (kv_cache paged) pass a mask: K/V repeated
    kv_heads = sh["q_heads"] if exp.get("kv_cache") in ("static", "paged") else sh["kv_heads"]
    kv = sum(exp["decode_kv_len"]) / 2
    rows = exp.get("decode_q_len", 1)  # a packed forward's queries: one a request
    want = elem * sh["head_dim"] * (2 * sh["batch"] * sh["q_heads"] * rows + 2 * sh["batch"] * kv_heads * kv)
    wrong = []
    for a in report["attention"]:
        if a.get("phase") not in ("decode", "mixed"):  # mixed: packed decode forwards of many requests
            continue
        got = a.get("bytes_per_call")
        if a.get("shape") is None and a.get("graph_calls"):  # replays of a graph captured before the trace
            continue
        if got is None or abs(got - want) > 0.05 * want:
            wrong.append(f"decode bytes a call {got}, the shape implies {want:.0f}")
    return wrong


def twin_key(f):
    """Programs that differ only in attention: family, dtype, mode, tracer, kind and shape."""
    return (f["family"], f["dtype"], f["mode"], f["tracer"], f.get("kind"), json.dumps(f["shape"], sort_keys=True))


def main():
    binary, folder = sys.argv[1], sys.argv[2]
    facts = json.load(open(os.path.join(folder, "facts.json")))
    reports, failed = {}, 0
    for f in facts:
        path = os.path.join(folder, f["name"] + ".json.gz")
        if not os.path.exists(path):
            print(f"MISSING {f['name']}")
            failed += 1
            continue
        try:
            reports[f["name"]] = r = doctor(binary, path)
            wrong = check(f, r)
        except Exception as e:  # a crash or bad JSON is a failure of this trace, not of the run
            wrong = [f"doctor failed: {e}"]
        failed += bool(wrong)
        print(("ok   " if not wrong else "FAIL ") + f["name"] + ("" if not wrong else ": " + "; ".join(wrong)))
    # Estimate vs measured: the unfused program's fused estimate per call against the fused twin's time per
    # call (the same program but for attention), per pass and phase. A decode estimate more than 25% off
    # fails (issue 41's bound); the others are printed.
    print("\nfused-time estimate for unfused attention vs the fused backend measured in the twin trace")
    print(f"{'program':52} {'pass':8} {'phase':8} {'unfused us':>10} {'estimate':>9} {'measured':>9} {'est/meas':>8}"
          "  source")
    by_key = {}
    for f in facts:
        by_key.setdefault(twin_key(f), []).append(f)
    for group in by_key.values():
        fused = [f for f in group if f["expected"]["implementation"] == "fused" and f["name"] in reports]
        if not fused:
            continue
        measured = {(a["pass"], a.get("phase")): a["total_ms"] * 1e3 / a["calls"]
                    for a in reports[fused[0]["name"]]["attention"]}
        for f in group:
            if f["expected"]["implementation"] == "fused" or f["name"] not in reports:
                continue
            for a in reports[f["name"]]["attention"]:
                key = (a["pass"], a.get("phase"))
                if a["fused_estimate_total_ms"] is None or key not in measured:
                    continue
                est = a["fused_estimate_total_ms"] * 1e3 / a["calls"]
                ratio = est / measured[key]
                src = "shape" if a["shape"] else "matmuls"
                if a["precision"] == "fp32":
                    src += " (modelled in bf16: not comparable with the fp32 twin)"
                off = a.get("phase") == "decode" and abs(ratio - 1) > 0.25
                if off:
                    src += "  FAIL: a decode estimate more than 25% off"
                    failed += 1
                print(f"{f['name']:52} {a['pass']:8} {a.get('phase') or '-':8} {a['total_ms'] * 1e3 / a['calls']:10.1f} "
                      f"{est:9.1f} {measured[key]:9.1f} {ratio:8.2f}  {src}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
