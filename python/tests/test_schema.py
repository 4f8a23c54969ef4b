"""docs/schema/attnprof.schema.json is the contract of every --json document: doctor's on every trace
the tests read, doctor DIR's (and doctor_many's) on the rank traces, diff's; and the per-step figures of
the JSON are the ones the Python API gives."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import attnprof

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "attnprof.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
CLI = [sys.executable, "-m", "attnprof"]
TRACES = sorted(
    [str(p) for p in (ROOT / "examples" / "traces").glob("*.json")]
    + [str(p) for d in ("", "corpus", "steps", "regimes", "ranks", "forms", "serving", "serving/grid") for p in (ROOT / "tests" / "data" / d).glob("*.json.gz")]
)


def run(*args):
    r = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_the_schema_is_a_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert len(TRACES) > 60


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: Path(p).name)
def test_doctor_json_follows_the_schema(trace):
    doc = run("doctor", "--json", trace)
    VALIDATOR.validate(doc)
    # The per-step figures of the JSON are the Python API's.
    report = attnprof.doctor(trace)
    if doc["step"] is None:
        assert report.step is None
    else:
        assert (report.step.span_ms, report.step.gpu_busy_ms, report.step.bound) == (
            doc["step"]["span_ms"],
            doc["step"]["gpu_busy_ms"],
            doc["step"]["bound"],
        )
    assert [f.id for f in report.fixes] == [f["id"] for f in doc["fixes"]]


def test_ranks_and_diff_json_follow_the_schema():
    VALIDATOR.validate(run("doctor", "--json", str(ROOT / "tests" / "data" / "ranks")))
    VALIDATOR.validate(attnprof.doctor_many(ROOT / "tests" / "data" / "ranks"))
    math, manual = (str(ROOT / "examples" / "traces" / f) for f in ("sdpa_math.json", "manual.json"))
    VALIDATOR.validate(run("diff", "--json", math, manual))
    VALIDATOR.validate(run("diff", "--json", "--fail-on", "regression", manual, math))


def test_the_schema_catches_a_changed_field():
    doc = run("doctor", "--json", str(ROOT / "examples" / "traces" / "sdpa_math.json"))
    doc["findings"][0]["time_ms"] = "5.0132"
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(doc)
    doc = run("doctor", "--json", str(ROOT / "examples" / "traces" / "sdpa_math.json"))
    del doc["step"]
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(doc)


@pytest.mark.parametrize(
    "trace",
    [
        "tests/data/steps/llama-large_eager_bf16_train.json.gz",  # training: forward and backward replayed
        "tests/data/steps/llama-small_sdpa-math_bf16_infer.json.gz",
        "tests/data/steps/llama-small_eager_bf16_infer_record.json.gz",  # no shapes: asked for
        "tests/data/serving/qwen2_sdpa_bf16_infer_generate.json.gz",  # generate(): a prefill and a decode shape
    ],
    ids=lambda p: Path(p).name,
)
def test_replay_json_follows_the_schema(trace):
    doc = run("doctor", "--replay", "--json", str(ROOT / trace))
    VALIDATOR.validate(doc)
    shapes = doc["replay"]["shapes"]
    assert shapes
    training = "train" in trace
    decode_shapes = 0
    for s in shapes:
        assert (s["backward_calls"] > 0) == training  # every forward of these programs has its backward in training
        # Bytes a call for the decode shape only (q_len 1 against the cache: generate()'s decode forwards).
        decode = s.get("q_len") == 1 and s["kv_len"] > 1
        decode_shapes += decode
        assert all((w["bytes_per_call"] is not None) == decode for w in s["rows"]), s["shape"]
        if training:
            assert "--pass backward" in s["command"]
    assert decode_shapes == ("generate" in trace)  # generate(): its decode calls are one shape

