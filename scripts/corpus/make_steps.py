#!/usr/bin/env python3
"""Whole-step traces for doctor's step-time model (issue 36): programs whose wall-clock step
time is measured while they are traced, so a predicted change of step time can be checked.

Twins differ in attention alone: Hugging Face Llama (random weights, make_corpus.py's
build_model and make_step) with eager, SDPA forced to math, and SDPA left to pick its fused
backend, bf16, inference and a training step (AdamW), in a CPU/launch-bound regime ("small",
make_corpus's Llama shape) and a GPU-bound one ("large"); the small inference twins with and
without record_shapes; GPT-2 training, eager against SDPA; the small Llama twins again under
`attnprof record` with an NVTX range "step" per iteration. Beside them, small programs each
idle the GPU for one known cause: launches, CPU work, host syncs, pageable and pinned host-to-
device copies, a gloo all-reduce between two ranks on one GPU, and a GPU-bound control.

Every program runs WAIT + WARMUP + ACTIVE iterations, traced by a torch.profiler schedule
(ProfilerStep#3..#10) or by `attnprof record --capture-range nvtx:step --steps 3:10`. Its facts
come from how it was built, never from attnprof; the wall clock is measured around the active
steps (time.perf_counter, torch.cuda.synchronize only at the end of the last warm-up
iteration and at the end of the last active one, inside it), traced and, first, in the same
process untraced.

  make_steps.py --list [--tracer torch.profiler|attnprof record]   the programs and their facts (JSON)
  make_steps.py --out DIR [--only NAME,...] [--rounds R]
                                                  every torch.profiler program: DIR/NAME.json.gz + NAME.timing.json;
                                                  with R > 1 each twin group runs in one process, its members
                                                  in turn, R rounds (round r > 0: NAME.round<r>.json.gz)
  make_steps.py --run NAME --out DIR              one program with NVTX step ranges (under attnprof record)
  make_steps.py --facts DIR                       facts.json: the facts with each program's measured times
  make_steps.py --summary DIR                     per trace: steps, median step span, GPU busy per step
                                                  (DIR/facts.json's programs where it has one, e.g. tests/data/steps)
  make_steps.py --pack DIR DEST                   DIR's traces and facts in tars of at most 15 MiB

Twins measured in separate processes differ by more than the fix is worth when the step is small:
the same CPU ops took 1.7x as long in one process as in its twin (another core, another neighbour on
the host). --rounds R builds the members of a twin group in one process and traces them in turn, R
times, the order rotated each round; scripts/dev/step_twins.py then pairs the twins round by round and
takes the median of the paired changes.

On the GPU machine: scripts/corpus/gpu_steps.sh does all of it in one call.
"""
import argparse
import bisect
import contextlib
import gc
import gzip
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus as corpus  # noqa: E402  (build_model, make_step, backend_context, MODELS, LAYERS)

WAIT, WARMUP, ACTIVE = 1, 2, 8
TOTAL = WAIT + WARMUP + ACTIVE
FIRST = WAIT + WARMUP  # the first active iteration (ProfilerStep#3, the 4th NVTX "step")

# model -> (family, regime, (batch, seq, heads, kv_heads, head_dim, causal), layers)
REGIMES = {
    "llama-small": ("llama", "small", corpus.MODELS["llama"], corpus.LAYERS),  # CPU/launch-bound: tiny kernels
    "llama-large": ("llama", "large", (4, 2048, 16, 4, 128, True), 4),  # GPU-bound: hidden 2048, 8192 tokens
    "gpt2-small": ("gpt2", "small", corpus.MODELS["gpt2"], corpus.LAYERS),
}
# attention tag -> (attn_implementation, forced SDPA backend, implementation doctor should name)
ATTENTION = {
    "eager": ("eager", None, "unfused"),
    "sdpa-math": ("sdpa", "math", "sdpa-math"),
    "sdpa": ("sdpa", None, "fused"),
}

