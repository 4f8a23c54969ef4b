"""The Python package on a GPU machine with the real torch (scripts/gpu/python_gpu_check.sh runs it).

1. A Hugging Face Llama (random weights) profiled with on_trace_ready=attnprof.trace_handler: trace and
   report written; attnprof.check passes on SDPA flash and cuDNN and fails on SDPA math.
2. attnprof.attention against F.scaled_dot_product_attention in fp64 (bf16/fp16; odd lengths, q != kv,
   GQA/MQA, BHSD and BSHD memory, causal or not, custom scale), under torch.compile, its refusals; its
   gradients against fp64 autograd, beside SDPA's own bf16 backward's error, and under torch.compile.
3. Timing: attnprof.attention, SDPA flash and SDPA cuDNN on the same inputs, in one run, forward alone
   and forward + backward.
Prints PASS/FAIL lines and a table; exits 1 when a check failed.
"""

import contextlib
import math
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import attnprof

results = []


def record(ok, what):
    results.append((ok, what))
    print(("PASS " if ok else "FAIL ") + what, flush=True)


def hf_model_checks(work):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=512, intermediate_size=1024, num_hidden_layers=2, num_attention_heads=8,
                      num_key_value_heads=2, vocab_size=1000, max_position_embeddings=1024)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()
    ids = torch.randint(0, 1000, (2, 512), device="cuda")
    reports, paths = {}, {}
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("math", SDPBackend.MATH)):
        folder = os.path.join(work, name)
        handler = attnprof.trace_handler(folder, worker_name=name)
        try:
            with torch.no_grad(), sdpa_kernel(backend):
                model(ids)
        except RuntimeError as e:
            record(False, f"SDPA {name} cannot run this model here: {str(e)[:120]}")
            continue
        with torch.no_grad(), sdpa_kernel(backend):
            model(ids)  # warm-up
            with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                schedule=torch.profiler.schedule(wait=0, warmup=1, active=2), record_shapes=True,
                on_trace_ready=handler,
            ) as prof:
                for _ in range(3):
                    model(ids)
                    prof.step()
        traces = [f for f in os.listdir(folder) if f.endswith(".pt.trace.json.gz")]
        reports_written = [f for f in os.listdir(folder) if f.endswith(".attnprof.txt")]
        record(len(traces) == 1 and len(reports_written) == 1,
               f"trace_handler ({name}): wrote {traces} and {reports_written}")
        paths[name] = os.path.join(folder, traces[0])
        reports[name] = attnprof.doctor(paths[name])
    for name in ("flash", "cudnn"):
        if name not in reports:
            continue
        try:
            attnprof.check(reports[name], fail_on=["attention"])
            impls = {a.implementation for a in reports[name].attention}
            record(impls == {"fused"}, f"check passes on SDPA {name} (attention: {impls})")
        except attnprof.AttentionCheckError as e:
            record(False, f"check on SDPA {name} raised: {e}")
    try:
        attnprof.check(reports["math"], fail_on=["attention"])
        record(False, "check on SDPA math did not raise")
    except attnprof.AttentionCheckError as e:
        record("unfused-attention" in {f.id for f in e.findings}, f"check fails on SDPA math: {str(e)[:160]}")
    # The replay of the math trace on this GPU: the model's shape, math beside cuDNN and the fused kernel.
    r = attnprof.replay(paths["math"])
    s = r.shapes[0] if r.shapes else None
    record(r.device is not None and s is not None
           and s.dims == dict(batch=2, q_heads=8, kv_heads=2, q_len=512, kv_len=512, head_dim=64, causal=True,
                              bottom_right=False)
           and [w.implementation for w in s.rows] == ["math", "cudnn", "fused"]
           and all(w.ms_per_call for w in s.rows) and s.own_vs_traced is not None
           and abs(s.own_vs_traced - 1) <= 0.15,
           f"replay of the SDPA math trace: {s and s.shape}, math replayed at {s and s.own_vs_traced}x its traced "
           f"time, rows {s and [(w.implementation, w.ms_per_call, w.saving_ms_per_call) for w in s.rows]}")
    # Two layers, two active steps: 2 forward calls per step.
    (a,) = [a for a in reports["flash"].attention if a.pass_ == "forward"]
    record(a.calls == 2 * 2, f"flash trace: {a.calls} forward calls (2 layers x 2 steps)")


