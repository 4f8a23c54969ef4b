"""`attnprof mcp` / `python -m attnprof.mcp`: attnprof as a Model Context Protocol server over stdio.

An agent asks doctor, diff, check, replay and bench questions through typed tools and gets the
report as Markdown beside the `--json` document, so it never parses a trace itself. Each trace is
read once per session (a bounded cache keyed by path, region and the file's size and mtime); the
follow-up questions (attention_calls, kernels) answer from the cached analysis.

Paths are read only inside the allowed folders: the roots the client declares (clients on MCP
protocols before 2026-07-28 declare them), and the server's own `--root DIR` options; with neither,
the folder the server was started in. Nothing is written. Bad input comes back as a tool error
carrying the CLI's one-line message, never as a crash of the server.

Needs the MCP SDK: pip install "attnprof[mcp]".
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _core
from ._cli import binary
from ._ranks import summaries as _rank_summaries
from ._replay import replay as _replay
from ._report import Diff, Report

INSTALL_HINT = "attnprof mcp: the MCP server needs the MCP SDK: pip install \"attnprof[mcp]\""

# `attnprof diff --fail-on`'s gates: regression[:PCT], step-regression[:PCT], attention-regression[:PCT].
_DIFF_GATES = {"regression": "auto", "step-regression": "step", "attention-regression": "attention"}


class ToolInputError(ValueError):
    """A tool's input is bad (outside the roots, not a trace, a bad option): the message is one line."""


# ---------------------------------------------------------------------------------------------------
# What the tools do, without the SDK: a session's roots, its cache, and one function per tool. The
# server below wraps these; python/tests/test_mcp.py drives them through the SDK's client.


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


class Roots:
    """The folders a session may read: a path must lie inside every boundary given (the server's --root
    folders; the client's roots, where it declares them). With neither, the folder the server started
    in, unless that is / or the home folder (MCP clients often start servers there): then nothing."""

    def __init__(self, server_roots: Sequence[str]):
        self.server = [os.path.realpath(r) for r in server_roots]
        cwd = os.path.realpath(os.getcwd())
        self.fallback = [] if cwd in ("/", os.path.realpath(os.path.expanduser("~"))) else [cwd]

    @staticmethod
    def client_folders(uris: Sequence[str]) -> List[str]:
        """The client's roots as folders: absolute file:// URIs only (others allow nothing local)."""
        out = []
        for uri in uris:
            u = urllib.parse.urlparse(uri)
            path = urllib.parse.unquote(u.path)
            if u.scheme == "file" and u.netloc in ("", "localhost") and os.path.isabs(path) and "\0" not in path:
                out.append(os.path.realpath(path))
        return out

    def resolve(self, path: str, client: Optional[List[str]]) -> str:
        """The real path of `path` (a relative one: in the first allowed folder), or ToolInputError.
        `client`: the client's root folders ([] allows nothing), None where it declares no roots."""
        if not isinstance(path, str) or not path.strip():
            raise ToolInputError("path: empty; give a trace file (.json, .json.gz) or a folder of rank traces")
        if "\0" in path:
            raise ToolInputError(f"{path!r}: a path with a NUL character")
        boundaries = [b for b in (self.server or None, client) if b is not None] or [self.fallback]
        for folders in boundaries:
            if not folders:
                raise ToolInputError(
                    f"{path}: no folder to read from: "
                    + (
                        "the client declared no local folders as roots"
                        if folders is client
                        else "start the server with --root DIR (it started in / or the home folder)"
                    )
                )
        full = os.path.realpath(os.path.join(boundaries[0][0], os.path.expanduser(path)))
        for folders in boundaries:
            if not any(_inside(full, f) for f in folders):
                raise ToolInputError(f"{path}: outside the folders this server may read ({', '.join(folders)})")
        return full


def _stamp(paths: Sequence[str]) -> Optional[Tuple]:
    """What says the files changed: each one's size and mtime (None when one cannot be read)."""
    try:
        return tuple((p, st.st_size, st.st_mtime_ns) for p in paths for st in (os.stat(p),))
    except OSError:
        return None


class TraceCache:
    """Analysed traces of the session, the least recently asked dropped first (`size` of them kept),
    read again when a file of theirs changed (size or mtime). A trace being read blocks only the
    questions on that trace; the others answer meanwhile."""

    def __init__(self, size: int):
        self.size = max(1, size)
        self._items: "collections.OrderedDict[Tuple[str, str], Tuple[Tuple, Any]]" = collections.OrderedDict()
        self._lock = threading.Lock()  # guards _items and _loading
        self._loading: Dict[Tuple[str, str], threading.Lock] = {}
        self.reads = 0  # traces read (a cache miss each): the tests see the cache work through it

    def get(self, key: Tuple[str, str], files: Sequence[str], load: Callable[[], Any]) -> Any:
        stamp = _stamp(files)
        if stamp is None:
            return load()  # not cached: the reader names what is wrong, as the CLI does
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] == stamp:
                self._items.move_to_end(key)
                return hit[1]
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:  # two questions on a new trace read it once
            with self._lock:
                hit = self._items.get(key)
                if hit is not None and hit[0] == stamp:
                    return hit[1]
            value = load()
            with self._lock:
                self.reads += 1
                self._items[key] = (stamp, value)
                self._items.move_to_end(key)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
                self._loading.pop(key, None)
            return value


