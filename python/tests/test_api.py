"""The Python API on real traces (H200: SDPA math, hand-written and SDPA flash attention, three fwd
ranges each; Hugging Face programs from tests/data/corpus). Expectations come from how the programs
were built: SDPA math launches 20 kernels a forward, with the study's four causes; flash one kernel."""

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import attnprof

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"
CORPUS = ROOT / "tests" / "data" / "corpus"
MATH, MANUAL, FLASH = (str(TRACES / f) for f in ("sdpa_math.json", "manual.json", "sdpa_flash.json"))
CLI = [sys.executable, "-m", "attnprof"]


def cli(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True)


def test_doctor_on_sdpa_math():
    r = attnprof.doctor(MATH)
    assert [g.name for g in r.regions] == ["fwd"]
    assert r.regions[0].instances == 3
    (a,) = r.attention
    assert (a.implementation, a.pass_, a.calls, a.kernels_per_call) == ("sdpa-math", "forward", 3, 20.0)
    ids = {(f.id, f.scope) for f in r.findings}
    for cause in ("unfused-attention", "cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax"):
        assert (cause, "attention") in ids
    f = next(f for f in r.findings if f.id == "unfused-attention")
    assert f.severity == "high" and f.fix and 0 < f.after_fix_ms < f.time_ms
    assert r.device["name"] == "NVIDIA H200"


def test_why_sdpa_fell_back_to_math():
    # Falcon (multi_query) hands SDPA 1 K/V head against 16 query heads without enable_gqa:
    # tests/data/regimes/facts.json says how the program was built.
    regimes = ROOT / "tests" / "data" / "regimes"
    facts = next(f for f in json.loads((regimes / "facts.json").read_text()) if f["name"] == "falcon_sdpa_bf16_infer")
    r = attnprof.doctor(str(regimes / "falcon_sdpa_bf16_infer.json.gz"))
    (a,) = r.attention
    assert a.implementation == "sdpa-math" and a.calls == facts["expected"]["forward_calls"]
    ((calls, why),) = a.math_causes
    assert calls == a.calls
    shape = facts["shape"]
    assert f"k and v have {shape['kv_heads']} head against q's {shape['q_heads']}" in why and "enable_gqa" in why


def test_step_and_fixes():
    r = attnprof.doctor(MATH)
    assert r.step is not None and r.step.region == "fwd" and r.step.instances == 3
    assert abs(r.step.span_ms - r.step.gpu_busy_ms - r.step.idle_ms) < 0.002
    assert abs(sum(r.step.idle_split_ms.values()) - r.step.idle_ms) < 0.002
    (fused,) = [f for f in r.fixes if f.id == "fused-attention"]
    assert "unfused-attention" in fused.findings
    assert fused.step_ms_range[0] <= fused.step_ms <= fused.step_ms_range[1]
    assert fused.gpu_ms > 0 and fused.basis


def test_report_forms_match_the_cli():
    r = attnprof.doctor(MATH)
    assert r.to_json() == cli("doctor", "--json", MATH).stdout
    assert str(r) == cli("doctor", MATH).stdout
    assert json.loads(r.to_json())["schema_version"] == attnprof._core.json_schema_version == 4
    assert r.to_markdown() == cli("doctor", "--markdown", MATH).stdout
    assert "| `unfused-attention` | high | attention |" in r.to_markdown()
    assert r.brief() == cli("doctor", "--brief", MATH).stdout
    html = r._repr_html_()
    assert html.startswith("<!DOCTYPE html>") and 'class="timeline"' in html
    assert "<script" not in html


def test_console_script_and_module_are_the_same_cli():
    exe = shutil.which("attnprof", path=str(Path(sys.executable).parent))
    assert exe is not None
    a = subprocess.run([exe, "doctor", FLASH], capture_output=True, text=True)
    b = cli("doctor", FLASH)
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and "fused" in a.stdout


def test_check_is_a_gate():
    assert attnprof.check(FLASH).findings == ()
    with pytest.raises(attnprof.AttentionCheckError) as e:
        attnprof.check(MATH)
    assert {f.id for f in e.value.findings} == {
        "unfused-attention", "cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax"}
    assert "unfused-attention" in str(e.value)
    with pytest.raises(attnprof.AttentionCheckError) as e:
        attnprof.check(MATH, fail_on="mask-rebuilt")
    assert [f.id for f in e.value.findings] == ["mask-rebuilt"]
    # A fused training step: attention is clean, the model's own casts are not.
    train = str(CORPUS / "llama_sdpa-flash_bf16_train.json.gz")
    attnprof.check(train, fail_on=["attention"])
    with pytest.raises(attnprof.AttentionCheckError):
        attnprof.check(train, fail_on=["model"])


