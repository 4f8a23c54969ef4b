#!/usr/bin/env python3
"""Multi-rank traces of one distributed job, for doctor across ranks (issue 39): one torch.profiler
trace per rank of the same DDP training job, two ranks made different on purpose.

The job: WORLD ranks, each its own process, all on GPU 0, torch.distributed over gloo (file://
init), a small Hugging Face Llama (random weights, bf16; make_corpus.py's build_model and
make_inputs) wrapped in DistributedDataParallel(device_ids=[0]), training steps (forward, loss,
backward with DDP's gradient all-reduce, AdamW step, zero_grad). Each rank is traced by
torch.profiler with a schedule (wait 1, warmup 2, active 3: ProfilerStep#3..#5), record_shapes,
exported with export_chrome_trace and gzipped: ddp_llama_rank{R}.json.gz. The process group is
initialised before the profiler starts, so each trace carries "distributedInfo".

  - rank 2 builds the model with attn_implementation="eager" (the others "sdpa"): its attention
    dispatch differs (unfused matmul + softmax attention on rank 2 alone);
  - rank 3 runs batch 8 (the others batch 2): 4x the tokens, the slowest rank, whose compute
    before each gradient all-reduce is the longest.

Each LlamaAttention forward runs inside a record_function range "LlamaAttention" (forward hooks on
the module), so an op can be placed inside the attention module. If DDP cannot be built or its first
step fails (--sync auto), the gradients are all-reduced by hand per parameter bucket (25 MiB, in
reverse parameter order, as DDP buckets them) and the facts say so.

Facts come from how the job was built, never from attnprof; measured_step_ms is a measurement
(time.perf_counter around each step, no torch.cuda.synchronize: DDP's backward waits for the
all-reduce on the host, so the host step time follows the job's step).

  make_ranks.py --list                    the facts (JSON; no torch needed)
  make_ranks.py --out DIR [--sync auto|ddp|manual]   the job: DIR/ddp_llama_rank{R}.json.gz + DIR/facts.json
  make_ranks.py --check DIR               per trace, read with json/gzip alone: distributedInfo, ProfilerStep
                                          ranges, the attention ops (eager on rank 2, fused SDPA elsewhere)

The same job under `attnprof record` (--tracer record; RANKS_TRACER=record in gpu_ranks.sh): no
torch.profiler, each step inside an NVTX range "step", the job run as `attnprof record -o
DIR/ddp_llama_record.json --capture-range nvtx:step --steps 3:5 -- make_ranks.py --tracer record ...`, each
rank process started with RANK/LOCAL_RANK/WORLD_SIZE set as torchrun sets them, so the recorder writes
one trace a rank, DIR/ddp_llama_record.rank{R}.json (gzipped here), of its steps 3-5: kernels, copies,
runtime calls and the NVTX ranges, no CPU ops, no distributedInfo (the rank is in the file name).

On the GPU machine: scripts/corpus/gpu_ranks.sh OUT_DIR does the job and the check in one call.
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus as corpus  # noqa: E402  (build_model, make_inputs)

WORLD = 4
WAIT, WARMUP, ACTIVE = 1, 2, 3
TOTAL = WAIT + WARMUP + ACTIVE
FIRST = WAIT + WARMUP  # the first active iteration: ProfilerStep#3
UNTRACED = 5  # timed steps before the profiler starts (after one probe step)
LAYERS, HIDDEN, HEADS, KV_HEADS, SEQ = 2, 512, 8, 8, 256
HEAD_DIM = HIDDEN // HEADS
VOCAB = 4096  # make_corpus.build_model's
BATCH = {0: 2, 1: 2, 2: 2, 3: 8}
ATTN = {0: "sdpa", 1: "sdpa", 2: "eager", 3: "sdpa"}
DISPATCH_RANK, SLOW_RANK = 2, 3
BUCKET_BYTES = 25 << 20  # DDP's default bucket_cap_mb, for the manual fallback
ANNOTATION = "LlamaAttention"
NAME = "ddp_llama_rank{}"
RECORD_STEM = "ddp_llama_record"  # attnprof record -o DIR/ddp_llama_record.json: one .rank{R}.json a rank
STEP_RANGE = "step"  # the NVTX range around each step under attnprof record


def trace_file(rank, tracer):
    return (NAME.format(rank) if tracer == "torch.profiler" else f"{RECORD_STEM}.rank{rank}") + ".json.gz"


def job_facts(tracer="torch.profiler"):
    record = tracer != "torch.profiler"
    return dict(
        name="ddp_llama", world_size=WORLD, backend="gloo", init_method="file://", device="cuda:0 (every rank)",
        tracer=tracer, ranks=list(range(WORLD)), traces=[trace_file(r, tracer) for r in range(WORLD)],
        dispatch_differs_rank=DISPATCH_RANK, dispatch=ATTN[DISPATCH_RANK], dispatch_others="sdpa",
        dispatch_why=f"rank {DISPATCH_RANK} builds the model with attn_implementation='eager' (unfused matmul, "
        "softmax, matmul in every attention call); the other ranks use 'sdpa' (PyTorch picks a fused backend)",
        slowest_rank=SLOW_RANK,
        slowest_why=f"rank {SLOW_RANK} runs batch {BATCH[SLOW_RANK]} against {BATCH[0]} on the others: "
        f"{BATCH[SLOW_RANK] // BATCH[0]}x the tokens ({BATCH[SLOW_RANK] * SEQ} vs {BATCH[0] * SEQ}) in every forward "
        "and backward, so its compute before each gradient all-reduce is the longest and the other ranks wait for "
        "it in the all-reduce",
        schedule=dict(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        step_ranges=([f"{STEP_RANGE} (NVTX, occurrences {FIRST}-{TOTAL - 1} recorded)"] * ACTIVE if record else
                     [f"ProfilerStep#{i}" for i in range(FIRST, TOTAL)]),
        note="all ranks share one GPU (time-sliced between the processes); gloo all-reduces CUDA tensors through "
        "host memory",
    )


def facts(rank, tracer="torch.profiler"):
    b, impl = BATCH[rank], ATTN[rank]
    per_step = dict(forward=LAYERS, backward=LAYERS)
    record = tracer != "torch.profiler"
    return dict(
        name=trace_file(rank, tracer)[:-len(".json.gz")], trace=trace_file(rank, tracer), job="ddp_llama", kind="rank",
        rank=rank, world_size=WORLD, backend="gloo", init_method="file://", device="cuda:0",
        family="llama", model_class="LlamaForCausalLM", weights="random (torch.manual_seed(0), same on every rank)",
        model=dict(layers=LAYERS, hidden=HIDDEN, intermediate=2 * HIDDEN, heads=HEADS, kv_heads=KV_HEADS,
                   head_dim=HEAD_DIM, vocab=VOCAB, seq=SEQ, batch=b, causal=True),
        layers=LAYERS, hidden=HIDDEN, heads=HEADS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, seq=SEQ, batch=b,
        attn_implementation=impl, impl=impl, dtype="bf16", mode="training", optimizer="AdamW(lr=1e-4)",
        wrapper="DistributedDataParallel(device_ids=[0])",
        forwards_per_step=1, backwards_per_step=1, attention_calls_per_step=per_step,
        tracer=tracer, record_shapes=not record, schedule=dict(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        profiled_steps=ACTIVE, active_steps=ACTIVE,
        step_ranges=([STEP_RANGE] * ACTIVE if record else [f"ProfilerStep#{i}" for i in range(FIRST, TOTAL)]),
        annotations=([] if record else
                     [f"record_function '{ANNOTATION}' around each LlamaAttention.forward (module hooks)"]),
        recorded=(f"attnprof record --capture-range nvtx:{STEP_RANGE} --steps {FIRST}:{TOTAL - 1}: kernels, copies, "
                  "runtime calls, NVTX ranges; no CPU ops, no distributedInfo" if record else None),
        shape=dict(batch=b, q_heads=HEADS, kv_heads=KV_HEADS, q_len=SEQ, kv_len=SEQ, head_dim=HEAD_DIM, causal=True),
        expected=dict(implementation="unfused" if impl == "eager" else "fused",
                      forward_calls=per_step["forward"] * ACTIVE, backward_calls=per_step["backward"] * ACTIVE),
        differs=("dispatch (eager attention)" if rank == DISPATCH_RANK else
                 "slowest (4x batch)" if rank == SLOW_RANK else None),
    )


# ---- one rank (torch imported here only)

def annotate_attention(model):
    """A record_function range ANNOTATION around every attention module's forward."""
    import torch

    open_ranges = []

    def pre(mod, args, kwargs=None):
        r = torch.profiler.record_function(ANNOTATION)
        r.__enter__()
        open_ranges.append(r)

    def post(mod, args, *rest):
        if open_ranges:
            open_ranges.pop().__exit__(None, None, None)

    n = 0
    for m in model.modules():
        if type(m).__name__ == "LlamaAttention":
            m.register_forward_pre_hook(pre)
            m.register_forward_hook(post, always_call=True)
            n += 1
    return n