# Idle-cause programs: sizes and what each is built to show.
LAUNCH_OPS = 300  # elementwise kernels a step on 1024 elements
CPU_ITEMS = 96 * 1024  # Python-loop items a step (a data loader's work), then to the GPU
SYNC_CHUNKS = 24  # matmul chunks a step, each followed by .item()
H2D_BYTES = 256 << 20  # host tensor copied to the GPU each step
ALLREDUCE_BYTES = 64 << 20  # gloo all-reduce of a CUDA tensor each step
GEMM_N, GEMMS = 8192, 8  # GPU-bound control: back-to-back bf16 matmuls
SYNTHETIC = {
    "idle_launch-bound": dict(
        idle_cause="launch", description=f"{LAUNCH_OPS} chained x * 1.0001 on 1024 fp32 elements a step: "
        "each kernel ~2 us, each op's host cost several times that", kernels_per_step=LAUNCH_OPS),
    "idle_cpu-bound": dict(
        idle_cause="cpu", description=f"a Python list comprehension of {CPU_ITEMS} items and torch.tensor() of it "
        "(a data loader in the main thread), then an H2D copy of it (384 KiB) and 4 x (relu(x @ w1) @ w2) bf16 on "
        "6144x1024 @ 1024x4096"),
    "idle_host-sync": dict(
        idle_cause="sync", description=f"{SYNC_CHUNKS} chunks of relu(h @ w) (4096x2048 @ 2048x2048 bf16), each "
        "followed by h.sum().item(): the host waits for the GPU, then launches the next chunk",
        syncs_per_step=SYNC_CHUNKS),
    "idle_h2d-pageable": dict(
        idle_cause="h2d-copy", description=f"a {H2D_BYTES >> 20} MiB fp32 pageable host tensor .to('cuda') a step, "
        "then its sum and one 4096x4096 bf16 matmul on a slice of it", h2d_bytes_per_step=H2D_BYTES,
        pinned=False, non_blocking=False, twin_group="h2d_copy", twin_axis="host memory"),
    "idle_h2d-pinned": dict(
        idle_cause="h2d-copy", description=f"as idle_h2d-pageable, the {H2D_BYTES >> 20} MiB host tensor pinned "
        "and copied with non_blocking=True", h2d_bytes_per_step=H2D_BYTES, pinned=True, non_blocking=True,
        twin_group="h2d_copy", twin_axis="host memory"),
    "idle_comm_rank0": dict(
        idle_cause="communication", description=f"2 ranks on GPU 0 (gloo): 4 bf16 4096^3 matmuls, then "
        f"all_reduce of a {ALLREDUCE_BYTES >> 20} MiB fp32 CUDA tensor a step (gloo copies it through the host)",
        rank=0, world_size=2, process_group="gloo", allreduce_bytes_per_step=ALLREDUCE_BYTES, rank_group="comm"),
    "idle_comm_rank1": dict(
        idle_cause="communication", description="rank 1 of idle_comm (idle_comm_rank0)",
        rank=1, world_size=2, process_group="gloo", allreduce_bytes_per_step=ALLREDUCE_BYTES, rank_group="comm"),
    "idle_gpu-bound": dict(
        idle_cause="none", description=f"{GEMMS} back-to-back {GEMM_N}^3 bf16 matmuls a step, no sync: the "
        "control (expect under 10% idle)", kernels_per_step=GEMMS),
}


def _model_programs():
    p = {}

    def add(model, att, mode, record_shapes=True, tracer="torch.profiler"):
        suffix = "" if record_shapes else "_noshapes"
        if tracer != "torch.profiler":
            suffix = "_record"
        tag = "train" if mode == "training" else "infer"
        p[f"{model}_{att}_bf16_{tag}{suffix}"] = dict(model=model, att=att, mode=mode, tracer=tracer,
                                                       record_shapes=record_shapes and tracer == "torch.profiler",
                                                       twin_group=f"{model}_{tag}{suffix}")

    for model in ["llama-small", "llama-large"]:
        for mode in ["inference", "training"]:
            for att in ATTENTION:
                add(model, att, mode)
    for att in ATTENTION:
        add("llama-small", att, "inference", record_shapes=False)
    for att in ["eager", "sdpa"]:
        add("gpt2-small", att, "training")
    for mode in ["inference", "training"]:
        for att in ["eager", "sdpa"]:
            add("llama-small", att, mode, tracer="attnprof record")
    return p


MODEL_PROGRAMS = _model_programs()
NAMES = list(MODEL_PROGRAMS) + list(SYNTHETIC)


def facts(name):
    common = dict(active_steps=ACTIVE, schedule=dict(wait=WAIT, warmup=WARMUP, active=ACTIVE))
    if name in SYNTHETIC:
        f = dict(name=name, kind="idle", family="synthetic", tracer="torch.profiler", record_shapes=True,
                 dtype="bf16", mode="synthetic", **common, **SYNTHETIC[name])
        f["step_ranges"] = [f"ProfilerStep#{i}" for i in range(FIRST, TOTAL)]
        return f
    m = MODEL_PROGRAMS[name]
    family, regime, (b, s, h, hkv, d, causal), layers = REGIMES[m["model"]]
    impl, backend, implementation = ATTENTION[m["att"]]
    training = m["mode"] == "training"
    per_step = dict(forward=layers, backward=layers if training else 0)
    recorded = m["tracer"] != "torch.profiler"
    return dict(
        name=name, kind="twin", family=family, model=m["model"], regime=regime, impl=impl, attention=m["att"],
        backend_forced=backend, backends_allowed="math" if backend == "math" else "all (PyTorch picks)",
        step_context="sdpa_kernel([MATH])" if backend == "math" else "sdpa_kernel(all four backends)",
        dtype="bf16", mode=m["mode"], tracer=m["tracer"], record_shapes=m["record_shapes"],
        twin_group=m["twin_group"], twin_axis="attention",
        layers=layers, batch=b, seq=s, heads=h, kv_heads=hkv, head_dim=d, causal=causal,
        hidden=h * d, vocab=4096,
        forwards_per_step=1, attention_calls_per_step=per_step, **common,
        step_ranges=(["NVTX step (occurrences 3..10 of 0..10)"] if recorded
                     else [f"ProfilerStep#{i}" for i in range(FIRST, TOTAL)]),
        shape=dict(batch=b, q_heads=h, kv_heads=hkv, q_len=s, kv_len=s, head_dim=d, causal=causal),
        expected=dict(implementation=implementation, forward_calls=per_step["forward"] * ACTIVE,
                      backward_calls=per_step["backward"] * ACTIVE),
    )


