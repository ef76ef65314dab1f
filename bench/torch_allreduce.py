#!/usr/bin/python3
"""torch.distributed all-reduce timing for bench/allreduce_compare.sh.

    RANK=r WORLD_SIZE=n GLOO_SOCKET_IFNAME=h0p1 /usr/bin/python3 bench/torch_allreduce.py \
        --init tcp://198.18.0.1:29600 sweep 1024 67108864 4
    ... timeline BYTES SECONDS

The same measurements as bench/mpi_allreduce.c: float32 sum, rank r holds r+1 in every element;
sweep: per size WARMUP untimed then ITERS timed iterations (20/3 up to 1 MiB, 8/1 at 4 MiB, 3/1
from 16 MiB), time = the slowest rank's average, then one checked iteration on fresh inputs;
timeline: checked iterations of BYTES until SECONDS have passed (rank 0 decides, agreed through a
1-element all-reduce), with wall-clock start and end. One JSON line per row on rank 0's stdout.
torch's all_reduce is in place (there is no out-of-place form). --backend mrc runs the same over
the mrc torch backend (PYTHONPATH must hold mrc_torch; MRC_PLANES this host's planes).
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def iters_for(nbytes):
    if nbytes <= 1 << 20:
        return 20, 3
    if nbytes <= 4 << 20:
        return 8, 1
    return 3, 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="gloo")
    ap.add_argument("--init", required=True, help="tcp://HOST:PORT")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("mode", choices=["sweep", "timeline"])
    ap.add_argument("args", nargs="+", type=float)
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.backend == "mrc":
        import mrc_torch  # noqa: F401  registers the backend
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group(a.backend, init_method=a.init, rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=a.timeout))
    want_base = n * (n + 1) / 2
    total_wrong = 0

    def slowest(x):
        t = torch.tensor([x], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t[0])

    if a.mode == "sweep":
        lo, hi, f = (int(v) for v in a.args)
        nbytes = lo
        while nbytes <= hi:
            cnt = nbytes // 4
            iters, warmup = iters_for(nbytes)
            x = torch.full((cnt,), float(rank + 1), dtype=torch.float32)
            for _ in range(warmup):
                dist.all_reduce(x)
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            avg = slowest((time.perf_counter() - t0) / iters)
            x.fill_(float(rank + 1))
            dist.all_reduce(x)
            wrong = torch.tensor([int((x != want_base).sum())], dtype=torch.int64)
            dist.all_reduce(wrong)
            total_wrong += int(wrong[0])
            if rank == 0:
                algbw = nbytes / avg / 1e9
                print(json.dumps({"size": nbytes, "count": cnt, "iters": iters, "warmup": warmup,
                                  "time_us": avg * 1e6, "algbw": algbw, "busbw": algbw * 2 * (n - 1) / n,
                                  "wrong": int(wrong[0])}), flush=True)
            nbytes *= max(f, 2)
    else:
        nbytes, seconds = int(a.args[0]), a.args[1]
        cnt = nbytes // 4
        x = torch.empty((cnt,), dtype=torch.float32)
        start = time.time_ns()
        it = 0
        while True:
            x.fill_(float(rank + 1 + it % 64))
            t0 = time.time_ns()
            dist.all_reduce(x)
            t1 = time.time_ns()
            wrong = torch.tensor([int((x != want_base + n * (it % 64)).sum())], dtype=torch.int64)
            dist.all_reduce(wrong)
            total_wrong += int(wrong[0])
            go = torch.tensor([1 if rank == 0 and time.time_ns() - start < seconds * 1e9 else 0], dtype=torch.int32)
            dist.all_reduce(go, op=dist.ReduceOp.MAX)
            if rank == 0:
                print(json.dumps({"iter": it, "size": nbytes, "start_ns": t0, "end_ns": t1,
                                  "wrong": int(wrong[0])}), flush=True)
            it += 1
            if not int(go[0]):
                break
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(0 if total_wrong == 0 else 1)


if __name__ == "__main__":
    main()