def sdpa_choice(b):
    """The backend torch._fused_sdp_choice picks for this rank's q/k/v; a probe, not the trace."""
    import torch
    from torch.nn.attention import SDPBackend

    try:
        q = torch.empty(b, HEADS, SEQ, HEAD_DIM, dtype=torch.bfloat16, device="cuda", requires_grad=True)
        c = torch._fused_sdp_choice(q, q, q, None, 0.0, True)
        names = {int(x.value): n for n, x in SDPBackend.__members__.items()}
        return names.get(int(c), str(c))
    except Exception as e:  # informative only
        return f"probe failed: {type(e).__name__}"


def grad_buckets(params):
    """Parameters in reverse order, cut into buckets of at most BUCKET_BYTES (DDP's layout, roughly)."""
    buckets, size = [[]], 0
    for p in reversed(params):
        n = p.numel() * p.element_size()
        if buckets[-1] and size + n > BUCKET_BYTES:
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += n
    return buckets


def run_rank(rank, out_dir, init, sync, tracer="torch.profiler"):
    import datetime

    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, schedule

    def say(*a):
        print(f"[rank {rank}]", *a, flush=True)

    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=120))
    record = tracer != "torch.profiler"
    f = facts(rank, tracer)
    b = f["batch"]
    v = dict(family="llama", impl=f["attn_implementation"], backend=None, dtype="bf16", mode="training")
    model, _ = corpus.build_model(v, shape=(b, SEQ, HEADS, KV_HEADS, HEAD_DIM, True), layers=LAYERS)
    annotated = 0 if record else annotate_attention(model)
    torch.manual_seed(1000 + rank)  # each rank its own data
    kw = corpus.make_inputs(v, b, SEQ)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    params = [p for p in model.parameters() if p.requires_grad]
    measured = dict(torch=torch.__version__, gpu=torch.cuda.get_device_name(0), annotated_modules=annotated,
                    attn_implementation_in_config=getattr(model.config, "_attn_implementation", None),
                    sdpa_choice_probe=sdpa_choice(b) if f["attn_implementation"] == "sdpa" else None)
    try:
        import transformers

        measured["transformers"] = transformers.__version__
    except ImportError:
        pass

    def manual_allreduce():
        for bucket in grad_buckets(params):
            with torch.profiler.record_function("manual_grad_allreduce"):
                grads = [p.grad for p in bucket if p.grad is not None]
                flat = torch.cat([g.reshape(-1) for g in grads]).float()
                dist.all_reduce(flat)
                flat.div_(WORLD)
                for g, x in zip(grads, flat.split([g.numel() for g in grads])):
                    g.copy_(x.view_as(g))

    def make_step(net, manual):
        def step():
            out = net(**kw)
            out.loss.backward()
            if manual:
                manual_allreduce()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return step

    mode, err, ddp, step = sync, None, None, None
    if sync in ("auto", "ddp"):
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP

            ddp = DDP(model, device_ids=[0])
            step = make_step(ddp, False)
            step()  # the probe step (DDP's first iteration also rebuilds its buckets)
            torch.cuda.synchronize()
            mode = "ddp"
        except Exception as e:
            if sync == "ddp":
                raise
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            say("DDP failed, falling back to a manual bucketed all-reduce:", err)
            mode = "manual"
        failed = torch.tensor([1 if mode == "manual" else 0])
        dist.all_reduce(failed, op=dist.ReduceOp.MAX)  # every rank takes the same path
        if failed.item():
            mode = "manual"
    if mode == "manual":
        if ddp is not None:
            del ddp, step  # the reducer's autograd hooks go with it
            import gc

            gc.collect()
            ddp = None
        opt.zero_grad(set_to_none=True)
        step = make_step(model, True)
        step()  # the probe step
        torch.cuda.synchronize()
    measured["gradient_sync"] = ("DistributedDataParallel(device_ids=[0]) over gloo" if mode == "ddp" else
                                 "manual: dist.all_reduce per 25 MiB parameter bucket (fp32 copies) after backward")
    if err:
        measured["ddp_error"] = err
    if ddp is not None:
        try:
            d = ddp._get_ddp_logging_data()
            measured["ddp_logging"] = {k: d[k] for k in ("backend_name", "bucket_sizes", "num_parameter_tensors",
                                                         "total_parameter_size_bytes", "gradient_as_bucket_view",
                                                         "comm_hook", "bucket_cap_bytes") if k in d}
        except Exception as e:  # informative only
            measured["ddp_logging"] = f"unavailable: {type(e).__name__}"

    dist.barrier()
    untraced = []
    for _ in range(UNTRACED):
        t = time.perf_counter()
        step()
        untraced.append((time.perf_counter() - t) * 1e3)
    dist.barrier()
    traced = []
    if record:  # attnprof record captures the NVTX "step" ranges FIRST..TOTAL-1 and writes at exit
        for _ in range(TOTAL):
            t = time.perf_counter()
            torch.cuda.nvtx.range_push(STEP_RANGE)
            step()
            torch.cuda.nvtx.range_pop()
            traced.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
        dist.barrier()
        finish_rank(rank, out_dir, f, measured, traced, untraced, None, say)
        dist.barrier()
        dist.destroy_process_group()
        return
    path = os.path.join(out_dir, f["name"] + ".json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(TOTAL):
            t = time.perf_counter()
            step()
            traced.append((time.perf_counter() - t) * 1e3)
            prof.step()
    torch.cuda.synchronize()
    dist.barrier()
    with open(path) as fh:
        info = json.load(fh).get("distributedInfo")
    say("distributedInfo:", json.dumps(info))
    gzip_file(path)
    finish_rank(rank, out_dir, f, measured, traced, untraced, info, say)
    dist.barrier()
    dist.destroy_process_group()


def gzip_file(path):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)


