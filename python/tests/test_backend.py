"""The "mrc" torch.distributed backend, collective by collective, with 2 and 3 ranks as processes.

The ranks run every check of backend_ranks.py once (one start of the processes per world size);
each test here asserts its check passed on every rank (2 ranks with 8192-byte packets, 3 with
4096, and 2 ranks of 2 engine threads each, MRC_THREADS). UDP ports 25000-28599, 23400-23999,
47600-47699 and 58000-60599 belong to this file.
"""

import json

import pytest

from conftest import HERE, python, rank_env, run_ranks

# run: (world size, UDP receive ports from, EV source ports from, MRC_MTU, MRC_THREADS); a rank
# has 2 contexts (groups), each with a receive port and 320 EV ports per thread.
RUNS = {
    "2ranks": (2, 25000, 25100, 8192, 1),
    "3ranks": (3, 26500, 26600, 4096, 1),
    "2ranks-2threads": (2, 47600, 58000, 4096, 2),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def results(request, tmp_path_factory):
    world, port, ev_port_base, mtu, threads = RUNS[request.param]
    tmp = tmp_path_factory.mktemp(f"backend-{request.param}")
    outs = [tmp / f"rank{r}.json" for r in range(world)]
    commands = [[python(), str(HERE / "backend_ranks.py"), str(r), str(world), str(tmp / "store"),
                 str(outs[r])] for r in range(world)]
    ran = run_ranks(commands, rank_env(port=port, ev_port_base=ev_port_base, MRC_MTU=mtu, MRC_THREADS=threads))
    for r, (code, output) in enumerate(ran):
        assert code == 0, f"rank {r} exited with {code}:\n{output}"
    return [json.loads(o.read_text()) for o in outs]


CHECKS = [
    "allreduce_ops_float32", "allreduce_dtypes", "allreduce_large_and_noncontiguous",
    "allreduce_async_future", "allreduce_coalesced", "broadcast_any_dtype", "reduce_to_root",
    "allgather", "reduce_scatter", "alltoall_equal_and_uneven", "gather_scatter", "send_recv",
    "barrier_and_subgroup", "errors_dtype_op_device", "plane_stats_count_traffic",
]


@pytest.mark.parametrize("check", CHECKS)
def test_check(results, check):
    for rank, result in enumerate(results):
        assert result.get(check) == "ok", f"rank {rank}, {check}:\n{result.get(check, 'not run')}"


def test_every_check_listed(results):
    assert sorted(results[0]) == sorted(CHECKS)


def test_bad_mtu_is_refused_with_a_message(tmp_path):
    # Refused before any socket is opened: the ports are never bound.
    env = rank_env(port=23990, ev_port_base=23991, MRC_PLANES="127.0.0.1", MRC_MTU=20000)
    script = ("import datetime, torch.distributed as dist, mrc_torch\n"
              f"dist.init_process_group('mrc', init_method='file://{tmp_path / 'store'}', rank=0, world_size=1,"
              " timeout=datetime.timedelta(seconds=10))\n")
    [(code, output)] = run_ranks([[python(), "-c", script]], env, timeout=60)
    assert code != 0 and "MRC_MTU 20000" in output and "256-9000" in output, output


def test_vanished_peer_fails_the_work(tmp_path):
    # Two planes, so the EV ports fit the range 23400-23999 (no other test uses it).
    env = rank_env(port=23400, ev_port_base=23410, MRC_PLANES="127.0.0.1,127.0.0.2")
    commands = [[python(), str(HERE / "vanish_ranks.py"), str(r), str(tmp_path / "store")]
                for r in range(2)]
    (code, output), (code1, output1) = run_ranks(commands, env, timeout=90)
    assert code1 == 0, output1
    assert code == 0, output
    # Either the queue pair to rank 1 ran out of retries ("the connection to rank 1 failed") or,
    # on a loaded machine where the retries take longer, the collective's no-progress timeout
    # fired first; both errors name rank 1.
    assert "connection to rank 1" in output or ("no progress" in output and "rank 1" in output), output
