"""The answer on the first screen (issue 37): on every trace the tests read, the text report's first 25
lines (a 100-column terminal) hold the step's figures and the first fix with what it is worth, and
`doctor --brief` is that screen alone: at most 25 lines, the same fixes in the same order as --json.
`doctor --markdown` carries the same fixes and findings as tables whose rows keep their columns."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "attnprof"]
TRACES = sorted(
    [str(p) for p in (ROOT / "examples" / "traces").glob("*.json")]
    + [str(p) for d in ("", "corpus", "steps", "regimes") for p in (ROOT / "tests" / "data" / d).glob("*.json.gz")]
)


def out(*args):
    r = subprocess.run([*CLI, "doctor", *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_there_are_traces():
    assert len(TRACES) > 50


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: Path(p).name)
def test_the_first_screen_carries_the_answer(trace):
    doc = json.loads(out("--json", trace))
    first = out(trace).splitlines()[:25]
    brief = out("--brief", trace).splitlines()
    assert len(brief) <= 25, "\n".join(brief)
    assert all(len(line) <= 100 for line in brief[1:]), max(brief[1:], key=len)  # [0]: the trace's path
    # (A trace with no GPU kernels, or not CUDA's, says so instead: nothing to diagnose.)
    if doc["step"] is not None and doc["gpu_kernels"] > 0 and not doc["unsupported"]:
        assert any(line.startswith("Step: ") for line in first)
        assert any(line.startswith("Step: ") for line in brief)
    if doc["fixes"]:
        assert any(line.lstrip().startswith("1. step ") for line in first), "\n".join(first)
        # The fixes, numbered in --json's order (five at most, the rest counted).
        numbered = [int(m.group(1)) for line in brief if (m := re.match(r"\s+(\d+)\. step ", line))]
        assert numbered == list(range(1, min(5, len(doc["fixes"])) + 1))
        if len(doc["fixes"]) > 5:
            assert any(f"({len(doc['fixes']) - 5} more fix" in line for line in brief)
    ids = {f["id"] for f in doc["findings"]}
    text = " ".join(brief)
    assert all(i in text for i in ids), (ids, text)


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: Path(p).name)
def test_grouped_shares_add_up(trace):
    """A cause inside the unfused calls (fp32-upcast, safe-softmax, ... of the same region) is part of
    unfused-attention, and says so; the rest of each region's findings share its GPU time without
    counting it twice (gpu-idle's share is of wall time)."""
    doc = json.loads(out("--json", trace))
    findings = doc["findings"]
    text = out(trace)
    share = {}
    for i, f in enumerate(findings):
        p = f["part_of"]
        if p is not None:
            parent = findings[p]
            assert parent["id"] == "unfused-attention" and parent["region"] == f["region"] and f["scope"] == "attention"
            assert f"{i + 1}. [{f['severity']}] {f['id']} ({f['scope']}): " in text
            assert f", part of unfused-attention (#{p + 1})" in text
        elif f["id"] != "gpu-idle":
            share[f["region"]] = share.get(f["region"], 0) + f["share"]
    assert all(v <= 1.005 for v in share.values()), share


def tables(markdown):
    """Each Markdown table as its rows of cells (the header first, the --- line left out)."""
    out, rows = [], []
    for line in markdown.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= {"-"} and c for c in cells):
                rows.append(cells)
        elif rows:
            out.append(rows)
            rows = []
    return out


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: Path(p).name)
def test_markdown_carries_the_fixes_and_findings(trace):
    doc = json.loads(out("--json", trace))
    md = out("--markdown", trace)
    assert md.startswith("### attnprof doctor: ")
    found = tables(md)
    for t in found:
        assert all(len(row) == len(t[0]) for row in t), t
    by_header = {t[0][1] if t[0][0] == "#" else t[0][0]: t[1:] for t in found}
    fixes = by_header.get("fix", [])
    assert [r[1] for r in fixes] == [f["title"].replace("|", "\\|") for f in doc["fixes"]]
    findings = by_header.get("finding", [])
    assert [r[0].strip("`") for r in findings] == [f["id"] for f in doc["findings"]]


def test_brief_is_the_text_reports_alone():
    trace = str(ROOT / "examples" / "traces" / "sdpa_math.json")
    for other in ("--json", "--replay", "--markdown"):
        r = subprocess.run([*CLI, "doctor", "--brief", other, trace], capture_output=True, text=True)
        assert r.returncode == 2 and "--brief" in r.stderr and len(r.stderr.strip().splitlines()) <= 2, r.stderr
