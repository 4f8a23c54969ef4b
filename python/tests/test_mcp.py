"""`attnprof mcp` end to end: the server started as a subprocess (python -m attnprof.mcp) and driven over
stdio by the MCP SDK's client, on real traces (H200 SDPA math and flash, the HTA control trace, a
Hugging Face corpus trace, the 4-rank DDP job) copied into a scratch folder that is the server's root.
Every answer is checked against the CLI's --json (or --markdown) on the same file."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.types import ListRootsResult, Root  # noqa: E402

from attnprof import mcp as server  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TRACES = {
    "math.json": ROOT / "examples" / "traces" / "sdpa_math.json",
    "flash.json": ROOT / "examples" / "traces" / "sdpa_flash.json",
    "control.json.gz": DATA / "trace_diff__control__control.json.gz",
    "gpt2_train.json.gz": DATA / "corpus" / "gpt2_eager_bf16_train.json.gz",
}
CLI = [sys.executable, "-m", "attnprof"]
TOOLS = {"doctor", "check", "diff", "attention_calls", "kernels", "replay", "bench"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("mcp-root")
    for name, src in TRACES.items():
        shutil.copy(src, d / name)
    (d / "ranks").mkdir()
    for f in sorted((DATA / "ranks").glob("ddp_llama_rank*.json.gz")):
        shutil.copy(f, d / "ranks" / f.name)
    (d / "notes.json").write_text("hello\n")
    os.symlink(TRACES["math.json"], d / "outside_link.json")  # a link inside the root to a file outside it
    return d


def cli_json(*args):
    out = subprocess.run([*CLI, *args], capture_output=True, text=True)
    return out.returncode, (json.loads(out.stdout) if out.stdout.strip().startswith("{") else out.stdout), out.stderr


def ask(folder, questions, client_roots=None, mode="auto"):
    """Runs `questions(client)` against a server started with --root folder; returns what it returns."""

    async def list_roots(_ctx):
        return ListRootsResult(roots=[Root(uri=Path(p).as_uri()) for p in client_roots])

    async def run():
        params = StdioServerParameters(command=sys.executable, args=["-m", "attnprof.mcp", "--root", str(folder)])
        async with Client(params, mode=mode, list_roots_callback=list_roots if client_roots else None) as c:
            return await questions(c)

    return anyio.run(run)


def error_text(result):
    assert result.is_error, result
    return " ".join(c.text for c in result.content)


def test_tools_listed_with_typed_inputs_outputs_and_costs(folder):
    async def q(c):
        return (await c.list_tools()).tools

    tools = ask(folder, q)
    assert {t.name for t in tools} == TOOLS
    for t in tools:
        assert t.input_schema["type"] == "object" and t.output_schema is not None, t.name
        assert t.description and "roots" not in t.input_schema.get("properties", {}), t.name
    by = {t.name: t for t in tools}
    assert by["doctor"].input_schema["required"] == ["path"]
    assert "300 MB trace" in by["doctor"].description and "Cheap" in by["kernels"].description
    assert set(by["bench"].input_schema["required"]) == {"batch", "heads", "seq", "head_dim"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026-07-28 protocol, and the handshake before it
def test_doctor_check_diff_answer_as_the_cli(folder, mode):
    paths = {n: str(folder / n) for n in ("math.json", "flash.json", "control.json.gz", "gpt2_train.json.gz")}

    async def q(c):
        out = {}
        for n, p in paths.items():
            out[("doctor", n)] = await c.call_tool("doctor", {"path": p})
        out["brief"] = await c.call_tool("doctor", {"path": paths["math.json"], "brief": True})
        for n in ("math.json", "flash.json"):
            out[("check", n)] = await c.call_tool("check", {"path": paths[n], "fail_on": ["attention"]})
        out["diff"] = await c.call_tool("diff", {"before": paths["math.json"], "after": paths["flash.json"]})
        out["diff-gate"] = await c.call_tool(
            "diff", {"before": paths["flash.json"], "after": paths["math.json"], "fail_on": "regression"}
        )
        out["ranks"] = await c.call_tool("doctor", {"path": str(folder / "ranks")})
        return out

    got = ask(folder, q, mode=mode)
    for n, p in paths.items():
        r = got[("doctor", n)]
        assert not r.is_error, r
        rc, doc, _ = cli_json("doctor", "--json", p)
        got_doc = r.structured_content["report"]
        # The kernel table is cut to the top 20 by GPU time (the kernels tool has them all).
        assert rc == 0 and got_doc == dict(doc, kernels=doc["kernels"][:20]), n
        assert r.structured_content["kernels_left_out"] == max(0, len(doc["kernels"]) - 20), n
        markdown = cli_json("doctor", "--markdown", p)[1]
        assert r.structured_content["markdown"] == markdown and r.content[0].text == markdown, n

    brief = got["brief"].structured_content
    assert brief["markdown"] == cli_json("doctor", "--brief", paths["math.json"])[1]
    _, full, _ = cli_json("doctor", "--json", paths["math.json"])
    assert brief["report"]["step"] == full["step"] and brief["report"]["fixes"] == full["fixes"]
    assert got[("doctor", "gpt2_train.json.gz")].structured_content["kernels_left_out"] > 0  # 59 kernels
    assert [f["id"] for f in brief["report"]["findings"]] == [f["id"] for f in full["findings"]]

    for n in ("math.json", "flash.json"):
        r = got[("check", n)].structured_content
        rc, _, err = cli_json("doctor", "--json", "--fail-on", "attention", paths[n])
        assert r["passed"] == (rc == 0), n
        # the CLI's verdict: "attnprof: --fail-on: 5 findings: unfused-attention (attention), ..."
        m = re.search(r"--fail-on: \d+ findings?: (.*)", err)
        listed = m.group(1).strip().split(", ") if rc == 1 else []
        assert [f"{f['id']} ({f['scope']})" for f in r["caught"]] == listed, n
    # SDPA math is the study's program: its attention findings fail the gate; flash is one fused kernel.
    assert not got[("check", "math.json")].structured_content["passed"]

    rc, doc, _ = cli_json("diff", "--json", paths["math.json"], paths["flash.json"])
    assert rc == 0 and got["diff"].structured_content["report"] == doc
    assert got["diff"].structured_content["regression"] is None
    rc, doc, _ = cli_json("diff", "--json", "--fail-on", "regression", paths["flash.json"], paths["math.json"])
    gate = got["diff-gate"].structured_content
    assert gate["report"] == doc and gate["regression"] is True and rc == 1  # flash -> math: slower

    rc, doc, _ = cli_json("doctor", "--json", str(folder / "ranks"))
    assert got["ranks"].structured_content["report"] == doc
    assert got["ranks"].structured_content["markdown"] == cli_json("doctor", "--markdown", str(folder / "ranks"))[1]


def test_follow_up_questions(folder):
    p = str(folder / "math.json")

    async def q(c):
        return [
            await c.call_tool("attention_calls", {"path": p}),
            await c.call_tool("kernels", {"path": p, "category": "gemm"}),
            await c.call_tool("kernels", {"path": p, "limit": 2}),
            await c.call_tool("kernels", {"path": p, "category": "gemms"}),
        ]

    calls, gemms, top, bad = ask(folder, q)
    _, doc, _ = cli_json("doctor", "--json", p)
    assert calls.structured_content["calls"] == doc["attention"]
    assert [g["attention"] for g in calls.structured_content["per_region"]] == [g["attention"] for g in doc["groups"]]
    want = sorted((k for k in doc["kernels"] if k["category"] == "gemm"), key=lambda k: -k["total_ms"])
    assert gemms.structured_content["kernels"] == want and want
    assert "fill/mask" in gemms.structured_content["categories"]
    assert len(top.structured_content["kernels"]) == 2 and top.structured_content["more"] == len(doc["kernels"]) - 2
    assert "category 'gemms'" in error_text(bad) and "fused-attention" in error_text(bad)


def test_bad_input_is_a_tool_error_and_the_server_goes_on(folder, tmp_path):
    outside = tmp_path / "elsewhere.json"
    shutil.copy(TRACES["math.json"], outside)

    async def q(c):
        return [
            await c.call_tool("doctor", {"path": str(folder / "missing.json")}),
            await c.call_tool("doctor", {"path": str(folder / "notes.json")}),
            await c.call_tool("doctor", {"path": str(outside)}),
            await c.call_tool("doctor", {"path": "../" + outside.parent.name + "/elsewhere.json"}),
            await c.call_tool("doctor", {"path": str(folder / "outside_link.json")}),
            await c.call_tool("check", {"path": str(folder / "math.json"), "fail_on": ["slowness"]}),
            await c.call_tool("diff", {"before": "math.json", "after": "flash.json", "fail_on": "regression:x"}),
            await c.call_tool("doctor", {"path": ""}),
            await c.call_tool("doctor", {"path": "math.json"}),  # relative: in the root; still answers
        ]

    *bad, good = ask(folder, q)
    for args, r in zip(
        (["missing.json"], ["notes.json"]), bad[:2]
    ):  # the CLI's own one-line message for the same file
        rc, _, err = cli_json("doctor", "--json", str(folder / args[0]))
        assert rc == 2 and err.strip().removeprefix("attnprof: ") in error_text(r)
    for r in bad[2:5]:
        assert "outside the folders this server may read" in error_text(r)
    assert "slowness" in error_text(bad[5])
    assert "regression:x" in error_text(bad[6])
    assert "path: empty" in error_text(bad[7])
    assert not good.is_error and good.structured_content["report"]["trace"].endswith("math.json")
    assert (folder / "notes.json").read_text() == "hello\n"  # nothing written


def test_the_clients_roots_bound_the_paths(folder):
    inner = folder / "ranks"

    async def q(c):
        return [
            await c.call_tool("doctor", {"path": str(inner / "ddp_llama_rank0.json.gz")}),
            await c.call_tool("doctor", {"path": str(folder / "math.json")}),  # in --root, not in the client's roots
        ]

    for mode in ("auto", "legacy"):
        ok, refused = ask(folder, q, client_roots=[inner], mode=mode)
        assert not ok.is_error, mode
        assert "outside the folders" in error_text(refused) and str(inner) in error_text(refused), mode


def test_links_in_a_rank_folder_and_clients_without_local_roots(folder, tmp_path):
    linked = folder / "linked_ranks"
    linked.mkdir(exist_ok=True)
    for f in sorted((DATA / "ranks").glob("ddp_llama_rank*.json.gz")):  # links to traces outside the root
        if not (linked / f.name).exists():
            os.symlink(f, linked / f.name)

    async def q(c):
        return [await c.call_tool("doctor", {"path": str(linked)})]

    (refused,) = ask(folder, q)
    assert "outside the folders this server may read" in error_text(refused)

    async def q2(c):
        return [await c.call_tool("doctor", {"path": str(folder / "math.json")})]

    for roots in (["file://otherhost/srv/traces"], ["file://relative/path"]):  # nothing local: nothing allowed
        (r,) = ask_with_uris(folder, q2, roots)
        assert "the client declared no local folders as roots" in error_text(r), roots


def ask_with_uris(folder, questions, uris):
    async def list_roots(_ctx):
        return ListRootsResult(roots=[Root(uri=u) for u in uris])

    async def run():
        params = StdioServerParameters(command=sys.executable, args=["-m", "attnprof.mcp", "--root", str(folder)])
        async with Client(params, list_roots_callback=list_roots) as c:
            return await questions(c)

    return anyio.run(run)


def test_a_rank_folder_is_read_again_when_a_trace_in_it_changes(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    for f in sorted((DATA / "ranks").glob("ddp_llama_rank*.json.gz")):
        shutil.copy(f, job / f.name)
    sess = server.Session(server.Roots([str(tmp_path)]))
    first = sess.doctor(str(job), None, False, None)
    assert sess.doctor(str(job), None, False, None) == first and sess.cache.reads == 1
    rank1 = job / "ddp_llama_rank1.json.gz"
    shutil.copy(DATA / "ranks" / "ddp_llama_rank0.json.gz", rank1)  # the folder's own mtime does not change
    os.utime(rank1, ns=(os.stat(rank1).st_atime_ns, os.stat(rank1).st_mtime_ns + 1_000_000))
    with pytest.raises(server.ToolInputError, match="rank 0"):  # two traces of rank 0: not one job
        sess.doctor(str(job), None, False, None)


def test_a_trace_being_read_blocks_only_the_questions_on_it(tmp_path):
    import threading

    cache = server.TraceCache(4)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    cache.get((str(b), ""), [str(b)], lambda: "b")
    release, started = threading.Event(), threading.Event()

    def slow():
        started.set()
        assert release.wait(30)
        return "a"

    t = threading.Thread(target=lambda: cache.get((str(a), ""), [str(a)], slow))
    t.start()
    assert started.wait(30)
    assert cache.get((str(b), ""), [str(b)], lambda: "never") == "b"  # answers while a is being read
    release.set()
    t.join(30)
    assert cache.get((str(a), ""), [str(a)], lambda: "never") == "a" and cache.reads == 2


def test_replay_and_bench_without_a_gpu_say_where_to_run(folder):
    sess = server.Session(server.Roots([str(folder)]))
    if sess.gpu() is None:
        pytest.skip("this machine has a GPU: replay and bench would run (their GPU runs are not tested here)")

    async def q(c):
        return [
            await c.call_tool("replay", {"path": str(folder / "gpt2_train.json.gz")}),
            await c.call_tool("bench", {"batch": 2, "heads": 32, "kv_heads": 8, "seq": 4096, "head_dim": 128}),
        ]

    rep, bench = ask(folder, q)
    r = rep.structured_content
    assert not r["ran"] and r["text"].startswith("No GPU here (") and "attnprof doctor --replay" in r["text"]
    assert r["report"]["shapes"] and "attnprof bench" in r["text"]
    b = bench.structured_content
    assert not b["ran"] and b["command"].startswith("attnprof bench -b 2 --heads 32 -s 4096 -d 128")
    assert "--kv-heads 8" in b["command"] and b["text"].endswith(b["command"])


def test_each_trace_is_read_once_until_it_changes(folder, tmp_path):
    t = tmp_path / "t.json"
    shutil.copy(TRACES["math.json"], t)
    sess = server.Session(server.Roots([str(tmp_path)]), cache_size=2)
    first = sess.doctor(str(t), None, False, None)
    sess.attention_calls(str(t), None, None)
    sess.kernels(str(t), None, 10, None, None)
    assert sess.cache.reads == 1
    shutil.copy(TRACES["flash.json"], t)  # another trace under the same name: read again
    os.utime(t, ns=(os.stat(t).st_atime_ns, os.stat(t).st_mtime_ns + 1_000_000))
    second = sess.doctor(str(t), None, False, None)
    assert sess.cache.reads == 2 and second["report"]["attention"] != first["report"]["attention"]
    bounded = server.Session(server.Roots([str(folder)]), cache_size=2)
    for n in ("math.json", "flash.json", "control.json.gz", "flash.json"):  # the least recently asked leaves
        bounded.doctor(str(folder / n), None, True, None)
    assert bounded.cache.reads == 3 and [Path(k[0]).name for k in bounded.cache._items] == ["control.json.gz", "flash.json"]


def test_without_the_sdk_it_says_what_to_install():
    code = "import sys; sys.modules['mcp'] = None; sys.argv = ['attnprof', 'mcp']; import attnprof.__main__ as m; m.main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr == server.INSTALL_HINT + "\n"