def test_check_by_severity_lists_exactly_what_the_cli_does():
    # A Llama training step with eager attention: unfused-attention forward and backward, of
    # different severities; the gate must list the ones at or above it, as the CLI does.
    train = str(CORPUS / "llama_eager_bf16_train.json.gz")
    for gate in ("high", "medium", "low", "attention,high"):
        r = cli("doctor", "--fail-on", gate, train)
        try:
            attnprof.check(train, fail_on=gate)
            caught = []
        except attnprof.AttentionCheckError as e:
            caught = e.findings
        if r.returncode == 0:
            assert caught == []
        else:
            assert r.returncode == 1
            listed = r.stderr.split(": ", 3)[3].strip()
            assert listed == ", ".join(f"{f.id} ({f.scope})" for f in caught), gate


def test_check_on_a_trace_it_cannot_read_does_not_pass():
    amd = str(ROOT / "tests" / "data" / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    with pytest.raises(attnprof.AttentionCheckError, match="nothing checked: the trace was not diagnosed"):
        attnprof.check(amd)
    r = cli("doctor", "--fail-on", "attention", amd)
    assert r.returncode == 1 and "nothing checked" in r.stderr


def test_cli_fail_on_exit_codes():
    assert cli("doctor", "--fail-on", "attention", FLASH).returncode == 0
    r = cli("doctor", "--fail-on", "attention", MATH)
    assert r.returncode == 1
    assert "--fail-on: 5 findings" in r.stderr
    bad = cli("doctor", "--fail-on", "bogus", MATH)
    assert bad.returncode == 2 and bad.stdout == ""


def test_bad_input_is_input_error_with_the_cli_message(tmp_path):
    cases = {
        "missing.json": None,
        "empty.json": b"",
        "text.json": b"this is not json",
        "cut.json": Path(MATH).read_bytes()[:50000],
    }
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(attnprof.InputError) as e:
            attnprof.doctor(path)
        assert isinstance(e.value, ValueError)
        r = cli("doctor", str(path))
        assert r.returncode == 2
        assert r.stderr == f"attnprof: {e.value}\n"
    with pytest.raises(attnprof.InputError) as e:
        attnprof.check(FLASH, fail_on=["bogus"])
    assert "--fail-on bogus: not a finding id" in str(e.value)
    with pytest.raises(TypeError):
        attnprof.doctor(42)


class FakeProfile:
    """What doctor() and trace_handler() use of a finished torch.profiler.profile."""

    def __init__(self, source):
        self.source = Path(source)

    def export_chrome_trace(self, path):
        data = self.source.read_bytes()
        if str(path).endswith(".gz"):
            data = gzip.compress(data)
        Path(path).write_bytes(data)


def test_doctor_of_a_profile_object():
    r = attnprof.doctor(FakeProfile(FLASH))
    assert r.trace == "<torch.profiler.profile>"
    assert r.attention[0].implementation == "fused"


def test_trace_handler_writes_trace_and_report(tmp_path, capsys):
    handler = attnprof.trace_handler(str(tmp_path), worker_name="w0")
    handler(FakeProfile(MATH))
    (trace,) = tmp_path.glob("w0.*.pt.trace.json.gz")
    base = str(trace)[: -len(".gz")]
    assert "unfused-attention" in Path(base + ".attnprof.txt").read_text()
    assert json.loads(Path(base + ".attnprof.json").read_text())["findings"]
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"attnprof: {trace}: attention ") and "sdpa-math" in line
    gate = attnprof.trace_handler(str(tmp_path / "gated"), use_gzip=False, fail_on=["attention"])
    gate(FakeProfile(FLASH))
    with pytest.raises(attnprof.AttentionCheckError):
        gate(FakeProfile(MATH))
    assert len(list((tmp_path / "gated").glob("*.pt.trace.json"))) == 2


def test_diff():
    d = attnprof.diff(MANUAL, MATH, regression_pct=10)
    assert d.regression is True
    assert d.reasons[0].startswith("the median step grew")  # both traces have steps with a CPU side
    assert d.document["gate"]["metric"] == "step"
    on_attention = attnprof.diff(MANUAL, MATH, regression_pct=10, gate_on="attention")
    assert on_attention.reasons[0].startswith("attention time per step grew")
    with pytest.raises(attnprof.InputError):
        attnprof.diff(MANUAL, MATH, regression_pct=10, gate_on="wall")
    (fwd,) = d.document["attention"]
    assert (fwd["before"]["implementation"], fwd["after"]["implementation"]) == ("unfused", "sdpa-math")
    ok = attnprof.diff(MATH, FLASH, regression_pct=10)
    assert ok.regression is False
    assert "| forward | sdpa-math | fused (FlashAttention) |" in ok.to_markdown()
    assert attnprof.diff(MATH, FLASH).regression is None
    for bad in (float("nan"), -1.0, float("inf")):
        with pytest.raises(attnprof.InputError):
            attnprof.diff(MATH, FLASH, regression_pct=bad)


