"""`attnprof diff DIR_A DIR_B`: two runs of one job compared rank by rank, on the 4-rank DDP job traced on
the H200 (tests/data/ranks, facts.json: rank 2 builds its model with eager attention, the others with SDPA;
rank 3 runs 4x the batch). The second run is the same job with the programs of ranks 0 and 2 exchanged
(each trace's distributedInfo rank rewritten): there rank 2 runs SDPA and rank 0 eager, so rank 2's
dispatch goes eager -> SDPA and its eager findings go, rank 0's come, and the set of step spans is the same."""

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RANKS = ROOT / "tests" / "data" / "ranks"
FACTS = json.loads((RANKS / "facts.json").read_text())["job"]
CLI = [sys.executable, "-m", "attnprof"]


def diff(*args):
    r = subprocess.run([*CLI, "diff", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def relabelled(src: Path, dst: Path, rank: int):
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"]["rank"] = rank
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    first, second = tmp_path_factory.mktemp("run1"), tmp_path_factory.mktemp("run2")
    traces = {r: RANKS / t for r, t in zip(FACTS["ranks"], FACTS["traces"])}
    for r, t in traces.items():
        shutil.copy(t, first / t.name)
    odd, usual = FACTS["dispatch_differs_rank"], 0
    for r, t in traces.items():
        source = {odd: traces[usual], usual: traces[odd]}.get(r, t)
        relabelled(source, second / t.name, r)
    return first, second


def test_the_same_run_has_no_change(runs):
    first, _ = runs
    rc, out, _ = diff("--json", "--fail-on", "regression", str(first), str(first))
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "ranks_diff" and not doc["gate"]["regression"]
    assert [p["rank"] for p in doc["ranks"]] == FACTS["ranks"]
    assert not any(p["dispatch_changed"] or p["findings_fixed"] or p["findings_new"] for p in doc["ranks"])
    assert doc["before"]["dispatch_differs"] == [FACTS["dispatch_differs_rank"]]


def test_ranks_that_exchange_programs(runs):
    first, second = runs
    odd = FACTS["dispatch_differs_rank"]
    rc, out, err = diff("--json", "--fail-on", "regression", str(first), str(second))
    doc = json.loads(out)
    by = {p["rank"]: p for p in doc["ranks"]}
    # rank 2 now runs what rank 0 ran (SDPA), rank 0 what rank 2 ran (eager).
    assert by[odd]["dispatch_changed"] and by[0]["dispatch_changed"]
    assert by[odd]["after"]["dispatch"] == by[0]["before"]["dispatch"] != by[odd]["before"]["dispatch"]
    assert by[0]["after"]["dispatch"] == by[odd]["before"]["dispatch"]
    assert not by[1]["dispatch_changed"] and not by[3]["dispatch_changed"]
    assert by[odd]["findings_fixed"] and set(by[odd]["findings_fixed"]) == set(by[0]["findings_new"])
    assert doc["after"]["dispatch_differs"] == [0]
    # The same four programs: the job's step (its slowest rank's) is unchanged, the gate fails on rank 0's
    # new attention findings alone.
    assert doc["before"]["job_step_ms"] == doc["after"]["job_step_ms"]
    reasons = doc["gate"]["reasons"]
    assert rc == 1 and doc["gate"]["regression"]
    assert reasons and all(r.startswith("rank 0: a new attention finding") for r in reasons), reasons
    rc, text, _ = diff(str(first), str(second))
    assert rc == 0 and f"rank {odd} dispatches attention differently" in text
    rc, md, _ = diff("--markdown", str(first), str(second))
    assert rc == 0 and md.startswith("### attnprof diff: 4 ranks") and "| rank | step ms |" in md


def test_a_rank_in_one_run_only_and_bad_input(runs, tmp_path):
    first, _ = runs
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    for t in FACTS["traces"][:3]:
        shutil.copy(first / t, fewer / t)
    rc, out, _ = diff("--json", str(first), str(fewer))
    doc = json.loads(out)
    assert rc == 0 and [p["rank"] for p in doc["ranks"] if p["after"] is None] == [3]
    rc, _, err = diff(str(first), str(first / FACTS["traces"][0]))
    assert rc == 2 and "is a folder and" in err and len(err.strip().splitlines()) == 1
    rc, _, err = diff("--html", str(tmp_path / "d.html"), str(first), str(first))
    assert rc == 2 and "--html compares two traces" in err and not (tmp_path / "d.html").exists()
    bad = tmp_path / "bad"
    shutil.copytree(first, bad)
    (bad / FACTS["traces"][1]).write_bytes(b"{\"traceEvents\": [")  # a truncated rank trace
    rc, out, err = diff(str(first), str(bad))
    assert rc == 2 and FACTS["traces"][1] in err and "1 trace unread" in out


def test_the_document_follows_the_schema(runs):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "schema" / "attnprof.schema.json").read_text())
    first, second = runs
    for args in ([], ["--fail-on", "regression"]):
        _, out, _ = diff("--json", *args, str(first), str(second))
        jsonschema.Draft202012Validator(schema).validate(json.loads(out))


def test_doctor_dir_html_draws_each_ranks_median_step(runs, tmp_path):
    """doctor DIR --html: a row per rank and its median step as a strip of 120 bins (the JSON's
    median_step_strip): rank 2 (eager attention, unfused) shows attention in more of its step than any
    other rank, and rank 3 (4x the batch) computes in more of it."""
    first, _ = runs
    page = tmp_path / "job.html"
    r = subprocess.run([*CLI, "doctor", "--json", "--html", str(page), str(first)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    strips = {x["rank"]: x["median_step_strip"] for x in doc["ranks"]}
    assert all(len(s) == 120 and set(s) <= set(".canmCANM") for s in strips.values())
    odd, slow = FACTS["dispatch_differs_rank"], FACTS["slowest_rank"]
    attention = {r_: sum(c in "aA" for c in s) for r_, s in strips.items()}  # eager: the most attention time
    assert attention[odd] == max(attention.values()) and list(attention.values()).count(attention[odd]) == 1
    compute = {r_: sum(c in "cC" for c in s) for r_, s in strips.items()}
    assert compute[slow] == max(compute.values()) and list(compute.values()).count(compute[slow]) == 1
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert html.count("aria-label=\"median step of rank") == len(FACTS["ranks"])
    # The page never overwrites a trace of the job.
    trace = first / FACTS["traces"][0]
    before = trace.read_bytes()
    r = subprocess.run([*CLI, "doctor", "--html", str(trace), str(first)], capture_output=True, text=True)
    assert r.returncode == 2 and "--html" in r.stderr and trace.read_bytes() == before


def test_diff_many_and_the_mcp_diff_are_the_clis_document(runs):
    """attnprof.diff_many (on a thread pool, as a Dask executor would run it) and the MCP server's diff on
    two folders give the document `attnprof diff DIR_A DIR_B --json` prints."""
    import concurrent.futures

    import attnprof

    first, second = runs
    _, out, _ = diff("--json", "--fail-on", "regression", str(first), str(second))
    want = json.loads(out)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert attnprof.diff_many(first, second, executor=pool, regression_pct=10) == want
    pytest.importorskip("mcp")
    from attnprof import mcp as server

    sess = server.Session(server.Roots([str(first.parent)]))
    got = sess.diff(str(first), str(second), "regression", None, None)
    assert got["report"] == want and got["regression"] is True
    with pytest.raises(server.ToolInputError, match="is a folder and the other is not"):
        sess.diff(str(first), str(second / FACTS["traces"][0]), None, None, None)