# ---- running (torch imported lazily: --list, --facts, --summary and --pack run without it)

def timed_loop(step, begin=None, end=None):
    """TOTAL iterations; begin(i) / end(i) around each (an NVTX push and pop, or prof.step()). The
    wall clock of the ACTIVE ones: synchronize at the end of iteration FIRST-1 (before end), clock
    after end; at the end of the last, synchronize, clock, then end."""
    import torch

    marks, t0, t1 = [], None, None
    for i in range(TOTAL):
        if begin:
            begin(i)
        step()
        if i in (FIRST - 1, TOTAL - 1):
            torch.cuda.synchronize()
        if i == TOTAL - 1:
            t1 = time.perf_counter()
        if end:
            end(i)
        if i == FIRST - 1:
            t0 = time.perf_counter()
        marks.append(t1 if i == TOTAL - 1 else time.perf_counter())
    return dict(mean_step_ms=(t1 - t0) * 1e3 / ACTIVE,
                host_step_ms=[round((marks[i] - marks[i - 1]) * 1e3, 4) for i in range(FIRST, TOTAL)])


def sdpa_choice(f):
    """The backend torch._fused_sdp_choice picks for the call's q/k/v (GQA through enable_gqa, as
    transformers passes it with no mask), in the forced backend's context; a probe, not the trace."""
    import torch
    from torch.nn.attention import SDPBackend

    if f.get("impl") != "sdpa":
        return None
    try:
        q = torch.empty(f["batch"], f["heads"], f["seq"], f["head_dim"], dtype=torch.bfloat16, device="cuda")
        k = torch.empty(f["batch"], f["kv_heads"], f["seq"], f["head_dim"], dtype=torch.bfloat16, device="cuda")
        dropout = 0.1 if f["family"] == "gpt2" and f["mode"] == "training" else 0.0
        for t in (q, k):
            t.requires_grad_(f["mode"] == "training")
        with corpus.backend_context(f["backend_forced"]):
            c = torch._fused_sdp_choice(q, k, k, None, dropout, True, enable_gqa=f["kv_heads"] != f["heads"])
        names = {int(b.value): n for n, b in SDPBackend.__members__.items()}
        return names.get(int(c), str(c))
    except Exception as e:  # informative only
        return f"probe failed: {type(e).__name__}"


