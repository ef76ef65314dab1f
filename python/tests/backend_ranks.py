"""One rank of the backend tests (test_backend.py starts WORLD of these).

Every check runs on every rank in the same order (they are collectives); each rank writes
{check name: "ok" | error text} as JSON to OUT. A check that fails leaves the others running:
argument errors are raised before anything is queued, so the ranks stay in step.

usage: backend_ranks.py RANK WORLD STORE_FILE OUT
"""

import datetime
import faulthandler
import json
import sys
import traceback
import warnings

import torch
import torch.distributed as dist

import mrc_torch  # noqa: F401  (registers the backend)

RANK, WORLD = int(sys.argv[1]), int(sys.argv[2])
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def rank_values(dtype, n=10):
    """Small integers, different per rank, exact in every dtype."""
    return (torch.arange(n) % 7 + RANK + 1).to(dtype)


def expect_equal(got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError(f"got {got!r}, want {want!r}")


def expect_error(fn, *needles):
    try:
        fn()
    except (RuntimeError, ValueError, TypeError) as e:
        text = str(e)
        for needle in needles:
            if needle not in text:
                raise AssertionError(f"error {text!r} does not say {needle!r}") from None
        return
    raise AssertionError("no error raised")


def every_rank(fn):
    return [fn(r) for r in range(WORLD)]


@check
def allreduce_ops_float32():
    for op, combine in [
        (dist.ReduceOp.SUM, lambda xs: sum(xs)),
        (dist.ReduceOp.PRODUCT, lambda xs: torch.stack(xs).prod(0)),
        (dist.ReduceOp.MIN, lambda xs: torch.stack(xs).min(0).values),
        (dist.ReduceOp.MAX, lambda xs: torch.stack(xs).max(0).values),
        (dist.ReduceOp.AVG, lambda xs: sum(xs) / WORLD),
    ]:
        t = rank_values(torch.float32)
        dist.all_reduce(t, op=op)
        inputs = every_rank(lambda r: (torch.arange(10) % 7 + r + 1).to(torch.float32))
        expect_equal(t, combine(inputs))


@check
def allreduce_dtypes():
    for dtype in [torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8]:
        t = rank_values(dtype, 1000)
        dist.all_reduce(t)
        want = sum(every_rank(lambda r: (torch.arange(1000) % 7 + r + 1).to(torch.int64)))
        expect_equal(t, want.to(dtype))


@check
def allreduce_large_and_noncontiguous():
    t = torch.full((3 << 20,), float(RANK + 1))  # 12 MiB: many chunks, ring algorithm
    dist.all_reduce(t)
    expect_equal(t, torch.full((3 << 20,), float(WORLD * (WORLD + 1) // 2)))
    m = torch.ones(6, 8)
    column = m[:, 2]  # a strided view: reduced in a copy, written back
    dist.all_reduce(column)
    expect_equal(m[:, 2], torch.full((6,), float(WORLD)))
    expect_equal(m[:, 3], torch.ones(6))


@check
def allreduce_async_future():
    t = rank_values(torch.float32)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    want = sum(every_rank(lambda r: (torch.arange(10) % 7 + r + 1).to(torch.float32)))
    expect_equal(fut.wait()[0], want)
    expect_equal(doubled.wait(), want * 2)
    work.wait()
    if not work.is_completed() or not work.is_success():
        raise AssertionError("work not completed successfully")
    expect_equal(work.result()[0], want)


@check
def allreduce_coalesced():
    a, b = rank_values(torch.float32, 5), torch.full((2, 3), float(RANK))
    dist.all_reduce_coalesced([a, b])
    expect_equal(a, sum(every_rank(lambda r: (torch.arange(5) % 7 + r + 1).float())))
    expect_equal(b, torch.full((2, 3), float(sum(range(WORLD)))))


@check
def broadcast_any_dtype():
    for dtype in [torch.float32, torch.bool, torch.complex64, torch.int8]:
        root = WORLD - 1
        t = (torch.arange(9) % 2 == RANK % 2).to(dtype) if dtype == torch.bool else \
            (torch.arange(9) + 100 * RANK).to(dtype)
        dist.broadcast(t, src=root)
        want = (torch.arange(9) % 2 == root % 2) if dtype == torch.bool else \
            (torch.arange(9) + 100 * root).to(dtype)
        expect_equal(t, want.to(dtype))


@check
def reduce_to_root():
    t = rank_values(torch.int64)
    dist.reduce(t, dst=1, op=dist.ReduceOp.MAX)
    if RANK == 1:
        expect_equal(t, (torch.arange(10) % 7 + WORLD).to(torch.int64))


@check
def allgather():
    outs = [torch.zeros(4, dtype=torch.float64) for _ in range(WORLD)]
    dist.all_gather(outs, torch.full((4,), float(RANK), dtype=torch.float64))
    for r in range(WORLD):
        expect_equal(outs[r], torch.full((4,), float(r), dtype=torch.float64))
    flat = torch.zeros(WORLD * 3, dtype=torch.int32)
    dist._all_gather_base(flat, torch.full((3,), RANK, dtype=torch.int32))
    expect_equal(flat, torch.arange(WORLD, dtype=torch.int32).repeat_interleave(3))
    into = torch.zeros(WORLD, 2)
    dist.all_gather_into_tensor(into, torch.full((2,), float(RANK)))
    expect_equal(into, torch.arange(WORLD).float().unsqueeze(1).expand(WORLD, 2).contiguous())


@check
def reduce_scatter():
    inputs = [torch.full((5,), float(RANK * 10 + r)) for r in range(WORLD)]
    out = torch.zeros(5)
    dist.reduce_scatter(out, inputs)
    expect_equal(out, torch.full((5,), float(sum(q * 10 + RANK for q in range(WORLD)))))
    flat = torch.arange(WORLD * 4, dtype=torch.bfloat16)
    out = torch.zeros(4, dtype=torch.bfloat16)
    dist._reduce_scatter_base(out, flat)
    expect_equal(out, (torch.arange(4) + 4 * RANK).to(torch.bfloat16) * WORLD)
    out = torch.zeros(4, dtype=torch.bfloat16)
    dist.reduce_scatter_tensor(out, flat, op=dist.ReduceOp.MAX)
    expect_equal(out, (torch.arange(4) + 4 * RANK).to(torch.bfloat16))


@check
def alltoall_equal_and_uneven():
    inp = torch.arange(WORLD * 3) + 1000 * RANK
    out = torch.zeros_like(inp)
    dist.all_to_all_single(out, inp)
    expect_equal(out, torch.cat([torch.arange(RANK * 3, RANK * 3 + 3) + 1000 * r for r in range(WORLD)]))
    # rank r sends (j + 1) rows to rank j; rank j receives (j + 1) rows from every rank
    in_splits = [j + 1 for j in range(WORLD)]
    inp = torch.cat([torch.full((j + 1, 2), float(10 * RANK + j)) for j in range(WORLD)])
    out = torch.zeros((RANK + 1) * WORLD, 2)
    dist.all_to_all_single(out, inp, [RANK + 1] * WORLD, in_splits)
    expect_equal(out, torch.cat([torch.full((RANK + 1, 2), float(10 * r + RANK)) for r in range(WORLD)]))
    outs = [torch.zeros(r + 1, dtype=torch.int64) for r in range(WORLD)]
    ins = [torch.full((RANK + 1,), 100 * RANK + j, dtype=torch.int64) for j in range(WORLD)]
    dist.all_to_all(outs, ins)
    for r in range(WORLD):
        expect_equal(outs[r], torch.full((r + 1,), 100 * r + RANK, dtype=torch.int64))


@check
def gather_scatter():
    outs = [torch.zeros(3) for _ in range(WORLD)] if RANK == 0 else None
    dist.gather(torch.full((3,), float(RANK)), outs, dst=0)
    if RANK == 0:
        for r in range(WORLD):
            expect_equal(outs[r], torch.full((3,), float(r)))
    ins = [torch.full((2,), float(r * 7)) for r in range(WORLD)] if RANK == WORLD - 1 else None
    out = torch.zeros(2)
    dist.scatter(out, ins, src=WORLD - 1)
    expect_equal(out, torch.full((2,), float(RANK * 7)))


@check
def send_recv():
    peer = (RANK + 1) % WORLD
    source = (RANK - 1) % WORLD
    big = torch.arange(1 << 20, dtype=torch.float32) + RANK  # 4 MiB: more than the staging
    got = torch.zeros_like(big)
    # Even ranks send first and odd ranks receive first, so big messages meet a receiver.
    if RANK % 2 == 0:
        dist.send(big, peer)
        dist.recv(got, source)
    else:
        dist.recv(got, source)
        dist.send(big, peer)
    expect_equal(got, torch.arange(1 << 20, dtype=torch.float32) + source)
    small = torch.full((4,), float(RANK))
    into = torch.zeros(4)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, small, peer),
                                   dist.P2POp(dist.irecv, into, source)])
    for req in reqs:
        req.wait()
    expect_equal(into, torch.full((4,), float(source)))


@check
def barrier_and_subgroup():
    dist.barrier()
    group = dist.new_group(list(range(WORLD)), backend="mrc")  # a second context, other ports
    t = torch.ones(3)
    dist.all_reduce(t, group=group)
    expect_equal(t, torch.full((3,), float(WORLD)))
    dist.barrier(group=group)
    dist.destroy_process_group(group)


@check
def errors_dtype_op_device():
    expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool)),
                 "cannot reduce tensors of dtype Bool", "supported")
    expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int8)), "dtype Char")
    pg = dist.distributed_c10d._get_default_group()
    expect_error(lambda: pg.allreduce([torch.ones(3, dtype=torch.complex64)]), "ComplexFloat")
    expect_error(lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND),
                 "reduce op", "not supported")
    # torch's dispatcher only reaches a backend with CPU (and CUDA) tensors; this build has no
    # CUDA, so a meta tensor stops there (a CUDA tensor would get mrc's "must be on the CPU").
    expect_error(lambda: dist.all_reduce(torch.ones(3, device="meta")))
    expect_error(lambda: dist.broadcast(torch.ones(3).to_sparse(), src=0), "dense")
    expect_error(lambda: dist._all_gather_base(torch.zeros(WORLD + 1), torch.ones(1)), "elements")
    expect_error(lambda: dist.all_to_all_single(torch.zeros(WORLD), torch.zeros(WORLD), [1] * WORLD,
                                                [WORLD] * WORLD), "splits add up")
    expect_error(lambda: mrc_torch.set_plane_up(9, False), "plane 9 does not exist")
    # Still in step with the other rank after the refused calls:
    t = torch.ones(2)
    dist.all_reduce(t)
    expect_equal(t, torch.full((2,), float(WORLD)))


@check
def plane_stats_count_traffic():
    stats = mrc_torch.plane_stats()
    if len(stats) != 4 or any(not s["up"] for s in stats):
        raise AssertionError(f"unexpected plane stats {stats}")
    if not all(s["bytes_sent"] > 0 for s in stats):
        raise AssertionError(f"some plane carried nothing: {stats}")


def main():
    store_file, out_path = sys.argv[3], sys.argv[4]
    faulthandler.dump_traceback_later(float(__import__("os").environ.get("MRC_TEST_HANG_S", "100")), exit=True)  # a hang shows where, before the test's 120 s
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # torch's deprecation notes for _all_gather_base and others
    dist.init_process_group("mrc", init_method=f"file://{store_file}", rank=RANK, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    results = {}
    for fn in CHECKS:
        try:
            fn()
            results[fn.__name__] = "ok"
        except Exception:  # noqa: BLE001  (reported to the test)
            results[fn.__name__] = traceback.format_exc()
    dist.destroy_process_group()
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
