#!/usr/bin/env python3
"""Launches kernels under an NVTX range, then interrupts itself with SIGINT:
Python turns it into KeyboardInterrupt and exits; the trace must still be written."""
import os
import signal

import torch

x = torch.randn(1024, 1024, device="cuda")
with torch.cuda.nvtx.range("before_interrupt"):
    for _ in range(10):
        x = x @ x / 1024
torch.cuda.synchronize()
os.kill(os.getpid(), signal.SIGINT)