def _brief_document(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The first screen's figures of a doctor document: the step, the fixes, the attention, the findings' heads."""
    keep = ("schema_version", "trace", "device", "unsupported", "gpu_kernels", "step", "fixes", "attention")
    out = {k: doc[k] for k in keep if k in doc}
    out["findings"] = [
        {k: f[k] for k in ("id", "scope", "severity", "time_ms", "title")} for f in doc.get("findings", [])
    ]
    return out


def _capped(doc: Dict[str, Any], instances: int, kernels: int) -> Tuple[Dict[str, Any], int, int]:
    """The document with its per-instance rows (`regions`, `step.steps`) cut to the first `instances`
    and its kernel table (by GPU time) to the first `kernels`: a long trace has thousands of rows, a
    real model hundreds of kernels, megabytes no reader wants. Returns how many rows of each were left out."""
    left = 0
    out = dict(doc)
    if len(doc.get("regions") or ()) > instances:
        left += len(doc["regions"]) - instances
        out["regions"] = doc["regions"][:instances]
    step = doc.get("step")
    if step is not None and len(step.get("steps") or ()) > instances:
        left += len(step["steps"]) - instances
        out["step"] = dict(step, steps=step["steps"][:instances])
    kernels_left = max(0, len(doc.get("kernels") or ()) - kernels)
    if kernels_left:
        out["kernels"] = doc["kernels"][:kernels]
    return out, left, kernels_left


def _finding_heads(report: Report, indices: Sequence[int]) -> List[Dict[str, Any]]:
    return [
        {"id": f.id, "scope": f.scope, "severity": f.severity, "time_ms": f.time_ms, "title": f.message}
        for f in (report.findings[i] for i in indices)
    ]


def _diff_gate(fail_on: Optional[str]) -> Tuple[Optional[float], str]:
    """`fail_on` of the diff tool, read as `attnprof diff --fail-on` reads it: (percent or None, metric)."""
    if fail_on is None or fail_on == "":
        return None, "auto"
    m = re.fullmatch(r"([a-z-]+)(?::(.*))?", fail_on.strip())
    if m is None or m.group(1) not in _DIFF_GATES:
        raise ToolInputError(
            f"fail_on '{fail_on}': expected regression[:PCT], step-regression[:PCT] or attention-regression[:PCT]"
        )
    pct = _core.default_regression_pct
    if m.group(2) is not None:
        try:
            pct = float(m.group(2))
        except ValueError:
            pct = -1.0
        if not (0 <= pct < 1e6):
            raise ToolInputError(f"fail_on '{fail_on}': PCT must be a number >= 0 (the growth per step allowed)")
    return pct, _DIFF_GATES[m.group(1)]


class Session:
    """The tools' work for one server: reads inside the roots, through the cache."""

    def __init__(self, roots: Roots, cache_size: int = 4, cli: Optional[str] = None):
        self.roots = roots
        self.cache = TraceCache(cache_size)
        self.cli = cli or str(binary())
        self._gpu = threading.Lock()

    # -- reading --------------------------------------------------------------------------------
    def report(self, path: str, region: Optional[str]) -> Report:
        def load() -> Report:
            try:
                return Report(_core.Doctor(path, region or ""))
            except _core.InputError as e:
                raise ToolInputError(str(e)) from None

        return self.cache.get((path, region or ""), [path], load)

    def _ranks(self, folder: str, region: Optional[str], client: Optional[List[str]]) -> List[str]:
        try:
            files = _core.job_traces(folder)
        except _core.InputError as e:
            raise ToolInputError(str(e)) from None
        if not files:
            raise ToolInputError(f"{folder}: no traces in this folder (.json, .json.gz)")
        files = [self.roots.resolve(f, client) for f in files]  # a link out of the roots is refused

        def load() -> List[str]:
            # Threads, not processes: the reader releases the GIL, and forking a threaded server is unsafe.
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(files), os.cpu_count() or 1)) as pool:
                try:
                    return _rank_summaries(files, executor=pool, region=region)
                except _core.InputError as e:
                    raise ToolInputError(str(e)) from None

        return self.cache.get((folder, "ranks:" + (region or "")), files, load)

    # -- the tools ------------------------------------------------------------------------------
    def doctor(
        self,
        path: str,
        region: Optional[str],
        brief: bool,
        client: Optional[List[str]],
        instances: int = 20,
        kernels: int = 20,
    ) -> Dict[str, Any]:
        for name, v in (("instances", instances), ("top_kernels", kernels)):
            if v < 0:
                raise ToolInputError(f"{name} {v}: expected 0 or more rows kept")
        full = self.roots.resolve(path, client)
        if os.path.isdir(full):
            summaries = self._ranks(full, region, client)
            try:
                return {
                    "markdown": _core.ranks_report(summaries, "markdown"),
                    "report": json.loads(_core.ranks_report(summaries, "json")),
                    "instances_left_out": 0,
                    "kernels_left_out": 0,
                }
            except _core.InputError as e:
                raise ToolInputError(str(e)) from None
        r = self.report(full, region)
        doc, left, kernels_left = _capped(_brief_document(r.document) if brief else r.document, instances, kernels)
        return {
            "markdown": r.brief() if brief else r.to_markdown(),
            "report": doc,
            "instances_left_out": left,
            "kernels_left_out": kernels_left,
        }

    def check(self, path: str, fail_on: List[str], region: Optional[str], client: Optional[List[str]]) -> Dict[str, Any]:
        full = self.roots.resolve(path, client)
        if os.path.isdir(full):
            raise ToolInputError(f"{path}: a folder; check takes one trace (doctor on the folder reports its ranks)")
        items = [part.strip() for item in fail_on for part in item.split(",") if part.strip()]
        if not items:
            raise ToolInputError("fail_on: empty; give finding ids, scopes (attention, model), severities or any")
        r = self.report(full, region)
        try:
            caught = r._engine.caught(items)
        except _core.InputError as e:
            raise ToolInputError(str(e)) from None
        reason = None
        if r.unsupported:
            reason = f"the trace was not diagnosed: {r.unsupported}"
        elif r.document["gpu_kernels"] == 0:
            reason = "the trace has no GPU kernels"
        found = _finding_heads(r, caught)
        return {"passed": reason is None and not found, "caught": found, "not_checked": reason}

    def diff(
        self, before: str, after: str, fail_on: Optional[str], region: Optional[str], client: Optional[List[str]]
    ) -> Dict[str, Any]:
        pct, metric = _diff_gate(fail_on)
        full = [self.roots.resolve(p, client) for p in (before, after)]
        folders = [os.path.isdir(f) for f in full]
        if any(folders):  # two runs of a job, rank by rank
            if not all(folders):
                raise ToolInputError(
                    f"{before if folders[0] else after} is a folder and the other is not: give two traces, or two "
                    "folders of rank traces (two runs of one job)"
                )
            a_runs, b_runs = (self._ranks(f, region, client) for f in full)
            try:
                doc = json.loads(_core.ranks_diff(a_runs, b_runs, pct, "json", metric))
                return {
                    "markdown": _core.ranks_diff(a_runs, b_runs, pct, "markdown", metric),
                    "regression": None if doc["gate"] is None else doc["gate"]["regression"],
                    "report": doc,
                }
            except _core.InputError as e:
                raise ToolInputError(str(e)) from None
        a, b = (self.report(f, region) for f in full)
        try:
            d = Diff(a._engine, b._engine, pct, metric)
            return {"markdown": d.to_markdown(), "regression": d.regression, "report": d.document}
        except _core.InputError as e:
            raise ToolInputError(str(e)) from None

    def attention_calls(self, path: str, region: Optional[str], client: Optional[List[str]]) -> Dict[str, Any]:
        r = self.report(self.roots.resolve(path, client), region)
        doc = r.document
        return {
            "trace": doc["trace"],
            "step": None if doc["step"] is None else {k: v for k, v in doc["step"].items() if k != "steps"},
            "calls": doc["attention"],
            "per_region": [
                {"name": g["name"], "instances": g["instances"], "attention": g["attention"]} for g in doc["groups"]
            ],
        }

    def kernels(
        self, path: str, category: Optional[str], limit: int, region: Optional[str], client: Optional[List[str]]
    ) -> Dict[str, Any]:
        r = self.report(self.roots.resolve(path, client), region)
        rows = r.document["kernels"]
        present = sorted({k["category"] for k in rows})
        if category:
            if category not in _core.kernel_categories:
                raise ToolInputError(f"category '{category}': not one of {', '.join(_core.kernel_categories)}")
            rows = [k for k in rows if k["category"] == category]
        if limit < 1:
            raise ToolInputError(f"limit {limit}: expected 1 or more kernels")
        rows = sorted(rows, key=lambda k: -k["total_ms"])
        return {"trace": r.trace, "categories": present, "kernels": rows[:limit], "more": max(0, len(rows) - limit)}

    def replay(
        self,
        path: str,
        shape: Optional[str],
        causal: Optional[bool],
        region: Optional[str],
        client: Optional[List[str]],
        timeout_s: float = 600,
    ) -> Dict[str, Any]:
        full = self.roots.resolve(path, client)
        with self._gpu:  # one GPU run at a time: two would time each other
            try:
                rep = _replay(full, shape=shape, causal=causal, region=region, timeout=timeout_s)
            except _core.InputError as e:
                raise ToolInputError(str(e)) from None
        text = str(rep)
        if rep.not_run:
            cmd = ["attnprof", "doctor", "--replay", full] + (["--shape", shape] if shape else [])
            cmd += ([] if causal is None else ["--causal" if causal else "--no-causal"]) + (
                ["--region", region] if region else []
            )
            text = f"No GPU here ({rep.not_run}): run this where there is one: {shlex.join(cmd)}\n" + text
        return {"ran": rep.device is not None, "text": text, "report": rep.document["replay"]}

    def gpu(self) -> Optional[str]:
        """None where this machine can run CUDA programs, else why not (`attnprof bench --list` says)."""
        out = subprocess.run([self.cli, "bench", "--list"], capture_output=True, text=True, timeout=60)
        for line in out.stdout.splitlines():
            if line.startswith("cuda: none here"):
                return line.removeprefix("cuda: none here").strip().removeprefix("(").removesuffix(")")
        return None if out.returncode == 0 else (out.stderr.strip() or f"attnprof bench --list exited {out.returncode}")

    def bench(self, args: List[str], timeout_s: float = 600) -> Dict[str, Any]:
        command = shlex.join(["attnprof", "bench", *args])
        why = self.gpu()
        if why is not None:
            return {
                "ran": False,
                "command": command,
                "text": f"No GPU here ({why}): run this where there is one: {command}",
                "report": None,
            }
        with self._gpu, tempfile.TemporaryDirectory(prefix="attnprof-mcp-") as tmp:
            doc = os.path.join(tmp, "bench.json")
            try:
                out = subprocess.run(
                    [self.cli, "bench", *args, "--device", "cuda", "--json-file", doc],
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                )
            except subprocess.TimeoutExpired:
                raise ToolInputError(f"{command}: stopped after {timeout_s:g} s (timeout_s)") from None
            if out.returncode != 0:
                raise ToolInputError(
                    out.stderr.strip().removeprefix("attnprof: ") or f"attnprof bench exited {out.returncode}"
                )
            with open(doc, encoding="utf-8") as f:
                report = json.load(f)
        return {"ran": True, "command": command, "text": out.stdout, "report": report}


