#!/usr/bin/env python3
"""Checks `attnprof doctor --replay` on real programs made on this GPU (make_corpus.py --set replay):

  scripts/corpus/replay_check.py ATTNPROF DIR

For each trace in DIR/facts.json:
  shape   the replayed shape is the one the program was built with (record_shapes), or, for an
          `attnprof record` trace, the kernels' batch x heads and lengths are (the rest given by --shape);
  own     the replay of what the trace ran (math, the eager stand-in, cuDNN) is within 15% of its
          traced time per call; for a training program, its backward's replay too (where the bench has one);
  saving  for eager and SDPA-math programs, the saving doctor reports for the fused backend the twin
          program ran (same family, dtype and mode, attn_implementation="sdpa") is within 15% of the
          saving measured between the two traces; for a training program, forward and backward together
          (one forward call and its backward).
Works on the replay set (make_corpus.py --set replay) and on the step twins (tests/data/steps,
make_steps.py: the twins are checked, the idle programs left out).
Prints one line per trace and exits 1 when any check fails. Expectations come from the facts, never
from doctor's output.
"""
import json
import os
import subprocess
import sys

TOLERANCE = 0.15


def replay(binary, path, extra=()):
    out = subprocess.run([binary, "doctor", "--replay", "--json", *extra, path], capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)


def has_shapes(f):
    """record_shapes on: torch.profiler traces unless the program turned it off."""
    return f["tracer"] == "torch.profiler" and f.get("record_shapes", True)


def main():
    binary, folder = sys.argv[1], sys.argv[2]
    facts = [f for f in json.load(open(os.path.join(folder, "facts.json"))) if f.get("kind", "twin") == "twin"]
    for f in facts:  # the step twins say which backend was forced as backend_forced
        f.setdefault("backend", f.get("backend_forced"))
    docs, failed = {}, 0
    for f in facts:
        path = os.path.join(folder, f["name"] + ".json.gz")
        s = f["shape"]
        extra = []
        if not has_shapes(f):
            extra = ["--shape", f"{s['batch']},{s['q_heads']}/{s['kv_heads']},{s['q_len']},{s['head_dim']}",
                     "--causal" if s["causal"] else "--no-causal"]
        try:
            docs[f["name"]] = replay(binary, path, extra)
        except Exception as e:  # one trace failing must not lose the others
            print(f"FAIL {f['name']}: doctor --replay failed: {e}")
            failed += 1
    print(f"{'program':34} {'shape':5} {'traced':>8} {'own':>8} {'own/tr':>6} {'bwd/tr':>6} {'fix':>6} "
          f"{'saving':>8} {'twin':>8} {'sav/twin':>8}  verdict")
    for f in facts:
        d = docs.get(f["name"])
        if d is None:
            continue
        wrong = []
        r = d["replay"]
        if r["not_run"]:
            wrong.append("not run: " + r["not_run"])
        shapes = r["shapes"]
        if len(shapes) != 1:
            wrong.append(f"{len(shapes)} shapes, built with one")
            print(f"FAIL {f['name']}: " + "; ".join(wrong))
            failed += 1
            continue
        sh, want = shapes[0], f["shape"]
        # Shape: record_shapes gives it all; eager repeats K and V to every query head first.
        if has_shapes(f):
            kv = want["kv_heads"] if f["impl"] == "sdpa" else want["q_heads"]
            got = {k: sh.get(k) for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim", "causal")}
            exp = dict(want, kv_heads=kv)
            if got != exp:
                wrong.append(f"shape {got}, built {exp}")
        else:
            fwd = [a for a in d["attention"] if a["pass"] == "forward"]
            ks = fwd[0]["shape"] if fwd else None
            if f["expected"]["implementation"] != "fused" and (
                    not ks or ks.get("batch_x_heads") != want["batch"] * want["q_heads"] or ks["q_len"] != want["q_len"]
                    or ks["kv_len"] != want["kv_len"]):
                wrong.append(f"kernels' shape {ks}, built B x H {want['batch'] * want['q_heads']} S {want['q_len']}")
        rows = {w["implementation"]: w for w in sh["rows"]}
        own = next((w for w in sh["rows"] if w["own"]), None)
        ratio = sh["own_vs_traced"]
        if own is not None and ratio is None:
            wrong.append(f"stand-in {own['implementation']} did not run: {own['not_run']}")
        elif ratio is not None and abs(ratio - 1) > TOLERANCE:
            wrong.append(f"own replay {ratio:.2f}x the traced time")
        training = sh.get("backward_calls", 0) > 0
        if f["mode"] == "training" and f["tracer"] == "torch.profiler" and not training:
            wrong.append("a training program, no backward calls paired with its forwards")
        bratio = sh.get("own_backward_vs_traced")
        if training and own is not None and own["implementation"] in ("eager", "eager-fp32-softmax", "cudnn"):
            if bratio is None:
                wrong.append(f"backward stand-in {own['implementation']} did not run: {own.get('backward_not_run')}")
            elif abs(bratio - 1) > TOLERANCE:
                wrong.append(f"own backward replay {bratio:.2f}x the traced time")
        # Saving vs the fused twin's trace.
        fix = saving = twin_saving = None
        # An fp32 program's fused twin ran fp32 (memory-efficient); the replay's fix is bf16: not comparable.
        if f["expected"]["implementation"] != "fused" and f["tracer"] == "torch.profiler" and f["dtype"] != "fp32":
            twin = next((t for t in facts if t["family"] == f["family"] and t["dtype"] == f["dtype"]
                         and t["mode"] == f["mode"] and t["tracer"] == f["tracer"] and t["impl"] == "sdpa"
                         and t["backend"] is None), None)
            td = docs.get(twin["name"]) if twin else None
            if td and td["replay"]["shapes"]:
                tsh = td["replay"]["shapes"][0]
                fix = "cudnn" if "cuDNN" in tsh["implementations"] else "fused"
                saving = rows.get(fix, {}).get("saving_ms_per_call")
                twin_saving = sh["traced_ms_per_call"] - tsh["traced_ms_per_call"]
                if training:  # one forward call and its backward
                    bwd = rows.get(fix, {}).get("backward_saving_ms_per_call")
                    saving = None if saving is None or bwd is None else saving + bwd
                    twin_saving += sh["traced_backward_ms_per_call"] - tsh.get("traced_backward_ms_per_call", 0)
                if saving is None:
                    wrong.append(f"no {fix} saving: {rows.get(fix, {}).get('not_run')}")
                elif twin_saving <= 0 or abs(saving / twin_saving - 1) > TOLERANCE:
                    wrong.append(f"saving {saving:.4f} ms vs {twin_saving:.4f} between the traces")
            else:
                wrong.append("no fused twin trace")
        failed += bool(wrong)
        fmt = lambda v, p=3: "-" if v is None else f"{v:.{p}f}"
        print(f"{f['name']:34} {'ok' if not [w for w in wrong if 'shape' in w] else 'BAD':5} "
              f"{sh['traced_ms_per_call']:8.4f} {fmt(own and own['ms_per_call'], 4):>8} {fmt(ratio, 2):>6} "
              f"{fmt(bratio, 2):>6} "
              f"{fix or '-':>6} {fmt(saving, 4):>8} {fmt(twin_saving, 4):>8} "
              f"{fmt(saving / twin_saving if saving and twin_saving else None, 2):>8}  "
              + ("ok" if not wrong else "FAIL: " + "; ".join(wrong)))
    print(f"\n{len(facts) - failed} of {len(facts)} traces pass (tolerance {TOLERANCE:.0%})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
