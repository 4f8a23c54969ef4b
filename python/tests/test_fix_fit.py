"""Fixes that fit the model (issue 37), from how each program was built: the unfused-attention fix says
is_causal=True only where the calls are causal, on every corpus program (facts.json: an encoder such as
BERT is not causal, on eager attention and on SDPA math, traced by torch.profiler and by attnprof record);
DDP's bucket copies get gradient_as_bucket_view=True on every rank of a job made without it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "attnprof"]
FACTS = json.loads((ROOT / "tests" / "data" / "corpus" / "facts.json").read_text())
UNFUSED = [f for f in FACTS if f["expected"]["implementation"] in ("unfused", "sdpa-math")]

# What the fix says when it takes the calls for causal.
CAUSAL_WORDS = ("pass is_causal=True instead of a materialized mask;", "is_causal=True for its causal mask")


def test_the_corpus_has_both_kinds():
    assert any(not f["shape"]["causal"] for f in UNFUSED) and any(f["shape"]["causal"] for f in UNFUSED)
    assert any(not f["shape"]["causal"] and f["expected"]["implementation"] == "sdpa-math" for f in UNFUSED)


@pytest.mark.parametrize("facts", UNFUSED, ids=lambda f: f["name"])
def test_is_causal_only_for_causal_calls(facts):
    r = subprocess.run([*CLI, "doctor", "--json", str(ROOT / "tests" / "data" / "corpus" / (facts["name"] + ".json.gz"))],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    fixes = [f["fix"] for f in json.loads(r.stdout)["findings"] if f["id"] == "unfused-attention"]
    assert fixes, "the program's unfused calls are a finding"
    for fix in fixes:
        if not facts["shape"]["causal"]:
            assert not any(w in fix for w in CAUSAL_WORDS), fix


RANKS = json.loads((ROOT / "tests" / "data" / "ranks" / "facts.json").read_text())["traces"]


@pytest.mark.parametrize("facts", RANKS, ids=lambda f: f["name"])
def test_ddp_bucket_copies_get_gradient_as_bucket_view(facts):
    assert facts["wrapper"].startswith("DistributedDataParallel(")
    assert facts["measured"]["ddp_logging"]["gradient_as_bucket_view"] == 0  # the default, as the job ran
    r = subprocess.run([*CLI, "doctor", "--json", str(ROOT / "tests" / "data" / "ranks" / facts["trace"])],
                       capture_output=True, text=True)
    copies = [f for f in json.loads(r.stdout)["findings"] if f["id"] == "hidden-copy"
              and any("copy_bucket_to_grad" in e["what"] for e in f["evidence"][:1])]
    assert copies, "the reducer's bucket copies lead a hidden-copy finding"
    assert all("gradient_as_bucket_view=True" in f["fix"] for f in copies)

