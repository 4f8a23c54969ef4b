"""A program with child processes, for scripts/record/gpu_record_check.sh: like torchrun (a launcher and two
workers with RANK set) plus a process that initializes CUDA but launches nothing (as torch.compile's
compile workers or a DataLoader worker may).

    python3 children.py [--launcher-gpu]     # the launcher itself launches GPU work too when asked
"""
import os
import subprocess
import sys

WORKER = "import torch; x = torch.ones(1024, device='cuda'); (x * 2).sum().item(); torch.cuda.synchronize()"
IDLE = "import torch; torch.cuda.init(); torch.cuda.synchronize()"


def main():
    if "--launcher-gpu" in sys.argv:
        import torch

        (torch.ones(16, device="cuda") + 1).sum().item()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK")}
    subprocess.run([sys.executable, "-c", IDLE], env=env, check=True)
    workers = [subprocess.Popen([sys.executable, "-c", WORKER], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)})
               for r in (0, 1)]
    for w in workers:
        if w.wait() != 0:
            sys.exit(1)


if __name__ == "__main__":
    main()