def bench_args(
    batch: int,
    heads: int,
    seq: int,
    head_dim: int,
    kv_heads: Optional[int],
    kv_seq: Optional[int],
    dtype: str,
    causal: bool,
    bottom_right: bool,
    pass_: str,
    impl: Optional[List[str]],
) -> List[str]:
    """The `attnprof bench` options of one shape (the CLI checks them when it runs)."""
    args = ["-b", str(batch), "--heads", str(heads), "-s", str(seq), "-d", str(head_dim), "--dtype", dtype]
    if kv_heads is not None:
        args += ["--kv-heads", str(kv_heads)]
    if kv_seq is not None:
        args += ["--kv-seq", str(kv_seq)]
    args.append("--causal" if causal else "--no-causal")
    if bottom_right:
        args.append("--bottom-right")
    args += ["--pass", pass_]
    if impl:
        args += ["--impl", ",".join(impl)]
    return args


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        prog="attnprof mcp",
        description="attnprof as a Model Context Protocol server over stdio (doctor, check, diff, attention_calls, "
        "kernels, replay, bench).",
    )
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the tools may read (repeatable); the client's roots also bound them; "
        "with neither, the folder the server starts in",
    )
    parser.add_argument("--cache", type=int, default=4, metavar="N", help="analysed traces kept in memory (default 4)")
    args = parser.parse_args(argv)
    for r in args.root:
        if not os.path.isdir(r):
            parser.exit(2, f"attnprof mcp: --root {r}: not a folder\n")
    if args.cache < 1:
        parser.exit(2, f"attnprof mcp: --cache {args.cache}: expected 1 or more traces\n")
    try:
        from ._mcp_server import build_server
    except ImportError:
        parser.exit(2, INSTALL_HINT + "\n")
    build_server(Session(Roots(args.root), args.cache)).run("stdio")


if __name__ == "__main__":  # python -m attnprof.mcp: run it as attnprof.mcp, the module _mcp_server imports
    from attnprof.mcp import main as _main

    _main()
