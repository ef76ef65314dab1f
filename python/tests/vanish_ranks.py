"""Rank 1 of 2 vanishes (os._exit) after a barrier; rank 0's next all-reduce must fail with an
error naming rank 1, raised by Work.wait, and the process must then exit promptly.

usage: vanish_ranks.py RANK STORE_FILE
"""

import os
import sys

import torch
import torch.distributed as dist

import mrc_torch  # noqa: F401

rank, store = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("mrc", init_method=f"file://{store}", rank=rank, world_size=2)
t = torch.ones(1000)
dist.all_reduce(t)
dist.barrier()
if rank == 1:
    os._exit(0)
try:
    for _ in range(100):
        dist.all_reduce(t)
except RuntimeError as e:
    print(f"rank 0 got: {e}")
    sys.exit(0 if "rank 1" in str(e) else 2)
print("rank 0: no error although rank 1 is gone")
sys.exit(1)