def build(name):
    """(step function, extra facts measured while running) for a program."""
    import torch

    if name in MODEL_PROGRAMS:
        f = facts(name)
        family, _, shape, layers = REGIMES[f["model"]]
        # Every twin's step inside sdpa_kernel (the math twin's: MATH alone; the others': every backend,
        # PyTorch's own choice), so the context's host time is the same in every twin.
        v = dict(family=family, impl=f["impl"], backend=f["backend_forced"] or "all", dtype="bf16", mode=f["mode"])
        model, (b, s) = corpus.build_model(v, shape=shape, layers=layers)
        return corpus.make_step(v, model, b, s), {"sdpa_choice_probe": sdpa_choice(f)}
    extra = {}
    bf = dict(dtype=torch.bfloat16, device="cuda")
    torch.manual_seed(0)
    if name == "idle_launch-bound":
        x = torch.ones(1024, device="cuda")

        def step():
            y = x
            for _ in range(LAUNCH_OPS):
                y = y * 1.0001
    elif name == "idle_cpu-bound":
        w1 = torch.randn(1024, 4096, **bf) * 0.03
        w2 = torch.randn(4096, 1024, **bf) * 0.03
        cpu_ms = extra.setdefault("cpu_work_ms", [])

        def step():
            t = time.perf_counter()
            items = [((i * 2654435761) % 1000003) * 1e-6 for i in range(CPU_ITEMS)]
            batch = torch.tensor(items, dtype=torch.float32).view(-1, 1024)
            cpu_ms.append(round((time.perf_counter() - t) * 1e3, 4))
            x = batch.to("cuda").to(torch.bfloat16).repeat(64, 1)
            for _ in range(4):
                x = torch.relu(x @ w1) @ w2
    elif name == "idle_host-sync":
        x0 = torch.randn(4096, 2048, **bf)
        ws = [torch.randn(2048, 2048, **bf) * (2.0 / 2048) ** 0.5 for _ in range(SYNC_CHUNKS)]

        def step():
            h = x0
            for w in ws:
                h = torch.relu(h @ w)
                if not math.isfinite(h.sum().item()):  # a NaN check, as training loops do
                    raise RuntimeError("not finite")
    elif name in ("idle_h2d-pageable", "idle_h2d-pinned"):
        pinned = SYNTHETIC[name]["pinned"]
        host = torch.ones(H2D_BYTES // 4, dtype=torch.float32)
        if pinned:
            host = host.pin_memory()
        w = torch.randn(4096, 4096, **bf) * 0.01

        def step():
            d = host.to("cuda", non_blocking=pinned)
            d.sum()
            d[: 4096 * 4096].view(4096, 4096).to(torch.bfloat16) @ w
    elif name == "idle_gpu-bound":
        a = torch.randn(GEMM_N, GEMM_N, **bf)
        bm = torch.randn(GEMM_N, GEMM_N, **bf)

        def step():
            for _ in range(GEMMS):
                a @ bm
    else:
        raise KeyError(name)
    return step, extra


def environment():
    import torch

    env = dict(torch=torch.__version__, gpu=torch.cuda.get_device_name(0))
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    return env


def trace_name(name, r=0):
    """The file stem of a program's round r (round 0 keeps the program's name)."""
    return name if r == 0 else f"{name}.round{r}"


def gzip_file(path):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return path + ".gz"


def run_profiled(name, out_dir, step=None, extra=None, r=0):
    """The untraced loop, then the traced one; writes DIR/NAME.json.gz and DIR/NAME.timing.json
    (round r > 0: NAME.round<r>.*)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    if step is None:
        step, extra = build(name)
    measured = dict(environment())
    measured["unprofiled"] = timed_loop(step)
    if "cpu_work_ms" in extra:
        extra["cpu_work_ms"].clear()
    path = os.path.join(out_dir, trace_name(name, r) + ".json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=facts(name)["record_shapes"],
                 schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        measured["traced"] = timed_loop(step, end=lambda i: prof.step())
    torch.cuda.synchronize()
    if "cpu_work_ms" in extra:  # the active iterations' CPU work only
        extra["cpu_work_ms"] = extra["cpu_work_ms"][FIRST:TOTAL]
    measured.update(extra)
    finish(trace_name(name, r), out_dir, measured)
    return gzip_file(path)


def run_recorded(name, out_dir, r=0):
    """The untraced loop (no NVTX "step": outside attnprof record's window), then TOTAL iterations
    each inside an NVTX range "step"."""
    import torch

    step, extra = build(name)
    measured = dict(environment())
    measured["unprofiled"] = timed_loop(step)
    measured["traced"] = timed_loop(step, begin=lambda i: torch.cuda.nvtx.range_push("step"),
                                    end=lambda i: torch.cuda.nvtx.range_pop())
    torch.cuda.synchronize()
    measured.update(extra)
    finish(trace_name(name, r), out_dir, measured)


def record_group(group):
    """The `attnprof record` twins of one twin group, in list order."""
    return [n for n in NAMES if n in MODEL_PROGRAMS and MODEL_PROGRAMS[n]["tracer"] == "attnprof record"
            and MODEL_PROGRAMS[n]["twin_group"] == group]


def run_recorded_group(group, out_dir, rounds, alternate=False):
    """A record twin group in one process (under `attnprof record --capture-range nvtx:twins`): each
    member's untraced loop, then inside one NVTX range "twins" R rounds. In turn: the members one after
    another (the order rotated each round as run_all does), each round of a member inside an NVTX
    range "twin:<stem>" holding its TOTAL "step" ranges. Alternating: TOTAL cycles of one step per
    member (alternating_order), each step inside its own "twin:<stem>" range. split_record cuts the
    trace into one per member and round."""
    import torch

    members = record_group(group)
    if not members:
        raise SystemExit(f"--run-group {group}: no attnprof record twins in that group")
    built = {n: build(n) for n in members}
    untraced = {n: timed_loop(built[n][0]) for n in members}

    def measured_as(n, r, traced):
        m = dict(environment())
        m["unprofiled"] = untraced[n]
        m["recorded_in_turn" if not alternate else "alternating"] = dict(members=members, rounds=rounds, round=r)
        m["traced"] = traced
        m.update(built[n][1])
        return m

    torch.cuda.nvtx.range_push("twins")
    for r in range(rounds):
        if alternate:
            @contextlib.contextmanager
            def around(n):
                with torch.cuda.nvtx.range(f"twin:{trace_name(n, r)}"), torch.cuda.nvtx.range("step"):
                    yield

            host = alternating_steps(built, members, around)
            for n in members:
                finish(trace_name(n, r), out_dir, measured_as(n, r, host_traced(host[n])))
            continue
        for n in members[r % len(members):] + members[: r % len(members)]:
            torch.cuda.nvtx.range_push(f"twin:{trace_name(n, r)}")
            traced = timed_loop(built[n][0], begin=lambda i: torch.cuda.nvtx.range_push("step"),
                                end=lambda i: torch.cuda.nvtx.range_pop())
            torch.cuda.nvtx.range_pop()
            finish(trace_name(n, r), out_dir, measured_as(n, r, traced))
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def alternating_order(order, cycles):
    """The members' iterations when they alternate step by step: each cycle runs every member once,
    the order rotated by one each cycle (no member always follows the same one)."""
    k = len(order)
    return [n for c in range(cycles) for n in order[c % k:] + order[: c % k]]


def alternating_steps(built, order, around, after=None):
    """TOTAL cycles of one step per member (alternating_order), each inside the context around(member)
    and ending with torch.cuda.synchronize() in it, so a twin's GPU work never queues behind the
    other's (a GPU-bound twin would otherwise lengthen the next one's step); after(i) after each (a
    profiler's step). Each member's wall time per step of its last ACTIVE cycles, ms: perf_counter
    from the step's start to the next one's (the last one's to its end, before after())."""
    import torch

    seq = alternating_order(order, TOTAL)
    marks = []
    for i, n in enumerate(seq):
        marks.append(time.perf_counter())
        with around(n):
            built[n][0]()
            torch.cuda.synchronize()
        if i == len(seq) - 1:
            marks.append(time.perf_counter())
        if after:
            after(i)
    host = {n: [] for n in order}
    for i in range(len(order) * FIRST, len(seq)):
        host[seq[i]].append(round((marks[i + 1] - marks[i]) * 1e3, 4))
    return host


def host_traced(steps_ms):
    """A member's "traced" timing from its steps' wall times (alternating_steps)."""
    return dict(mean_step_ms=sum(steps_ms) / len(steps_ms), host_step_ms=steps_ms)


def run_profiled_alternating(built, order, out_dir, r):
    """Round r of a twin group with its members' steps alternating in one torch.profiler session:
    each member's untraced loop, then alternating_steps (the schedule waits and warms up over the
    first FIRST cycles and records the last ACTIVE: ACTIVE steps of each member, each inside a
    record_function "twin:<stem>"); split_alternating cuts the trace into one per member, as if it
    ran alone. Host noise then falls on every member alike: a step of each twin runs within a few ms
    of a step of the others."""
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    k = len(order)
    untraced = {n: timed_loop(built[n][0]) for n in order}
    stems = {n: trace_name(n, r) for n in order}
    group = MODEL_PROGRAMS[order[0]]["twin_group"]
    path = os.path.join(out_dir, f"{group}.alternating{r}.json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=facts(order[0])["record_shapes"],
                 schedule=schedule(wait=k * WAIT, warmup=k * WARMUP, active=k * ACTIVE, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        host = alternating_steps(built, order, lambda n: record_function(f"twin:{stems[n]}"), lambda i: prof.step())
    for n in order:
        measured = dict(environment())
        measured["unprofiled"] = untraced[n]
        measured["traced"] = host_traced(host[n])
        measured["alternating"] = dict(members=order, round=r, group=group)
        measured.update(built[n][1])
        finish(stems[n], out_dir, measured)
    written = split_alternating(path, out_dir)
    os.remove(path)
    return written


def _load_trace(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as fh:
        return json.load(fh)


def _windows(steps):
    """inside(ts): whether ts falls in one of the (start, end) windows, sorted and disjoint."""
    starts = [a for a, _ in steps]

    def inside(ts):
        i = bisect.bisect_right(starts, ts) - 1
        return i >= 0 and ts <= steps[i][1]

    return inside


def split_alternating(path, out_dir):
    """One trace per member of a run_profiled_alternating session, as torch.profiler would have
    written it for that member alone: its ACTIVE ProfilerStep ranges (renamed #FIRST..#TOTAL-1), the
    CPU-side events inside them (ops, annotations, runtime and driver calls, on every thread), the GPU
    work those calls launched and its flows, their GPU annotations, and the trace's header and
    metadata; the "twin:" annotations dropped."""
    t = _load_trace(path)
    ev = t["traceEvents"]
    steps = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                    and e.get("name", "").startswith("ProfilerStep#")), key=lambda e: float(e["ts"]))
    owner = {}  # ProfilerStep event index -> the stem of the "twin:" range inside it
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e.get("name", "").startswith("twin:"):
            ts = float(e["ts"])
            for j, s in enumerate(steps):
                if float(s["ts"]) <= ts <= float(s["ts"]) + float(s["dur"]):
                    owner[j] = e["name"][len("twin:"):]
                    break
    stems = sorted(set(owner.values()))
    if not stems:
        raise SystemExit(f"{path}: no twin:<name> ranges inside its ProfilerStep ranges (not an alternating trace)")
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    flows = {}  # (category, id) -> the flow's ends
    for e in ev:
        if e.get("ph") in ("s", "f"):
            flows.setdefault((e.get("cat"), e.get("id")), []).append(e)
    written = []
    for stem in stems:
        mine = [steps[j] for j in sorted(owner) if owner[j] == stem]
        if len(mine) != ACTIVE:
            raise SystemExit(f"{path}: {stem} holds {len(mine)} profiled steps, not {ACTIVE}")
        rename = {s["name"]: f"ProfilerStep#{FIRST + j}" for j, s in enumerate(mine)}
        inside = _windows([(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in mine])
        keep, corr, ext = [], set(), set()
        for e in ev:
            ph, cat = e.get("ph"), e.get("cat")
            if ph in ("M", "i") or cat == "Trace":
                keep.append(e)
            elif cat in gpu_cats or cat == "gpu_user_annotation" or ph in ("s", "f"):
                continue  # by what they belong to, below
            elif cat == "user_annotation" and e.get("name", "").startswith("twin:"):
                continue
            elif cat == "user_annotation" and e.get("name", "").startswith("ProfilerStep#"):
                if e["name"] in rename:
                    keep.append(dict(e, name=rename[e["name"]]))
                    ext.add(e.get("args", {}).get("External id"))
            elif "ts" in e and inside(float(e["ts"])):
                keep.append(e)
                args = e.get("args", {})
                if "correlation" in args:
                    corr.add(args["correlation"])
                if "External id" in args:
                    ext.add(args["External id"])
        for e in ev:
            cat = e.get("cat")
            if cat in gpu_cats and e.get("args", {}).get("correlation") in corr:
                keep.append(e)
            elif cat == "gpu_user_annotation" and e.get("args", {}).get("External id") in ext:
                keep.append(dict(e, name=rename.get(e["name"], e["name"])))
        for (cat, fid), ends in flows.items():
            if (fid in corr) if cat == "ac2g" else all(inside(float(x["ts"])) for x in ends):
                keep.extend(ends)
        keep.sort(key=lambda e: float(e.get("ts", 0)))
        dest = os.path.join(out_dir, stem + ".json.gz")
        with gzip.open(dest, "wt", compresslevel=9) as fh:
            json.dump(dict(t, traceEvents=keep, traceName=stem), fh)
        written.append(dest)
    return written


def split_record(path, out_dir):
    """One trace per member and round of a group recording (run_recorded_group), as `attnprof record
    --capture-range nvtx:step --steps FIRST:TOTAL-1` would have written it for that member alone: the
    runtime, driver and sync calls and NVTX "step" ranges of its steps FIRST.. (in turn: from the push
    of its step FIRST to the pop of its last step; alternating: inside each of those steps), the GPU
    work those calls launched, and the trace's header."""
    t = _load_trace(path)
    ev = t["traceEvents"]
    twins = sorted((e for e in ev if e.get("cat") == "user_annotation" and e.get("name", "").startswith("twin:")),
                   key=lambda e: float(e["ts"]))
    if not twins:
        raise SystemExit(f"{path}: no twin:<name> NVTX ranges (not a run_recorded_group trace)")
    steps = sorted((e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "step"),
                   key=lambda e: float(e["ts"]))
    ranges = {}
    for tw in twins:
        ranges.setdefault(tw["name"][len("twin:"):], []).append((float(tw["ts"]), float(tw["ts"]) + float(tw["dur"])))
    cpu_cats = {"cuda_runtime", "cuda_driver", "cuda_sync"}
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    written = []
    for stem, rs in ranges.items():
        mine = [e for e in steps if any(lo <= float(e["ts"]) and float(e["ts"]) + float(e["dur"]) <= hi for lo, hi in rs)]
        if len(mine) != TOTAL:
            raise SystemExit(f"{path}: twin:{stem} holds {len(mine)} step ranges, not {TOTAL}")
        active = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in mine[FIRST:]]
        inside = _windows([(active[0][0], active[-1][1])] if len(rs) == 1 else active)
        keep, corr = [], set()
        for e in ev:
            cat, ts = e.get("cat"), float(e.get("ts", 0))
            if (cat in cpu_cats or (cat == "user_annotation" and e.get("name") == "step")) and inside(ts):
                keep.append(e)
                if "correlation" in e.get("args", {}):
                    corr.add(e["args"]["correlation"])
            elif cat not in cpu_cats | gpu_cats | {"user_annotation"} and e.get("ph") == "M":
                keep.append(e)
        keep += [e for e in ev if e.get("cat") in gpu_cats and e.get("args", {}).get("correlation") in corr]
        keep.sort(key=lambda e: float(e.get("ts", 0)))
        out = dict(t, traceEvents=keep, traceName=stem)
        dest = os.path.join(out_dir, stem + ".json.gz")
        with gzip.open(dest, "wt", compresslevel=9) as fh:
            json.dump(out, fh)
        written.append(dest)
    return written


def finish(name, out_dir, measured):
    t, u = measured["traced"]["mean_step_ms"], measured["unprofiled"]["mean_step_ms"]
    measured["mean_step_ms"] = round(t, 4)
    measured["unprofiled_mean_step_ms"] = round(u, 4)
    measured["tracer_overhead"] = round(t / u, 4)
    with open(os.path.join(out_dir, name + ".timing.json"), "w") as fh:
        json.dump(measured, fh, indent=1)


def run_comm_rank(rank, out_dir, init):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    torch.cuda.set_device(0)
    torch.manual_seed(rank)
    a = torch.randn(4096, 4096, dtype=torch.bfloat16, device="cuda")
    grad = torch.ones(ALLREDUCE_BYTES // 4, dtype=torch.float32, device="cuda")

    def step():
        for _ in range(4):
            a @ a
        dist.all_reduce(grad)
        grad.mul_(0.5)

    dist.barrier()
    run_profiled(f"idle_comm_rank{rank}", out_dir, step, {})
    dist.barrier()
    dist.destroy_process_group()


def run_comm(out_dir):
    """Both ranks at once, each its own process and trace."""
    init = f"file:///tmp/make_steps_gloo_{os.getpid()}"
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--comm-rank", str(r), "--out", out_dir,
                               "--init", init]) for r in (0, 1)]
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=240))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append("timeout")
    if codes != [0, 0]:
        raise RuntimeError(f"comm ranks exited {codes}")
    return [os.path.join(out_dir, f"idle_comm_rank{r}.json.gz") for r in (0, 1)]


