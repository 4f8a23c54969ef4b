#!/usr/bin/env python3
"""scripts/lab/fused_grid.py (issue 13's measurement) on the CPU: its case list is the issue's, its bench
commands interleave fused and cudnn, and its summary takes medians over runs and applies the issue's
bars, on result folders written in `attnprof bench --json-file`'s format."""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import sys
import tarfile
import tempfile
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("fused_grid", os.path.join(HERE, "..", "..", "scripts", "lab", "fused_grid.py"))
grid = importlib.util.module_from_spec(spec)
spec.loader.exec_module(grid)


def bench_json(fused_tflops, cudnn_tflops, fused_err=2.0e-3, cudnn_err=2.0e-3):
    def row(name, tflops, err):
        return {"name": name, "median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "runs": 20, "tflops": tflops,
                "pct_of_gemm": tflops / 8.0, "kernels": 1, "gemm_unit": "fused", "rel_error": err,
                "check_passed": True}
    return {"device": "NVIDIA H200", "on_gpu": True, "timing": "cold", "interleaved": True, "flops": 1.2e12,
            "impls": [row("fused", fused_tflops, fused_err), row("cudnn", cudnn_tflops, cudnn_err)]}


FAKE_ATTNPROF = '''#!/usr/bin/env python3
import json, sys, time
time.sleep(0.2)
out = sys.argv[sys.argv.index("--json-file") + 1]
row = {"median_ms": 1.0, "tflops": 100.0, "pct_of_gemm": 12.0, "rel_error": 2e-3, "check_passed": True}
json.dump({"flops": 1e11, "impls": [dict(row, name="fused"), dict(row, name="cudnn", tflops=90.0)]}, open(out, "w"))
'''


def run_args(attnprof, out, **kw):
    return argparse.Namespace(attnprof=attnprof, out=out, timing="cold", only="edge", repeats=0, flash=False,
                              deadline=kw.get("deadline", 0), resume=kw.get("resume", ""))


