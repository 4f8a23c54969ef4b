"""Issue 37's failure cases, the commands as a user typed them, on real traces copied into a scratch
folder: each is refused in one line with a non-zero exit, or answers as described, and no input file
changes (checksums of every file before and after)."""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "attnprof"]
MATH = ROOT / "examples" / "traces" / "sdpa_math.json"
FLASH = ROOT / "examples" / "traces" / "sdpa_flash.json"


@pytest.fixture
def folder(tmp_path):
    shutil.copy(MATH, tmp_path / "a.json")
    shutil.copy(FLASH, tmp_path / "b.json")
    with open(MATH, "rb") as src, gzip.open(tmp_path / "a.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.symlink("a.json", tmp_path / "link.json")
    return tmp_path


def sums(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def attnprof(folder, *args):
    return subprocess.run([*CLI, *args], cwd=folder, capture_output=True, text=True)


def refused(r, *words):
    """Exit 2, one line on stderr naming what is wrong, nothing on stdout."""
    assert r.returncode == 2, (r.returncode, r.stdout[:300], r.stderr)
    lines = r.stderr.strip().splitlines()
    assert lines and lines[0].startswith("attnprof: "), r.stderr
    assert len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("run 'attnprof")), r.stderr
    assert r.stdout == "", r.stdout[:300]
    for w in words:
        assert w in r.stderr, (w, r.stderr)


@pytest.mark.parametrize(
    "args, words",
    [
        (["doctor", "--annotate", "a.json", "a.json"], ["--annotate a.json", "input trace"]),
        (["doctor", "--html", "a.json.gz", "a.json"], ["--html a.json.gz", ".html"]),
        (["doctor", "--html", "a.json", "a.json"], ["--html a.json"]),
        (["doctor", "--annotate", "link.json", "a.json"], ["--annotate link.json", "input trace"]),
        (["doctor", "--annotate", "b.json", "a.json"], ["--annotate b.json", "holds a trace"]),
        (["doctor", "--annotate", "a.json.gz", "a.json"], ["--annotate a.json.gz", "holds a trace"]),
        (["diff", "--html", "b.json", "a.json", "b.json"], ["--html b.json"]),
        (["doctor", "--html", "missing/r.html", "a.json"], ["missing/r.html"]),
        (["doctor", "--regoin", "fwd", "a.json"], ["did you mean '--region'"]),
        (["doctor", "--fail-on", "atention", "a.json"], ["did you mean 'attention'"]),
        (["doctr", "a.json"], ["did you mean 'doctor'"]),
        (["doctor", "--annotate", "x.json", "a.json", "b.json"], ["--annotate reads one trace"]),
        (["doctor", "--brief", "--json", "a.json"], ["--brief"]),
        (["doctor", "nothing-here.json"], ["nothing-here.json"]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) and v and v[0] in ("doctor", "diff", "doctr") else "",
)
def test_refused_and_nothing_changes(folder, args, words):
    before = sums(folder)
    refused(attnprof(folder, *args), *words)
    assert sums(folder) == before
    assert not (folder / "missing").exists()


def test_a_trace_named_html_is_not_overwritten(folder):
    shutil.copy(FLASH, folder / "r.html")
    before = sums(folder)
    refused(attnprof(folder, "doctor", "--html", "r.html", "a.json"), "holds a trace")
    assert sums(folder) == before


def test_its_own_annotated_trace_is_replaced_and_the_input_kept(folder):
    before = sums(folder)
    for _ in range(2):  # the second run replaces the first run's output
        r = attnprof(folder, "doctor", "--annotate", "small.json", "a.json")
        assert r.returncode == 0, r.stderr
    after = sums(folder)
    assert {k: v for k, v in after.items() if k != "small.json"} == before
    doc = json.loads((folder / "small.json").read_text())
    assert doc["traceName"].startswith("attnprof doctor --annotate") and doc["traceEvents"]


def test_a_perfetto_protobuf_trace_is_named(folder):
    # Trace { TracePacket packet = 1 { timestamp = 8: 1000, trusted_packet_sequence_id = 10: 1 } } twice.
    packet = bytes([0x40, 0xE8, 0x07, 0x50, 0x01])
    (folder / "t.pftrace").write_bytes((bytes([0x0A, len(packet)]) + packet) * 2)
    refused(attnprof(folder, "doctor", "t.pftrace"), "Perfetto protobuf", "traceconv json")


def test_usage_help_and_version(folder):
    bare = attnprof(folder)
    assert bare.returncode == 2 and "Usage: attnprof" in bare.stdout + bare.stderr
    helped = attnprof(folder, "--help")
    assert helped.returncode == 0 and "Usage: attnprof" in helped.stdout
    for flag in ("-V", "--version"):
        v = attnprof(folder, flag)
        assert v.returncode == 0 and v.stdout.startswith("attnprof "), v.stdout


def test_per_step_in_text_json_and_python(folder):
    """The same finding reads the same per-step figure in the text, the JSON (total / instances) and Python."""
    import attnprof as api

    text = attnprof(folder, "doctor", "a.json").stdout
    doc = json.loads(attnprof(folder, "doctor", "--json", "a.json").stdout)
    report = api.doctor(str(folder / "a.json"))
    f = doc["findings"][0]
    steps = next(g["instances"] for g in doc["groups"] if g["name"] == f["region"])
    assert abs(f["time_ms"] * steps - f["total_ms"]) < 1e-3  # per step, and the total named so
    assert f"{f['id']} ({f['scope']}): {f['time_ms']:.3f} ms per fwd" in text
    assert report.findings[0].time_ms == f["time_ms"]
    region = report.regions[0]
    assert abs(region.gpu_time_ms * region.instances - region.gpu_time_total_ms) < 1e-3
    assert region.attention[0].time_ms == pytest.approx(region.attention[0].total_ms / region.instances, abs=1e-4)
