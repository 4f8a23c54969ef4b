#!/usr/bin/env python3
"""How well the Hopper backward's grid fills the GPU, by a list-scheduling model: every CTA's length is its
items (query blocks x query heads, each item the same time), CTAs start in launch order on the first SM
free, and the kernel ends with its last CTA. Prints, per shape, the model's time over the ideal (all items
spread evenly over the SMs) for the orders bwd_sm90.cu has had (docs/hopper-backward.md section 10):

  launch   key blocks innermost, then KV heads, then batch (the kernel before 2026-12-07)
  lpt      causal: key block outermost (every head's block 0 first: longest first)
  split    lpt with a causal GQA group split over CTAs while the grid is under two CTAs an SM
           (hopper_bwd_head_split, bwd_common.cuh)

    scripts/lab/bwd_grid_model.py [--sms 132] B,H,HKV,S,D,causal|full ...
    scripts/lab/bwd_grid_model.py 2,32,8,4096,128,causal 8,8,2,1024,128,causal

A model, not a measurement: masked (diagonal) items cost more, and L2 is not in it.
"""
import argparse
import heapq

BLOCK_N = 128  # keys a CTA


def block_m(d):
    return 64 if d == 128 else 128


def makespan(lengths, sms):
    free = [0] * sms
    heapq.heapify(free)
    end = 0
    for n in lengths:
        t = heapq.heappop(free) + n
        end = max(end, t)
        heapq.heappush(free, t)
    return end


def head_split(b, hkv, group, s, causal, sms):
    ctas = -(-s // BLOCK_N) * hkv * b
    split = 1
    while causal and ctas * split < 2 * sms and group % (2 * split) == 0:
        split *= 2
    return split


def ctas(b, h, hkv, s, d, causal, order, sms):
    """The CTAs' lengths in launch order."""
    group, m_tiles, bm = h // hkv, -(-s // block_m(d)), block_m(d)
    split = head_split(b, hkv, group, s, causal, sms) if order == "split" else 1

    def items(kb):
        first = kb * BLOCK_N // bm if causal else 0
        return max(m_tiles - first, 0) * (group // split)

    key_blocks = -(-s // BLOCK_N)
    if order == "launch" or not causal:
        return [items(kb) for _ in range(b * hkv * split) for kb in range(key_blocks)]
    return [items(kb) for kb in range(key_blocks) for _ in range(b * hkv * split)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="+", help="B,H,HKV,S,D,causal|full")
    ap.add_argument("--sms", type=int, default=132, help="SMs (H100 SXM 132, H200 132)")
    a = ap.parse_args()
    print(f"{'shape':<32} {'CTAs':>6} {'launch':>7} {'lpt':>7} {'split':>7}")
    for shape in a.shapes:
        b, h, hkv, s, d, mask = shape.split(",")
        b, h, hkv, s, d, causal = int(b), int(h), int(hkv), int(s), int(d), mask == "causal"
        row = []
        for order in ("launch", "lpt", "split"):
            lengths = ctas(b, h, hkv, s, d, causal, order, a.sms)
            row.append(makespan(lengths, a.sms) / (sum(lengths) / a.sms))
        label = f"B{b} H{h}/{hkv} S{s} D{d} {mask}"
        n = len(ctas(b, h, hkv, s, d, causal, "launch", a.sms))
        print(f"{label:<32} {n:>6} " + " ".join(f"{x:>7.3f}" for x in row))


if __name__ == "__main__":
    main()