def report(paths, t0):
    for p in paths:
        m = json.load(open(p[: -len(".json.gz")] + ".timing.json"))
        print(f"ok   {os.path.basename(p)[:-8]}: {os.path.getsize(p) // 1024} KiB, "
              f"{m['mean_step_ms']:.3f} ms/step traced, {m['unprofiled_mean_step_ms']:.3f} untraced, "
              f"in {time.time() - t0:.1f} s", flush=True)


def fail(n, e):
    print(f"FAIL {n}: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}", flush=True)


def run_all(out_dir, only, rounds=1, alternate=False):
    import torch

    os.makedirs(out_dir, exist_ok=True)
    names = [n for n in NAMES if facts(n)["tracer"] == "torch.profiler" and n != "idle_comm_rank1"]
    if only:
        names = [n for n in names if n in only]
    # With rounds (or alternating), each twin group's members in one process, in turn or alternating
    # step by step; the others (and R = 1 in turn) one by one.
    groups, alone = {}, []
    for n in names:
        if (rounds > 1 or alternate) and n in MODEL_PROGRAMS:
            groups.setdefault(MODEL_PROGRAMS[n]["twin_group"], []).append(n)
        else:
            alone.append(n)
    failed = 0
    for n in alone:
        t0 = time.time()
        try:
            report(run_comm(out_dir) if n == "idle_comm_rank0" else [run_profiled(n, out_dir)], t0)
        except Exception as e:  # one program failing must not lose the others
            failed += 1
            fail(n, e)
        gc.collect()
        torch.cuda.empty_cache()
    for members in groups.values():
        built = {}
        for n in members:
            try:
                built[n] = build(n)
            except Exception as e:
                failed += 1
                fail(n, e)
        order = [n for n in members if n in built]
        for r in range(rounds):
            if alternate and order:
                t0 = time.time()
                try:
                    report(run_profiled_alternating(built, order, out_dir, r), t0)
                except Exception as e:
                    failed += 1
                    fail(f"{MODEL_PROGRAMS[order[0]]['twin_group']} round {r}", e)
                continue
            for n in order[r % len(order):] + order[: r % len(order)] if order else []:
                t0 = time.time()
                try:
                    report([run_profiled(n, out_dir, *built[n], r=r)], t0)
                except Exception as e:
                    failed += 1
                    fail(trace_name(n, r), e)
        built.clear()
        gc.collect()
        torch.cuda.empty_cache()
    return 1 if failed else 0