def test_attention_refuses_cpu_tensors_clearly():
    torch = pytest.importorskip("torch")
    q = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="needs CUDA tensors"):
        attnprof.attention(q, q, q)


def test_attention_bottom_right_is_an_explicit_causal_option():
    # Checked before anything else (no torch needed): the alignment only means something when causal.
    with pytest.raises(ValueError, match="bottom_right=True needs is_causal=True"):
        attnprof.attention(None, None, None, bottom_right=True)


def test_replay_plans_each_shape_and_runs_where_there_is_a_gpu():
    # Llama (2 layers x 2 profiled forwards) on SDPA math: B=2, 8 query heads over 2 kv heads, S=512, D=64, causal.
    r = attnprof.replay(str(CORPUS / "llama_sdpa-math_bf16_infer.json.gz"))
    assert len(r.shapes) == 1
    s = r.shapes[0]
    assert s.calls == 4 and s.dtype == "bf16"
    # Causal top-left (square, is_causal=True as built): bottom_right False.
    assert s.dims == dict(
        batch=2, q_heads=8, kv_heads=2, q_len=512, kv_len=512, head_dim=64, causal=True, bottom_right=False
    )
    assert [w.implementation for w in s.rows] == ["math", "cudnn", "fused"] and s.rows[0].own
    if r.device is None:  # no GPU here: the command to run where there is one
        assert r.not_run and all(w.not_run == "no GPU here" for w in s.rows)
        assert "attnprof bench --timing hot --batch 2 --heads 8 --kv-heads 2 --seq 512" in s.command
    else:
        assert all(w.ms_per_call is not None for w in s.rows), [w.not_run for w in s.rows]
    assert "math" in str(r)


def test_replay_asks_for_a_shape_the_trace_does_not_say():
    # `attnprof record` traces have no record_shapes; the kernels give B x H x S and S_kv, not the head dim.
    trace = str(CORPUS / "gpt2_eager_bf16_infer_record.json.gz")
    s = attnprof.replay(trace).shapes[0]
    assert s.problem and "--shape" in s.problem and "B x H x S = 8192" in s.problem
    given = attnprof.replay(trace, shape=(2, 8, 512, 64), causal=True).shapes[0]
    assert given.problem is None and given.dims["head_dim"] == 64 and given.dims["causal"] is True
    assert "agrees with the kernels" in given.source
    with pytest.raises(attnprof.InputError, match="--shape '2,8,512': 3 fields, not 4"):
        attnprof.replay(trace, shape="2,8,512")


RANKS = ROOT / "tests" / "data" / "ranks"


def test_doctor_many_is_doctor_dir():
    """The 4-rank DDP job (tests/data/ranks/facts.json: rank 2 on eager attention, rank 3 with 4x the
    batch): the document from a process pool, from a thread pool, and the CLI's are the same."""
    facts = json.loads((RANKS / "facts.json").read_text())["job"]
    r = cli("doctor", "--json", str(RANKS))
    assert r.returncode == 0, r.stderr
    from_cli = json.loads(r.stdout)
    assert attnprof.doctor_many(RANKS) == from_cli
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        traces = sorted(str(p) for p in RANKS.glob("*_rank*.json.gz"))
        assert attnprof.doctor_many(traces, executor=pool) == from_cli
    cross = from_cli["cross_rank"]
    assert [d["ranks"] for d in cross["dispatch_differs"]] == [[facts["dispatch_differs_rank"]]]
    assert cross["slowest"]["rank"] == facts["slowest_rank"]
    assert [row["rank"] for row in from_cli["ranks"]] == [0, 1, 2, 3]


def test_doctor_many_on_a_dask_cluster():
    """The same document when a Dask LocalCluster's workers read the traces."""
    distributed = pytest.importorskip("distributed")
    r = cli("doctor", "--json", str(RANKS))
    assert r.returncode == 0, r.stderr
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            assert attnprof.doctor_many(RANKS, executor=client.get_executor()) == json.loads(r.stdout)