def finish_rank(rank, out_dir, f, measured, traced, untraced, info, say):
    """The rank's measurements beside its trace (folded into facts.json by run_job)."""
    import torch

    active = traced[FIRST:TOTAL]
    measured.update(
        distributedInfo_in_trace=info,
        measured_step_ms=round(statistics.median(active), 4),
        measured_step_ms_what="median over the active (traced) steps of time.perf_counter around each step "
                              "(forward, backward with the all-reduce, optimizer step, zero_grad), no synchronize",
        traced_step_ms=[round(x, 4) for x in traced],
        untraced_step_ms=[round(x, 4) for x in untraced],
        untraced_median_step_ms=round(statistics.median(untraced), 4),
        max_memory_allocated_mib=round(torch.cuda.max_memory_allocated() / 2**20, 1),
    )
    with open(os.path.join(out_dir, f["name"] + ".measured.json"), "w") as fh:
        json.dump(measured, fh, indent=1)
    say(f"batch {f['batch']}, {f['attn_implementation']}, {measured['gradient_sync']}: measured_step_ms "
        f"{measured['measured_step_ms']:.2f} (untraced {measured['untraced_median_step_ms']:.2f})")


# ---- the job (no torch in this process)

def run_job(out_dir, sync, timeout, tracer="torch.profiler"):
    os.makedirs(out_dir, exist_ok=True)
    init_file = f"/tmp/make_ranks_gloo_{os.getpid()}"
    if os.path.exists(init_file):
        os.remove(init_file)
    t0 = time.time()
    # RANK / LOCAL_RANK / WORLD_SIZE as torchrun sets them: attnprof record names each rank's trace by RANK.
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r), "--out", out_dir,
                               "--init", "file://" + init_file, "--sync", sync, "--tracer", tracer],
                              env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(WORLD)})
             for r in range(WORLD)]
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(1, timeout - (time.time() - t0))))
        except subprocess.TimeoutExpired:
            codes.append("timeout")
    for p, c in zip(procs, codes):
        if c == "timeout":
            p.kill()
    if os.path.exists(init_file):
        os.remove(init_file)
    print(f"ranks exited {codes} in {time.time() - t0:.1f} s", flush=True)
    if tracer != "torch.profiler":  # the recorder wrote each rank's trace as its process exited
        for r in range(WORLD):
            raw = os.path.join(out_dir, trace_file(r, tracer)[:-len(".gz")])
            if os.path.exists(raw):
                gzip_file(raw)
    traces = []
    for r in range(WORLD):
        f = facts(r, tracer)
        mpath = os.path.join(out_dir, f["name"] + ".measured.json")
        if os.path.exists(mpath):
            m = json.load(open(mpath))
            os.remove(mpath)  # folded into facts.json (the device tool returns few files)
            f["gradient_sync"] = m["gradient_sync"]
            f["measured_step_ms"] = m["measured_step_ms"]
            f["measured"] = m
        else:
            f["measured"] = None
        if os.path.exists(os.path.join(out_dir, f["trace"])):
            traces.append(f)
    job = job_facts(tracer)
    syncs = sorted({f["gradient_sync"] for f in traces if "gradient_sync" in f})
    job["gradient_sync"] = syncs[0] if len(syncs) == 1 else syncs
    with open(os.path.join(out_dir, "facts.json" if tracer == "torch.profiler" else "facts_record.json"), "w") as fh:
        json.dump(dict(job=job, traces=traces), fh, indent=1)
    print(f"{'rank':>4} {'batch':>5} {'attn':>6} {'step ms':>8} {'untraced':>8} {'KiB':>6}  distributedInfo")
    for f in traces:
        m = f["measured"] or {}
        di = m.get("distributedInfo_in_trace") or {}
        print(f"{f['rank']:4d} {f['batch']:5d} {f['attn_implementation']:>6} {m.get('measured_step_ms', 0):8.2f} "
              f"{m.get('untraced_median_step_ms', 0):8.2f} {os.path.getsize(os.path.join(out_dir, f['trace'])) // 1024:6d}"
              f"  rank={di.get('rank')} world_size={di.get('world_size')} backend={di.get('backend')}")
    return 0 if codes == [0] * WORLD and len(traces) == WORLD else 1