# ---- after the run (no torch)

def merged_facts(d):
    out = []
    for n in NAMES:
        f = facts(n)
        timing = os.path.join(d, n + ".timing.json")
        f["trace"] = n + ".json.gz"
        f["measured"] = json.load(open(timing)) if os.path.exists(timing) else None
        r, f["rounds"] = 1, []
        while os.path.exists(os.path.join(d, trace_name(n, r) + ".json.gz")):
            t = os.path.join(d, trace_name(n, r) + ".timing.json")
            f["rounds"].append(dict(trace=trace_name(n, r) + ".json.gz",
                                    measured=json.load(open(t)) if os.path.exists(t) else None))
            r += 1
        if not f["rounds"]:
            del f["rounds"]
        if os.path.exists(os.path.join(d, f["trace"])):
            out.append(f)
    return out


def union_us(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def summarize(path, f):
    """Steps found, median step span (CPU), median union of GPU kernel/memcpy/memset time launched in
    a step (launch call's correlation id), and GPU activities launched outside every step."""
    ev = json.load(gzip.open(path, "rt"))["traceEvents"]
    if f["tracer"] == "torch.profiler":
        steps = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#")]
    else:
        steps = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "step"]
    steps.sort(key=lambda e: float(e["ts"]))
    spans = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in steps]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = float(e["ts"])
    per_step = [[] for _ in spans]
    outside = 0
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or e.get("ph") != "X":
            continue
        t = launch.get(e.get("args", {}).get("correlation"))
        i = next((k for k, (s, x) in enumerate(spans) if t is not None and s <= t <= x), None)
        if i is None:
            outside += 1
            continue
        per_step[i].append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    gpu = [union_us(x) / 1e3 for x in per_step]
    span = [(x - s) / 1e3 for s, x in spans]
    return dict(steps=len(spans), names=[e["name"] for e in steps][:1] + [e["name"] for e in steps][-1:],
                median_span_ms=statistics.median(span) if span else None,
                median_gpu_ms=statistics.median(gpu) if gpu else None,
                sum_span_ms=sum(span), sum_gpu_ms=sum(gpu), outside=outside)