def reference(q, k, v, causal, scale, bottom_right=False):
    """SDPA in fp64 (math backend), GQA by repeating k and v. Bottom-right causal: a boolean mask with
    the diagonal shifted by Skv - Sq, and rows that see no key set to zero (SDPA's _safe_softmax)."""
    rep = q.shape[1] // k.shape[1]
    k64 = k.double().repeat_interleave(rep, dim=1)
    v64 = v.double().repeat_interleave(rep, dim=1)
    sq, skv = q.shape[2], k.shape[2]
    with sdpa_kernel(SDPBackend.MATH):
        if not bottom_right:
            return F.scaled_dot_product_attention(q.double(), k64, v64, is_causal=causal, scale=scale)
        mask = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril(diagonal=skv - sq)
        ref = F.scaled_dot_product_attention(q.double(), k64, v64, attn_mask=mask, scale=scale)
    ref[:, :, :max(0, sq - skv)] = 0
    return ref


def make(b, hq, hkv, sq, skv, d, dtype, layout):
    def t(h, s):
        if layout == "bshd":  # [B, S, H, D] memory, seen as [B, H, S, D]
            return torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2)
        return torch.randn(b, h, s, d, device="cuda", dtype=dtype)
    return t(hq, sq), t(hkv, skv), t(hkv, skv)