class FusedGrid(unittest.TestCase):
    def test_a_run_over_several_calls(self):
        # A call under a time limit: past --deadline no case starts and it says which are left; the next call
        # takes the first call's results with --resume and runs only the rest.
        edge = [grid.name(c) for c in grid.cases() if c["group"] == "edge"]
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "attnprof")
            with open(fake, "w") as f:
                f.write(FAKE_ATTNPROF)
            os.chmod(fake, 0o755)
            first, second = os.path.join(tmp, "call1"), os.path.join(tmp, "call2")
            with contextlib.redirect_stdout(io.StringIO()) as said:
                self.assertEqual(grid.run(run_args(fake, first, deadline=0.3)), 3)
            done = sorted(n[:-5] for n in os.listdir(first) if n.endswith(".json") and not n.endswith(".extra.json"))
            self.assertTrue(0 < len(done) < len(edge), done)
            self.assertIn(f"{len(edge) - len(done)} cases not run", said.getvalue())
            with contextlib.redirect_stdout(io.StringIO()) as said:
                self.assertEqual(grid.run(run_args(fake, second, resume=first)), 0)
            self.assertEqual(said.getvalue().count(f"from {first}"), len(done))
            self.assertEqual(said.getvalue().count(": done"), len(edge) - len(done))
            self.assertEqual(sorted(s["name"] for s in grid.summarize_dirs([second]) if s["runs"] == 1), sorted(edge))

    def test_the_issues_case_list(self):
        cs = grid.cases()
        groups = {}
        for c in cs:
            groups[c["group"]] = groups.get(c["group"], 0) + 1
        self.assertEqual(groups, {"grid": 30, "gqa": 5, "edge": 9, "fp16": 6})
        self.assertEqual(len({grid.name(c) for c in cs}), len(cs))
        gqa = [c for c in cs if c["group"] == "gqa"]
        self.assertTrue(all(c["layout"] == "bshd" and c["d"] == 128 and c["causal"] for c in gqa))
        self.assertEqual(sorted((c["h"], c["hkv"], c["s"]) for c in gqa),
                         [(16, 1, 2048), (32, 8, 2048), (32, 8, 8192), (32, 8, 32768), (64, 8, 4096)])
        self.assertIn((512, 8192), [(c["s"], c["skv"]) for c in cs])
        self.assertIn((8192, 512), [(c["s"], c["skv"]) for c in cs])
        self.assertTrue(all(c["d"] == 128 for c in cs if c["group"] == "fp16"))
        # Both causal alignments of the unequal lengths; the bottom-right ones say so to the bench and the lab.
        br = [c for c in cs if c["bottom_right"]]
        self.assertEqual(sorted((c["s"], c["skv"]) for c in br), [(512, 8192), (8192, 512)])
        self.assertIn("--bottom-right", grid.bench_command("attnprof", br[0], "x.json", "cold", 0))
        self.assertNotIn("--bottom-right", grid.bench_command("attnprof", cs[0], "x.json", "cold", 0))
        self.assertEqual(grid.timer_shape(br[0]), "2,16,16,512,8192,128,2")

    def test_bench_commands_interleave_fused_and_cudnn(self):
        c = grid.cases()[30]
        cmd = grid.bench_command("attnprof", c, "x.json", "cold", 0)
        self.assertEqual(cmd[1:5], ["bench", "--impl", "fused,cudnn", "--interleave"])
        self.assertIn("--kv-heads", cmd)
        self.assertEqual(cmd[cmd.index("--kv-heads") + 1], "8")
        self.assertEqual(cmd[cmd.index("--layout") + 1], "bshd")

    def test_summary_medians_and_verdicts(self):
        cs = grid.cases()
        long_case, short_case = cs[3], cs[6 + 0]  # B2 H16 S4096 D128 full; B32 H32 S512 D64 full
        with tempfile.TemporaryDirectory() as tmp:
            dirs = []
            for i, (f_long, f_short) in enumerate([(660.0, 300.0), (640.0, 310.0), (700.0, 290.0)]):
                d = os.path.join(tmp, f"run{i}")
                os.makedirs(d)
                json.dump(bench_json(f_long, 600.0), open(os.path.join(d, grid.name(long_case) + ".json"), "w"))
                json.dump(bench_json(f_short, 400.0, fused_err=4e-3),
                          open(os.path.join(d, grid.name(short_case) + ".json"), "w"))
                # PyTorch flash's time beside it: TFLOP/s from the FLOPs attnprof's report counted.
                json.dump({"flash_ms": 2.0 + i}, open(os.path.join(d, grid.name(long_case) + ".extra.json"), "w"))
                dirs.append(d)
            summary = {s["name"]: s for s in grid.summarize_dirs(dirs)}
            s = summary[grid.name(long_case)]
            self.assertEqual(s["runs"], 3)
            self.assertAlmostEqual(s["fused"], 660.0)
            self.assertAlmostEqual(s["ratio"], 1.1)  # median of 1.1, 1.0667, 1.1667
            self.assertAlmostEqual(s["flash"], 1.2e12 / 3.0e-3 / 1e12)  # median of 2, 3, 4 ms
            self.assertEqual(summary[grid.name(cs[0])]["runs"], 0)
            texts = [text for text, _ in grid.verdicts(list(summary.values()))]
            # The medians' geometric mean (sqrt(1.1 * 0.75)), then each run's own.
            self.assertIn("geometric mean >= 1.05x (0.908; runs: 0.908, 0.909, 0.920)", texts)
            verdicts = dict((text.split(" (")[0], ok) for text, ok in grid.verdicts(list(summary.values())))
            self.assertFalse(verdicts["every case measured"])
            self.assertTrue(verdicts["S >= 2k: fused >= 1.03x cuDNN"])
            self.assertFalse(verdicts["every case >= 0.95x"])  # the short case: 0.75
            self.assertTrue(verdicts["D128 full S >= 4k >= 650 TFLOP/s"])
            self.assertFalse(verdicts["bf16 error <= max(1.1x cuDNN's, 2.5e-3)"])  # 4e-3 against 2e-3
            text = grid.table(list(summary.values()))
            self.assertIn("| b2h16s4096d128_bf16_bhsd | 3 | 660.0 |", text)
            # The slowest measured case first among the timer commands: B32 H32 S512 D64 full.
            self.assertIn("--timers --path one_tile,persistent --shape 32,32,32,512,512,64,0\n", text)
            self.assertEqual(grid.timer_shape(cs[30]), "8,32,8,2048,2048,128,1,bshd")

    def test_summarize_takes_a_packed_run(self):
        # Results come back from the GPU machine as one archive (at most 8 files return) and are
        # kept that way: summarize reads a .tgz of a run's folder like the folder itself.
        c = grid.cases()[3]
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "grid")
            os.makedirs(d)
            json.dump(bench_json(630.0, 600.0), open(os.path.join(d, grid.name(c) + ".json"), "w"))
            archive = os.path.join(tmp, "grid.tgz")
            with tarfile.open(archive, "w:gz") as t:
                t.add(d, arcname="grid")
            out = io.StringIO()
            with contextlib.redirect_stdout(out), unittest.mock.patch.object(sys, "argv",
                                                                             ["fused_grid.py", "summarize", archive]):
                self.assertEqual(grid.main(), 0)
            self.assertIn("| b2h16s4096d128_bf16_bhsd | 1 | 630.0 |", out.getvalue())
            err = io.StringIO()
            with contextlib.redirect_stderr(err), unittest.mock.patch.object(
                    sys, "argv", ["fused_grid.py", "summarize", os.path.join(tmp, "missing")]):
                self.assertEqual(grid.main(), 2)
            self.assertIn("not a folder of results nor a .tgz of one", err.getvalue())


if __name__ == "__main__":
    sys.exit(unittest.main())