# ---- checking the traces (json and gzip only)

FUSED_OPS = {"aten::_scaled_dot_product_flash_attention": "flash", "aten::_scaled_dot_product_cudnn_attention": "cudnn",
             "aten::_scaled_dot_product_efficient_attention": "efficient",
             "aten::_scaled_dot_product_flash_attention_for_cpu": "flash-cpu"}


def check_trace(path, f):
    d = json.load(gzip.open(path, "rt"))
    ev = d["traceEvents"]
    problems = []
    info = d.get("distributedInfo") or {}
    if info.get("rank") != f["rank"] or info.get("world_size") != WORLD or info.get("backend") != "gloo":
        problems.append(f"distributedInfo {info}")
    steps = sorted(e["name"] for e in ev if e.get("cat") == "user_annotation"
                   and e.get("name", "").startswith("ProfilerStep#"))
    if steps != sorted(f["step_ranges"]):
        problems.append(f"steps {steps}")
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    ranges = [(e.get("pid"), e.get("tid"), float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev
              if e.get("cat") == "user_annotation" and e.get("name") == ANNOTATION and e.get("ph") == "X"]

    def inside(e):
        t = float(e["ts"])
        return any(p == e.get("pid") and tid == e.get("tid") and s <= t <= x for p, tid, s, x in ranges)

    count = lambda name: sum(1 for e in ops if e["name"] == name)  # noqa: E731
    softmax_in = sum(1 for e in ops if e["name"] == "aten::softmax" and inside(e))
    sdpa = count("aten::scaled_dot_product_attention")
    sdpa_inner = {n: count(n) for n in FUSED_OPS if count(n)}
    any_private = sum(1 for e in ops if e["name"].startswith("aten::_scaled_dot_product_"))
    math = count("aten::_scaled_dot_product_attention_math")
    kernels = [e["name"] for e in ev if e.get("cat") == "kernel"]
    fused_kernels = sorted({k[:70] for k in kernels if any(s in k.lower() for s in ("flash", "fmha", "cudnn", "sdpa"))
                            and "gemm" not in k.lower()})
    n_fwd = f["expected"]["forward_calls"]
    n_bwd = f["expected"]["backward_calls"]
    if f["attn_implementation"] == "eager":
        if softmax_in != n_fwd:
            problems.append(f"aten::softmax inside {ANNOTATION}: {softmax_in}, expected {n_fwd}")
        if count("aten::_softmax_backward_data") != n_bwd:
            problems.append(f"aten::_softmax_backward_data {count('aten::_softmax_backward_data')}, expected {n_bwd}")
        if sdpa or any_private:
            problems.append(f"SDPA ops on the eager rank: {sdpa} + {any_private}")
        summary = (f"eager: aten::softmax inside {ANNOTATION} {softmax_in}, _softmax_backward_data "
                   f"{count('aten::_softmax_backward_data')}, SDPA ops {sdpa + any_private}")
    else:
        if sdpa != n_fwd:
            problems.append(f"aten::scaled_dot_product_attention {sdpa}, expected {n_fwd}")
        if sum(sdpa_inner.values()) != n_fwd or math:
            problems.append(f"fused SDPA ops {sdpa_inner}, math {math}")
        if not fused_kernels:
            problems.append("no fused attention kernel")
        if softmax_in:
            problems.append(f"aten::softmax inside {ANNOTATION} on an SDPA rank: {softmax_in}")
        bwd = {n + "_backward": count(n + "_backward") for n in FUSED_OPS if count(n + "_backward")}
        summary = (f"sdpa: aten::scaled_dot_product_attention {sdpa} -> "
                   f"{ {FUSED_OPS[n]: c for n, c in sdpa_inner.items()} }, backward {bwd}; kernels {fused_kernels[:3]}")
    comm = sorted({e["name"] for e in ev if e.get("cat") in ("cpu_op", "user_annotation")
                   and ("gloo" in e["name"].lower() or "all_reduce" in e["name"].lower()
                        or "allreduce" in e["name"].lower())})
    return problems, dict(steps=len(steps), annotation_ranges=len(ranges), summary=summary, comm_ops=comm[:6],
                          info=info)


def check_record_trace(path, f):
    """An attnprof record rank trace, by its kernels and NVTX ranges (it has no CPU ops): the steps
    recorded, fused attention kernels on the SDPA ranks and none on the eager rank, whose softmax
    kernels are one a forward call (the loss's log_softmax not counted)."""
    d = json.load(gzip.open(path, "rt"))
    ev = d["traceEvents"]
    problems = []
    steps = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == STEP_RANGE]
    if len(steps) != ACTIVE:
        problems.append(f"{len(steps)} NVTX '{STEP_RANGE}' ranges, expected {ACTIVE}")
    kernels = [e["name"] for e in ev if e.get("cat") == "kernel"]
    fused = sorted({k[:70] for k in kernels if any(x in k.lower() for x in ("flash", "fmha", "cudnn", "sdpa"))
                    and "gemm" not in k.lower()})
    softmax = sum(1 for k in kernels if "softmax" in k.lower() and "logsoftmax" not in k.lower().replace("_", "")
                  and "backward" not in k.lower())
    if f["attn_implementation"] == "eager":
        if fused:
            problems.append(f"fused attention kernels on the eager rank: {fused[:2]}")
        if softmax != f["expected"]["forward_calls"]:
            problems.append(f"{softmax} softmax forward kernels, expected {f['expected']['forward_calls']}")
    elif not fused:
        problems.append("no fused attention kernel")
    return problems, dict(steps=len(steps), annotation_ranges=0, info={"rank": f["rank"], "world_size": WORLD,
                                                                        "backend": "gloo (from the facts)"},
                          summary=f"{len(kernels)} kernels; fused {fused[:2]}; softmax forward kernels {softmax}",
                          comm_ops=[])