def attention_checks():
    cases = [(1, 2, 2, 17, 17, 64), (2, 4, 4, 1000, 1000, 128), (2, 8, 2, 300, 700, 64), (1, 4, 1, 777, 129, 128),
             (2, 3, 3, 128, 256, 64), (1, 16, 16, 2049, 2049, 128)]
    worst = 0.0
    n = 0
    for dtype in (torch.bfloat16, torch.float16):
        for layout in ("bhsd", "bshd"):
            for (b, hq, hkv, sq, skv, d) in cases:
                for causal in (False, True):
                    if causal and sq > skv:
                        continue  # top-left causal with more queries than keys leaves rows with no key
                    q, k, v = make(b, hq, hkv, sq, skv, d, dtype, layout)
                    scale = 0.3 if (sq == 777) else None
                    out = attnprof.attention(q, k, v, is_causal=causal, scale=scale)
                    ref = reference(q, k, v, causal, scale)
                    err = ((out.double() - ref).norm() / ref.norm()).item()
                    worst = max(worst, err)
                    n += 1
                    if err >= 1e-2:
                        record(False, f"attention {dtype} {layout} {(b, hq, hkv, sq, skv, d)} causal={causal}: "
                                      f"rel err {err:.2e}")
    record(worst < 1e-2, f"attnprof.attention matches SDPA in fp64 on {n} cases (worst rel err {worst:.2e})")

    # Bottom-right causal: KV-cache decode (one query), chunked prefill (Sq < Skv, GQA), Sq > Skv
    # (the first Sq - Skv queries see no key: zeros).
    worst = 0.0
    br = [(2, 8, 2, 1, 1000, 128, "bshd"), (1, 8, 2, 257, 2049, 64, "bhsd"), (2, 4, 1, 300, 700, 128, "bshd"),
          (1, 4, 4, 777, 129, 64, "bhsd")]
    for dtype in (torch.bfloat16, torch.float16):
        for (b, hq, hkv, sq, skv, d, layout) in br:
            q, k, v = make(b, hq, hkv, sq, skv, d, dtype, layout)
            out = attnprof.attention(q, k, v, is_causal=True, bottom_right=True)
            ref = reference(q, k, v, True, None, bottom_right=True)
            err = ((out.double() - ref).norm() / ref.norm()).item()
            zeros = bool((out[:, :, :max(0, sq - skv)] == 0).all())
            worst = max(worst, err)
            if err >= 1e-2 or not zeros:
                record(False, f"attention bottom-right {dtype} {layout} {(b, hq, hkv, sq, skv, d)}: rel err "
                              f"{err:.2e}, rows without keys zero: {zeros}")
    record(worst < 1e-2, f"attnprof.attention bottom-right matches SDPA's lower-right mask in fp64 on "
                         f"{2 * len(br)} cases (worst rel err {worst:.2e})")

    # A serving engine's cache: sequences of their own lengths in shuffled pages (block_table, seq_lens), one
    # query or a speculative few per sequence (bottom-right), against SDPA in fp64 on each sequence's keys.
    worst, n = 0.0, 0
    for (b, hq, hkv, sq, d, page, lens) in [(4, 32, 8, 1, 128, 16, [1000, 1, 4097, 300]),
                                           (3, 8, 1, 4, 64, 256, [777, 65, 2049]),
                                           (2, 16, 16, 1, 128, 64, [131, 8192])]:
        dtype = torch.bfloat16 if d == 128 else torch.float16
        pages_per_seq = -(-max(lens) // page)
        pool = b * pages_per_seq + 3
        kp = torch.randn(pool, page, hkv, d, device="cuda", dtype=dtype)
        vp = torch.randn_like(kp)
        table = torch.randperm(pool, device="cuda")[: b * pages_per_seq].view(b, pages_per_seq).int()
        seq_lens = torch.tensor(lens, device="cuda", dtype=torch.int32)
        q = torch.randn(b, hq, sq, d, device="cuda", dtype=dtype)
        out = attnprof.attention(q, kp, vp, is_causal=sq > 1, bottom_right=sq > 1, block_table=table,
                                 seq_lens=seq_lens)
        # the dense [1, Hkv, len, D] keys of each sequence, gathered through its table
        for i, n_keys in enumerate(lens):
            pages = table[i, : -(-n_keys // page)].long()
            k = kp[pages].reshape(-1, hkv, d)[:n_keys].transpose(0, 1).unsqueeze(0)
            v = vp[pages].reshape(-1, hkv, d)[:n_keys].transpose(0, 1).unsqueeze(0)
            ref = reference(q[i:i + 1], k, v, sq > 1, None, bottom_right=sq > 1)
            err = ((out[i:i + 1].double() - ref).norm() / ref.norm()).item()
            worst, n = max(worst, err), n + 1
            if err >= 1e-2:
                record(False, f"paged attention {(b, hq, hkv, sq, d)} page {page}, sequence {i} of {n_keys} keys: "
                              f"rel err {err:.2e}")
    record(worst < 1e-2, f"attnprof.attention on a paged cache (block_table, seq_lens) matches SDPA in fp64 on {n} "
                         f"sequences (worst rel err {worst:.2e})")

    # A call whose last round the kernel splits along the keys (the default's version 13: B4 H16 S4096
    # D128 full attention is 2048 tiles of 32 key blocks on 132 SMs): the op hands it scratch from
    # PyTorch's allocator, and the split output matches fp64.
    from attnprof import _cuda
    q, k, v = make(4, 16, 16, 4096, 4096, 128, torch.bfloat16, "bhsd")
    nbytes = _cuda.workspace_bytes(4, 16, 16, 4096, 4096, 128, False)
    out = attnprof.attention(q, k, v)
    ref = reference(q, k, v, False, None)
    err = ((out.double() - ref).norm() / ref.norm()).item()
    del ref
    split_note = "asks for the split tail's scratch" if torch.cuda.get_device_capability() == (9, 0) else \
        "not sm_90: no split"
    record(err < 1e-2 and (nbytes > 0) == (torch.cuda.get_device_capability() == (9, 0)),
           f"attnprof.attention B4 H16 S4096 D128 full: {split_note} ({nbytes} bytes), rel err {err:.2e}")

    # Eager calls skip the custom op's dispatch; under the profiler they go through it, so traces
    # still name the call attnprof::attention.
    q, k, v = make(2, 8, 2, 512, 512, 128, torch.bfloat16, "bshd")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        profiled = attnprof.attention(q, k, v, is_causal=True)
    names = {e.name for e in prof.events()}
    record("attnprof::attention" in names and torch.equal(profiled, attnprof.attention(q, k, v, is_causal=True)),
           "under torch.profiler the call is the op attnprof::attention, with the eager call's output")

    compiled = torch.compile(lambda q, k, v: attnprof.attention(q, k, v, is_causal=True) * 2.0, fullgraph=True)
    got = compiled(q, k, v)
    want = attnprof.attention(q, k, v, is_causal=True) * 2.0
    record(torch.equal(got, want), "attnprof.attention under torch.compile(fullgraph=True) matches eager")

    for what, call, kind in (
        ("fp32", lambda: attnprof.attention(q.float(), k.float(), v.float()), ValueError),
        ("CPU tensors", lambda: attnprof.attention(q.cpu(), k.cpu(), v.cpu()), ValueError),
        ("head dim 96", lambda: attnprof.attention(*make(1, 2, 2, 64, 64, 96, torch.bfloat16, "bhsd")), ValueError),
        ("3 kv heads for 8", lambda: attnprof.attention(*make(1, 8, 3, 64, 64, 64, torch.bfloat16, "bhsd")),
         ValueError),
    ):
        try:
            call()
            record(False, f"attention refuses {what}: it did not")
        except kind as e:
            record("\n" not in str(e), f"attention refuses {what}: {type(e).__name__}: {e}")
    backward_checks()


def grads_of(fn, q, k, v, d_out):
    """fn(q, k, v)'s gradients for the output gradient d_out."""
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    fn(q, k, v).backward(d_out)
    return q.grad, k.grad, v.grad


def backward_checks():
    """The gradients through the fused backward against fp64 autograd over SDPA math (GQA by repeated
    heads, so autograd sums the group's dK and dV), and SDPA's own bf16 backward (flash, else cuDNN) on
    the same inputs for scale: each of dQ, dK, dV within max(1.1x its error, 3e-3) of fp64."""
    cases = [(2, 4, 4, 113, 203, 64, False, False, "bhsd"), (1, 8, 2, 1024, 1024, 128, True, False, "bshd"),
             (2, 6, 1, 512, 256, 64, True, True, "bhsd"), (1, 4, 2, 256, 512, 128, True, True, "bshd"),
             (1, 4, 4, 1023, 1024, 128, False, False, "bhsd"), (2, 16, 4, 2048, 2048, 64, True, False, "bhsd")]
    worst = 0.0
    for dtype in (torch.bfloat16, torch.float16):
        for (b, hq, hkv, sq, skv, d, causal, br, layout) in cases:
            q, k, v = make(b, hq, hkv, sq, skv, d, dtype, layout)
            d_out = torch.randn(b, hq, sq, d, device="cuda", dtype=dtype)
            ours = grads_of(lambda q, k, v: attnprof.attention(q, k, v, is_causal=causal, bottom_right=br), q, k, v,
                            d_out)
            ref = grads_of(lambda q, k, v: reference(q, k, v, causal, None, bottom_right=br), q.double(), k.double(),
                           v.double(), d_out.double())
            rep = hq // hkv

            def sdpa(q, k, v):
                kr, vr = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
                if not br:
                    return F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)
                mask = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril(diagonal=skv - sq)
                return F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask)
            theirs = None
            for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
                try:
                    with sdpa_kernel(backend):
                        theirs = grads_of(sdpa, q, k, v, d_out)
                    break
                except RuntimeError:
                    continue
            errs = []
            for name, got, want, other in zip("qkv", ours, ref, theirs or (None,) * 3):
                err = ((got.double() - want).norm() / want.norm()).item()
                sdpa_err = ((other.double() - want).norm() / want.norm()).item() if other is not None else 0.0
                bound = max(1.1 * sdpa_err if math.isfinite(sdpa_err) else 0.0, 3e-3)
                errs.append((name, err, bound))
                worst = max(worst, err / bound)
            ok = all(e <= bnd for _, e, bnd in errs)
            record(ok, f"backward {dtype} {layout} {(b, hq, hkv, sq, skv, d)} causal={causal} bottom_right={br}: "
                       + ", ".join(f"d{n} {e:.2e} (bound {bnd:.2e})" for n, e, bnd in errs))
    # Under torch.compile: the op and its backward in one compiled graph, gradients as eager's.
    q, k, v = make(2, 8, 2, 512, 512, 128, torch.bfloat16, "bshd")
    d_out = torch.randn(2, 8, 512, 128, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(lambda q, k, v: attnprof.attention(q, k, v, is_causal=True) * 2.0, fullgraph=True)
    got = grads_of(compiled, q, k, v, d_out)
    want = grads_of(lambda q, k, v: attnprof.attention(q, k, v, is_causal=True) * 2.0, q, k, v, d_out)
    diff = max(((g.float() - w.float()).norm() / w.float().norm()).item() for g, w in zip(got, want))
    record(diff < 1e-3, f"attnprof.attention's backward under torch.compile(fullgraph=True) matches eager "
                        f"(largest relative difference {diff:.1e}: dQ's fp32 atomics add in any order)")
    # Eager training takes the op's bodies through a torch.autograd.Function (no custom op dispatch); under
    # the profiler the op runs, so traces name it. The same kernels: the gradients agree (dQ's fp32
    # atomics add in any order), and out takes q's BSHD layout, so transformers' transpose back is a view.
    qe, ke, ve = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    eager = attnprof.attention(qe, ke, ve, is_causal=True)
    eager_grads = torch.autograd.grad(eager, (qe, ke, ve), d_out, retain_graph=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        profiled = attnprof.attention(qe, ke, ve, is_causal=True)
        op_grads = torch.autograd.grad(profiled, (qe, ke, ve), d_out)
    nodes = (type(eager.grad_fn).__name__, type(profiled.grad_fn).__name__)
    diff = max(((g.float() - w.float()).norm() / w.float().norm()).item() for g, w in zip(eager_grads, op_grads))
    record(nodes[0] != nodes[1] and "attnprof" in nodes[1] and torch.equal(eager, profiled) and diff < 1e-3,
           f"eager training's autograd node {nodes[0]}, the profiled call's {nodes[1]}: outputs equal, gradients "
           f"within {diff:.1e}")
    record(eager.transpose(1, 2).is_contiguous() and not eager.is_contiguous(),
           f"out takes q's BSHD layout (strides {eager.stride()})")
    try:
        (g,) = torch.autograd.grad(attnprof.attention(qe, ke, ve, is_causal=True), (qe,), d_out, create_graph=True)
        g.sum().backward()
        record(False, "a double backward raises: it did not")
    except RuntimeError as e:
        record("\n" not in str(e), f"a double backward raises: {str(e)[:100]}")
    # A paged cache has no backward: the error says so.
    pool = torch.randn(8, 16, 2, 64, device="cuda", dtype=torch.bfloat16)
    table = torch.arange(8, device="cuda", dtype=torch.int32).reshape(2, 4)
    lens = torch.tensor([64, 40], device="cuda", dtype=torch.int32)
    qp = torch.randn(2, 4, 1, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    try:
        attnprof.attention(qp, pool, pool, block_table=table, seq_lens=lens).sum().backward()
        record(False, "backward on a paged cache raises: it did not")
    except RuntimeError as e:
        record("paged" in str(e) and "\n" not in str(e), f"backward on a paged cache raises: {str(e)[:100]}")


def timing():
    print("\nattnprof.attention vs F.scaled_dot_product_attention, bf16 BHSD, one run. Per call: CUDA events")
    print("around 20 back-to-back calls (the GPU's time when the host keeps up, as in a model), median of 15;")
    print("'1 call' is events around one call from an idle GPU (adds the host's per-call work).")
    print(f"{'shape':<30} {'attnprof':>9} {'flash':>8} {'cudnn':>8} {'vs flash':>8} {'vs cudnn':>8} "
          f"{'1 call: ours':>12} {'flash':>7}")
    shapes = [(8, 16, 16, 1024, 64, True), (4, 16, 16, 2048, 128, False), (2, 16, 16, 4096, 128, True),
              (32, 16, 16, 512, 128, True), (4, 32, 8, 2048, 128, True), (1, 16, 16, 16384, 128, True)]
    for (b, hq, hkv, s, d, causal) in shapes:
        q, k, v = make(b, hq, hkv, s, s, d, torch.bfloat16, "bhsd")
        kr, vr = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)

        def run(fn, burst, samples):
            ms = []
            for _ in range(samples):
                a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                a.record()
                for _ in range(burst):
                    fn()
                z.record()
                z.synchronize()
                ms.append(a.elapsed_time(z) / burst)
            return sorted(ms)[len(ms) // 2]

        def ours():
            return attnprof.attention(q, k, v, is_causal=causal)

        def sdpa():
            return F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)

        hot, single = [], []
        for fn, backend in ((ours, None), (sdpa, SDPBackend.FLASH_ATTENTION), (sdpa, SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                    for _ in range(5):
                        fn()
                    hot.append(run(fn, 20, 15))
                    single.append(run(fn, 1, 30))
            except RuntimeError:
                hot.append(float("nan"))
                single.append(float("nan"))
        name = f"B{b} H{hq}/{hkv} S{s} D{d}{' causal' if causal else ''}"
        print(f"{name:<30} {hot[0]:>9.3f} {hot[1]:>8.3f} {hot[2]:>8.3f} {hot[1] / hot[0]:>7.2f}x "
              f"{hot[2] / hot[0]:>7.2f}x {single[0]:>12.3f} {single[1]:>7.3f}", flush=True)


def training_timing():
    """Forward + backward per call (a training step's attention), ours against SDPA flash and cuDNN."""
    print("\nforward + backward, bf16 BHSD, CUDA events around 10 back-to-back calls, median of 9")
    print(f"{'shape':<30} {'attnprof':>9} {'flash':>8} {'cudnn':>8} {'vs flash':>8} {'vs cudnn':>8}")
    shapes = [(8, 16, 16, 1024, 64, True), (4, 16, 16, 2048, 128, False), (2, 32, 8, 4096, 128, True),
              (1, 16, 16, 16384, 128, True), (16, 12, 12, 512, 64, False)]
    for (b, hq, hkv, s, d, causal) in shapes:
        q, k, v = (t.requires_grad_(True) for t in make(b, hq, hkv, s, s, d, torch.bfloat16, "bhsd"))
        kr, vr = (t.detach().repeat_interleave(hq // hkv, 1).requires_grad_(True) for t in (k, v))
        d_out = torch.randn(b, hq, s, d, device="cuda", dtype=torch.bfloat16)

        def ours():
            attnprof.attention(q, k, v, is_causal=causal).backward(d_out)

        def sdpa():
            F.scaled_dot_product_attention(q, kr, vr, is_causal=causal).backward(d_out)

        ms = []
        for fn, backend in ((ours, None), (sdpa, SDPBackend.FLASH_ATTENTION), (sdpa, SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                    for _ in range(3):
                        fn()
                    samples = []
                    for _ in range(9):
                        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        torch.cuda.synchronize()
                        a.record()
                        for _ in range(10):
                            fn()
                        z.record()
                        z.synchronize()
                        samples.append(a.elapsed_time(z) / 10)
                    ms.append(sorted(samples)[len(samples) // 2])
            except RuntimeError:
                ms.append(float("nan"))
            q.grad = k.grad = v.grad = kr.grad = vr.grad = None
        name = f"B{b} H{hq}/{hkv} S{s} D{d}{' causal' if causal else ''}"
        print(f"{name:<30} {ms[0]:>9.3f} {ms[1]:>8.3f} {ms[2]:>8.3f} {ms[1] / ms[0]:>7.2f}x {ms[2] / ms[0]:>7.2f}x",
              flush=True)


def main():
    print(torch.__version__, torch.cuda.get_device_name(), "attnprof from", attnprof.__file__, flush=True)
    with tempfile.TemporaryDirectory() as work:
        hf_model_checks(sys.argv[1] if len(sys.argv) > 1 else work)
    attention_checks()
    timing()
    training_timing()
    failed = [w for ok, w in results if not ok]
    print(f"\n{len(results) - len(failed)} of {len(results)} checks passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
