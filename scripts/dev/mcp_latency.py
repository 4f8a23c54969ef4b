#!/usr/bin/env python3
"""How long `attnprof mcp` takes to answer on a large trace, beside the CLI on the same file
(BENCHMARKS.md, "The MCP server"): the CLI's `doctor --json` wall time (best of --runs), then, in one
server session over stdio, the first doctor question (it reads the trace), a second doctor question
and the follow-ups (attention_calls, kernels) on the cached analysis.

Run it in the environment that has attnprof[mcp] installed:
    build-pyvenv/bin/python scripts/dev/mcp_latency.py TRACE [--runs 3]
(scripts/dev/make_big_trace.py OUT.json --mb 300 makes a 300 MB trace from the real ones.)
"""

import argparse
import json
import os
import subprocess
import sys
import time

import anyio
from mcp import Client, StdioServerParameters


def cli_seconds(trace: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "attnprof", "doctor", "--json", trace], capture_output=True)
        best = min(best, time.perf_counter() - t)
        if out.returncode != 0:
            sys.exit(f"mcp_latency: attnprof doctor {trace} failed: {out.stderr.decode().strip()}")
    return best


async def server_seconds(trace: str) -> dict:
    folder = os.path.dirname(os.path.abspath(trace))
    params = StdioServerParameters(command=sys.executable, args=["-m", "attnprof.mcp", "--root", folder])
    out = {}
    async with Client(params) as c:
        for name, tool, args in (
            ("doctor (first: reads the trace)", "doctor", {"path": trace}),
            ("doctor (second)", "doctor", {"path": trace}),
            ("doctor brief (second)", "doctor", {"path": trace, "brief": True}),
            ("attention_calls", "attention_calls", {"path": trace}),
            ("kernels gemm", "kernels", {"path": trace, "category": "gemm"}),
        ):
            t = time.perf_counter()
            r = await c.call_tool(tool, args)
            out[name] = time.perf_counter() - t
            if r.is_error:
                sys.exit(f"mcp_latency: {tool} failed: {r.content[0].text}")
            # what travels: the text a model reads and the structured content
            out[name + " bytes"] = len(json.dumps(r.structured_content)) + sum(len(c.text) for c in r.content)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    mb = os.path.getsize(a.trace) / 1e6
    cli = cli_seconds(a.trace, a.runs)
    srv = anyio.run(server_seconds, os.path.abspath(a.trace))
    print(f"trace {a.trace}: {mb:.0f} MB")
    print(f"  CLI doctor --json (best of {a.runs}): {cli:.3f} s")
    for k, v in srv.items():
        if not k.endswith(" bytes"):
            print(f"  server {k}: {v:.3f} s ({v / cli:.2f}x the CLI), answer {srv[k + ' bytes'] / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
