#!/usr/bin/env python3
"""scripts/lab/decode_grid.py on the CPU, on the decode grid's results in the repository
(benchmarks/results/decode_grid: an H100's runs): its Markdown table has a row per measured shape, each
row's bytes are what its shape implies (K and V once per KV head, q and the output once), its ratios are
the times' (cuDNN's, and the best of cuDNN and PyTorch flash, over the fused kernel's), a paged run says
where cuDNN read the keys dense, and a malformed shape is a one-line error."""
import contextlib
import glob
import importlib.util
import io
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
spec = importlib.util.spec_from_file_location("decode_grid", os.path.join(ROOT, "scripts", "lab", "decode_grid.py"))
grid = importlib.util.module_from_spec(spec)
spec.loader.exec_module(grid)
RESULTS = sorted(glob.glob(os.path.join(ROOT, "benchmarks", "results", "decode_grid", "*.json")))


def table(paths):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        grid.markdown(paths)
    return out.getvalue().splitlines()


class DecodeGrid(unittest.TestCase):
    def test_results_are_there(self):
        names = {os.path.basename(p) for p in RESULTS}
        self.assertTrue({"decode_grid_bf16.json", "decode_grid_paged16.json"} <= names, names)

    def test_bytes_are_the_shapes(self):
        for path in RESULTS:
            doc = json.load(open(path))
            e = 2  # bf16 and fp16
            for r in doc["rows"]:
                s = grid.parse_shape(r["shape"])
                expected = e * (2 * s["b"] * s["hkv"] * s["skv"] * s["d"] + 2 * s["b"] * s["h"] * s["sq"] * s["d"])
                self.assertEqual(r["bytes"], expected, r["shape"])

    def test_a_row_a_shape_and_the_ratios_are_the_times(self):
        lines = table(RESULTS)
        rows = [ln for ln in lines if ln.startswith("| B")]
        measured = [r for p in RESULTS for r in json.load(open(p))["rows"]]
        self.assertEqual(len(rows), len(measured))
        ratios = []
        for line, r in zip(rows, measured):
            cells = [c.strip() for c in line.strip("|").split("|")]
            self.assertEqual(cells[0], r["label"])
            others = [x for x in (r["cudnn_ms"], r.get("torch_flash_ms")) if x]
            self.assertAlmostEqual(float(cells[9]), r["cudnn_ms"] / r["fused_ms"], places=3)
            self.assertAlmostEqual(float(cells[10]), min(others) / r["fused_ms"], places=3)
            ratios.append(min(others) / r["fused_ms"])
        summary = [ln for ln in lines if ln.startswith("Against the best")]
        self.assertEqual(len(summary), 1)
        self.assertIn(f"min {min(ratios):.3f}", summary[0])
        self.assertIn(f"over {len(ratios)} rows", summary[0])

    def test_paged_rows_say_where_cudnn_read_dense(self):
        paged = [p for p in RESULTS if json.load(open(p)).get("page_size")]
        self.assertTrue(paged)
        for path in paged:
            doc = json.load(open(path))
            for line in (ln for ln in table([path]) if ln.startswith("| B")):
                self.assertIn(f"paged {doc['page_size']}", line)
                self.assertNotIn("cuDNN dense", line)  # these runs' cuDNN read the same pages
            for r in doc["rows"]:
                r["cudnn_paged"] = False
            with tempfile.TemporaryDirectory() as tmp:
                dense = os.path.join(tmp, "dense.json")
                json.dump(doc, open(dense, "w"))
                for line in (ln for ln in table([dense]) if ln.startswith("| B")):
                    self.assertIn("(cuDNN dense)", line)

    def test_a_malformed_shape_is_one_line(self):
        for bad in ("64x32x8x1x4096", "64x32x5x1x4096x128", "64x32x8x0x4096x128", "64xAx8x1x4096x128"):
            with self.assertRaises(SystemExit) as e:
                grid.parse_shape(bad)
            self.assertIn(bad, str(e.exception))
            self.assertNotIn("\n", str(e.exception))


if __name__ == "__main__":
    unittest.main()