def check(d):
    record = os.path.exists(os.path.join(d, "facts_record.json"))
    fx = json.load(open(os.path.join(d, "facts_record.json" if record else "facts.json")))
    bad = 0
    for f in fx["traces"]:
        p = os.path.join(d, f["trace"])
        if not os.path.exists(p):
            bad += 1
            print(f"BAD  {f['trace']}: missing")
            continue
        problems, s = (check_record_trace if record else check_trace)(p, f)
        bad += bool(problems)
        print(f"{'ok  ' if not problems else 'BAD '} {f['trace']} ({os.path.getsize(p) // 1024} KiB): rank "
              f"{s['info'].get('rank')}/{s['info'].get('world_size')} {s['info'].get('backend')}, "
              f"{s['steps']} steps, {s['annotation_ranges']} {ANNOTATION} ranges; {s['summary']}")
        print(f"      comm ops: {s['comm_ops']}")
        for x in problems:
            print(f"      problem: {x}")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--check")
    ap.add_argument("--sync", choices=["auto", "ddp", "manual"], default="auto")
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--rank", type=int)
    ap.add_argument("--init")
    ap.add_argument("--tracer", choices=["torch.profiler", "attnprof record"], default="torch.profiler",
                    help="attnprof record: run under `attnprof record --capture-range nvtx:step` (gpu_ranks.sh)")
    a = ap.parse_args()
    if a.list:
        json.dump(dict(job=job_facts(a.tracer), traces=[facts(r, a.tracer) for r in range(WORLD)]), sys.stdout, indent=1)
        print()
        return 0
    if a.check:
        return check(a.check)
    if not a.out:
        ap.error("--out DIR (or --list, --check DIR)")
    if a.rank is not None:
        run_rank(a.rank, a.out, a.init, a.sync, a.tracer)
        return 0
    return run_job(a.out, a.sync, a.timeout, a.tracer)


if __name__ == "__main__":
    sys.exit(main())