def test_doctor_many_bad_and_mixed(tmp_path):
    bad = tmp_path / "job_rank1.json"
    bad.write_text('{"traceEvents": [{"ph": "X", ')
    good = tmp_path / "job_rank0.json.gz"
    shutil.copy(RANKS / "ddp_llama_rank0.json.gz", good)
    doc = attnprof.doctor_many(tmp_path)
    rows = {row["trace"]: row for row in doc["ranks"]}
    assert "truncated" in rows[str(bad)]["error"]
    assert rows[str(good)]["error"] is None
    assert doc["cross_rank"]["bad_traces"] == 1
    with pytest.raises(attnprof.InputError, match="are both rank 0"):
        attnprof.doctor_many([good, good])


def test_prefill_and_decode_of_a_generate_program():
    """Qwen2 generate() (tests/data/serving/facts.json): per step one prefill and 15 decode forwards of
    2 layers, SDPA (cuDNN); decode entries carry the bytes a call moves and the bandwidth share."""
    facts = {f["name"]: f for f in json.loads((ROOT / "tests/data/serving/facts.json").read_text())}
    f = facts["qwen2_sdpa_bf16_infer_generate"]
    r = attnprof.doctor(str(ROOT / "tests/data/serving" / (f["name"] + ".json.gz")))
    by_phase = {a.phase: a for a in r.attention}
    assert set(by_phase) == {"prefill", "decode"}
    assert by_phase["prefill"].calls == f["expected"]["phases"]["prefill"]
    assert by_phase["decode"].calls == f["expected"]["phases"]["decode"]
    d, s = by_phase["decode"], f["shape"]
    kv = sum(f["expected"]["decode_kv_len"]) / 2
    implied = 2 * s["head_dim"] * (2 * s["batch"] * s["q_heads"] + 2 * s["batch"] * s["kv_heads"] * kv)  # bf16
    assert d.bytes_per_call == pytest.approx(implied, rel=0.05)
    assert 0 < d.bandwidth_share < 1
    assert by_phase["prefill"].bytes_per_call is None
    assert d.graph_calls == 0


def test_decode_replayed_from_a_cuda_graph_has_its_capture_shape():
    """The same Qwen2 with a static cache: generate() compiles the decode step, whose forwards replay a
    CUDA graph; the trace holds one capture, in its second step, so the replays after it have its shape:
    each decode call reads the whole cache (decode_kv_len)."""
    facts = {f["name"]: f for f in json.loads((ROOT / "tests/data/serving/facts.json").read_text())}
    f = facts["qwen2_sdpa_bf16_infer_generate_static"]
    r = attnprof.doctor(str(ROOT / "tests/data/serving" / (f["name"] + ".json.gz")))
    d = {a.phase: a for a in r.attention}["decode"]
    assert d.calls == f["expected"]["phases"]["decode"]
    assert d.graph_calls == d.calls and 0 < d.capture_shape_calls < d.calls  # the first step precedes the capture
    assert "capture" in d.shape["source"]
    assert (d.shape["q_len"], d.shape["kv_len"]) == (1, f["expected"]["decode_kv_len"][0])


def test_capture_trace_gives_the_replays_of_another_trace_their_shape():
    """That static-cache trace cut at its second step (tests/data/serving/graphs/README.md): the first
    part holds its first step's decode replays and no capture, the second the capture. Alone the first
    part's replays have no shape; with capture_trace, as `doctor --capture-trace`, each of its decode
    calls (one step's: the program's decode calls over its steps) has the capture's shape."""
    facts = {f["name"]: f for f in json.loads((ROOT / "tests/data/serving/facts.json").read_text())}
    f = facts["qwen2_sdpa_bf16_infer_generate_static"]
    graphs = ROOT / "tests/data/serving/graphs"
    replays, capture = graphs / "qwen2_static_step2_replays.json.gz", graphs / "qwen2_static_step3_capture.json.gz"
    alone = {a.phase: a for a in attnprof.doctor(replays).attention}
    assert all(a.capture_shape_calls == 0 for a in alone.values())
    d = {a.phase: a for a in attnprof.doctor(replays, capture_trace=capture).attention}["decode"]
    assert d.calls == f["expected"]["phases"]["decode"] // f["steps"]
    assert d.graph_calls == d.calls and d.capture_shape_calls == d.calls
    assert str(capture) in d.shape["source"]
    assert (d.shape["q_len"], d.shape["kv_len"]) == (1, f["expected"]["decode_kv_len"][0])
    with pytest.raises(attnprof.InputError, match="nothing.json"):
        attnprof.doctor(replays, capture_trace=graphs / "nothing.json")
