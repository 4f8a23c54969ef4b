"""A program for the capture window checks (scripts/record/gpu_record_check.sh): 30 steps of 100 ms from
its first CUDA call, each an NVTX range "step" holding a range "tick<N>" around a few kernels.

    python3 window.py                        # run it (under attnprof record --delay, --duration, --capture-range)
    python3 window.py check TRACE LO HI      # the trace holds ticks LO..HI only (some of them), with kernels
    python3 window.py exact TRACE LO HI      # exactly ticks LO..HI, with kernels
"""
import gzip
import json
import sys
import time


def run():
    import torch

    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.synchronize()
    t0 = time.monotonic()
    for n in range(30):
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_push(f"tick{n}")
        while time.monotonic() - t0 < (n + 1) * 0.1:
            x = x * 1.0001
            torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        x = x * 1.0001  # between steps: outside any window of steps


def check(path, lo, hi, exact=False):
    opener = gzip.open if path.endswith(".gz") else open
    events = json.load(opener(path, "rt"))["traceEvents"]
    ticks = sorted(int(e["name"][4:]) for e in events if e.get("cat") == "user_annotation"
                   and e.get("name", "").startswith("tick"))
    kernels = sum(e.get("cat") == "kernel" for e in events)
    print(f"{path}: ticks {ticks}, {kernels} kernels")
    if exact:
        return ticks == list(range(lo, hi + 1)) and kernels > 0
    return bool(ticks) and kernels > 0 and min(ticks) >= lo and max(ticks) <= hi and len(ticks) >= (hi - lo) // 3


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("check", "exact"):
        sys.exit(0 if check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[1] == "exact") else 1)
    run()