def print_summary(d):
    def num(x, w=8):
        return f"{x:{w}.3f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"

    print(f"{'trace':38} {'KiB':>6} {'steps':>5} {'med span':>9} {'med GPU':>8} {'GPU/span':>8} "
          f"{'wall':>8} {'untraced':>8} {'out':>5}")
    bad = 0
    kept = os.path.join(d, "facts.json")  # a folder of kept traces (tests/data/steps) has no timing files
    for f in json.load(open(kept)) if os.path.exists(kept) else merged_facts(d):
        p = os.path.join(d, f["trace"])
        m = f["measured"] or {}
        try:
            s = summarize(p, f)
        except Exception as e:  # a broken trace is reported, the others still are
            bad += 1
            print(f"{f['name']:38} {os.path.getsize(p) // 1024:6d} unreadable: {type(e).__name__}: {e}")
            continue
        ok = s["steps"] == ACTIVE
        bad += not ok
        share = s["sum_gpu_ms"] / s["sum_span_ms"] if s["sum_span_ms"] else None
        print(f"{f['name']:38} {os.path.getsize(p) // 1024:6d} {s['steps']:5d}{' ' if ok else '!'}"
              f"{num(s['median_span_ms'], 9)} {num(s['median_gpu_ms'])} {num(share)} "
              f"{num(m.get('mean_step_ms'))} {num(m.get('unprofiled_mean_step_ms'))} {s['outside']:5d}")
    print("steps: step ranges found (! when not %d); med span: median step range (ProfilerStep#N / NVTX step) "
          "on the CPU, ms; med GPU: median union of the kernels, copies and memsets launched in a step, ms; "
          "GPU/span: their sums' ratio; wall: perf_counter ms/step over the active steps, traced; untraced: "
          "the same loop without the tracer; out: GPU activities launched outside every step" % ACTIVE)
    return 1 if bad else 0


