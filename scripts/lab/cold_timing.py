"""Cold GPU timing for the lab's PyTorch scripts (decode_grid.py, backward_peers.py): the median of
`reps` calls, each after `flush` (a device buffer past the L2) is overwritten, timed by CUDA events around
the call alone; a sleep kernel before each start event keeps the GPU busy while Python dispatches the call,
so the time is the GPU's, not the host's dispatch (a decode call's kernels take less time than that)."""


def cold_ms(fn, flush, reps=50):
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.fill_(i & 0xFF)
        torch.cuda._sleep(4_000_000)  # the GPU busy while Python dispatches fn (~2 ms; a training step's
        # forward + backward took up to ~0.5 ms of host work, past the 1 M cycles this was before)
        starts[i].record()
        fn()
        stops[i].record()
    torch.cuda.synchronize()
    ms = sorted(x.elapsed_time(y) for x, y in zip(starts, stops))
    return ms[len(ms) // 2]
