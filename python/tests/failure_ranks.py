"""Ranks for test_failures.py: what a user sees when a rank dies, when two ranks exchange large
tensors send-first, and when ranks disagree on the world size.

usage: failure_ranks.py MODE RANK WORLD STORE_FILE
  kill      every rank all-reduces in a loop; rank 2 kills itself (SIGKILL) mid-run. Each
            survivor must fail with an error saying rank 2 stopped answering (not a timeout);
            it prints how long after the kill its error came (rank 2 writes the time to
            STORE_FILE.killed). The survivors then destroy the group and form a new one of 3
            ranks in the same processes, which must work.
  exchange  isend then irecv of every size up to 8 MiB with the peer, then the same through
            batch_isend_irecv, then a 3-rank ring if WORLD is 3; checks every byte.
  world     init only; WORLD differs between the ranks: each must fail saying so.
"""

import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import mrc_torch  # noqa: F401

mode, rank, world, store = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


def init():
    dist.init_process_group("mrc", init_method=f"file://{store}", rank=rank, world_size=world)


def kill():
    init()
    t = torch.ones(1 << 18)
    try:
        for i in range(100000):
            if rank == 2 and i == 30:
                with open(store + ".killed", "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            dist.all_reduce(t)
            t.fill_(1.0)
    except RuntimeError as e:
        with open(store + ".killed") as f:
            after = time.time() - float(f.read())
        message = str(e)
        print(f"rank {rank} failed {after:.1f} s after the kill: {message}")
        if "rank 2 stopped answering" not in message or "no progress" in message:
            sys.exit(2)
        dist.destroy_process_group()
        again = {0: 0, 1: 1, 3: 2}[rank]
        dist.init_process_group("mrc", init_method=f"file://{store}.again", rank=again,
                                world_size=3)
        t = torch.ones(1000)
        dist.all_reduce(t)
        assert torch.all(t == 3), t
        dist.destroy_process_group()
        print(f"rank {rank}: a new group of the survivors works")
        sys.exit(0)
    print(f"rank {rank}: no error although rank 2 is gone")
    sys.exit(1)


def pattern(sender, receiver, n):
    return (torch.arange(n, dtype=torch.int64) * 7 + sender * 1000 + receiver) % 251


def exchange():
    init()
    peer = 1 - rank if world == 2 else None
    if peer is not None:
        for n in [0, 1, 4097, 1 << 20, 3 << 20, 4 << 20, 8 << 20]:  # bytes, as uint8
            out = pattern(rank, peer, n).to(torch.uint8)
            got = torch.empty(n, dtype=torch.uint8)
            sent = dist.isend(out, peer)
            received = dist.irecv(got, peer)
            sent.wait()
            received.wait()
            assert torch.equal(got, pattern(peer, rank, n).to(torch.uint8)), f"isend/irecv {n}"
        n = 1 << 20  # int64 elements: 8 MiB each way
        out, got = pattern(rank, peer, n), torch.empty(n, dtype=torch.int64)
        ops = [dist.P2POp(dist.isend, out, peer), dist.P2POp(dist.irecv, got, peer)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        assert torch.equal(got, pattern(peer, rank, n)), "batch_isend_irecv"
    else:
        right, left = (rank + 1) % world, (rank - 1) % world
        n = 1 << 19
        out, got = pattern(rank, right, n), torch.empty(n, dtype=torch.int64)
        works = [dist.isend(out, right), dist.irecv(got, left)]
        for work in works:
            work.wait()
        assert torch.equal(got, pattern(left, rank, n)), "ring"
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: exchange ok")


def world_mismatch():
    try:
        init()
    except RuntimeError as e:
        print(f"rank {rank} (world {world}): {e}")
        sys.exit(0 if "disagree on the world size" in str(e) else 2)
    print(f"rank {rank}: joined although the world sizes differ")
    sys.exit(1)


{"kill": kill, "exchange": exchange, "world": world_mismatch}[mode]()