def pack(d, dest, limit=15 << 20):
    os.makedirs(dest, exist_ok=True)
    files = sorted(x for x in os.listdir(d) if x.endswith((".json.gz", ".timing.json", ".log", ".txt")) or x == "facts.json")
    chunks, size = [[]], 0
    for x in files:
        n = os.path.getsize(os.path.join(d, x))
        if chunks[-1] and size + n > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(x)
        size += n
    for i, c in enumerate(chunks):
        with tarfile.open(os.path.join(dest, f"steps{i}.tar"), "w") as t:
            for x in c:
                t.add(os.path.join(d, x), arcname=x)
    print(f"packed {len(files)} files in {len(chunks)} tar(s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--tracer", choices=["torch.profiler", "attnprof record"])
    ap.add_argument("--out")
    ap.add_argument("--only", default="")
    ap.add_argument("--run")
    ap.add_argument("--round", type=int, default=0, help="with --run: the round it is (its file names)")
    ap.add_argument("--rounds", type=int, default=1, help="each twin group in one process, R rounds in turn")
    ap.add_argument("--run-group", help="the attnprof record twins of TWIN_GROUP in one process (with --rounds)")
    ap.add_argument("--alternate", action="store_true",
                    help="with --rounds or --run-group: the twins' steps alternate in one trace, cut into one per member")
    ap.add_argument("--split-alternating", help="cut an alternating torch.profiler trace into one trace per twin")
    ap.add_argument("--split-record", help="cut a --run-group recording into one trace per twin and round")
    ap.add_argument("--facts")
    ap.add_argument("--summary")
    ap.add_argument("--pack", nargs=2)
    ap.add_argument("--comm-rank", type=int)
    ap.add_argument("--init")
    a = ap.parse_args()
    if a.list:
        json.dump([facts(n) for n in NAMES if a.tracer in (None, facts(n)["tracer"])], sys.stdout, indent=1)
        print()
        return 0
    if a.facts:
        json.dump(merged_facts(a.facts), sys.stdout, indent=1)
        print()
        return 0
    if a.summary:
        return print_summary(a.summary)
    if a.pack:
        pack(*a.pack)
        return 0
    if a.comm_rank is not None:
        run_comm_rank(a.comm_rank, a.out, a.init)
        return 0
    if a.split_alternating:
        for p in split_alternating(a.split_alternating, a.out or os.path.dirname(a.split_alternating)):
            print(f"wrote {p}")
        return 0
    if a.split_record:
        for p in split_record(a.split_record, a.out or os.path.dirname(a.split_record)):
            print(f"wrote {p}")
        return 0
    if a.run_group:
        os.makedirs(a.out, exist_ok=True)
        run_recorded_group(a.run_group, a.out, a.rounds, a.alternate)
        return 0
    if a.run:
        os.makedirs(a.out, exist_ok=True)
        run_recorded(a.run, a.out, a.round)
        return 0
    if not a.out:
        ap.error("--out DIR (or --list, --run, --facts, --summary, --pack)")
    if a.rounds < 1:
        ap.error(f"--rounds {a.rounds}: at least 1")
    return run_all(a.out, [x for x in a.only.split(",") if x], a.rounds, a.alternate)


if __name__ == "__main__":
    sys.exit(main())
