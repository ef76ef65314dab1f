"""The "mrc" torch.distributed backend, collective by collective, with 2 and 3 ranks as processes.

The ranks run every check of backend_ranks.py once (one start of the processes per world size);
each test here asserts its check passed on every rank (2 ranks with 8192-byte packets, 3 with
4096, and 2 ranks of 2 engine threads each, MRC_THREADS), then secure mode (MRC_SECURE). UDP
ports 25000-28599, 23400-23999, 47600-47699 and 58000-60599, and planes 127.0.0.110-112 belong
to this file.
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


SECURE_SCRIPT = """
import datetime, sys, torch, torch.distributed as dist, mrc_torch
rank = int(sys.argv[1])
dist.init_process_group('mrc', init_method='file://' + sys.argv[2], rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=60))
t = torch.arange(1 << 20, dtype=torch.float32) * (rank + 1)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(1 << 20, dtype=torch.float32) * 3), 'wrong sum'
dist.destroy_process_group()
print('secure all-reduce ok')
"""


def secure_env(tmp_path, mode, key_file):
    # Planes 127.0.0.110-111: addresses of their own, so these ports clash with no other test.
    return rank_env(port=4791, ev_port_base=20000, MRC_PLANES="127.0.0.110,127.0.0.111",
                    MRC_SECURE=mode, MRC_KEY_FILE=key_file)


def key_file(path, byte):
    path.write_text(f"{byte:02x}" * 32 + "\n")
    path.chmod(0o600)
    return str(path)


def test_secure_mode_all_reduce_and_mismatches(tmp_path):
    key = key_file(tmp_path / "key", 0x5A)
    commands = [[python(), "-c", SECURE_SCRIPT, str(r), str(tmp_path / "store")] for r in range(2)]
    for mode in ("auth", "encrypt"):
        ran = run_ranks(commands, secure_env(tmp_path, mode, key), timeout=120)
        for r, (code, output) in enumerate(ran):
            assert code == 0 and "secure all-reduce ok" in output, f"{mode}, rank {r}:\n{output}"
        (tmp_path / "store").unlink(missing_ok=True)
    # Rank 1 holds another key: both ranks fail at connection time, naming the keys.
    other = key_file(tmp_path / "other", 0x33)
    envs = [secure_env(tmp_path, "encrypt", key), secure_env(tmp_path, "encrypt", other)]
    for r, (code, output) in enumerate(run_ranks(commands, envs, timeout=120)):
        assert code != 0 and "pre-shared keys differ" in output, f"rank {r}:\n{output}"


def test_secure_mode_without_a_key_is_refused(tmp_path):
    env = rank_env(port=4791, ev_port_base=20000, MRC_PLANES="127.0.0.112", MRC_SECURE="auth")
    script = ("import datetime, torch.distributed as dist, mrc_torch\n"
              f"dist.init_process_group('mrc', init_method='file://{tmp_path / 'store'}', rank=0, world_size=1,"
              " timeout=datetime.timedelta(seconds=10))\n")
    [(code, output)] = run_ranks([[python(), "-c", script]], env, timeout=60)
    assert code != 0 and "needs MRC_KEY_FILE" in output, output


def test_srv6_paths_are_checked(tmp_path):
    # Refused with the rule they break: paths that do not parse (before any socket), and SRv6
    # paths on IPv4 planes (naming the plane). The working case runs on the SRv6 testbed
    # (tests/srv6_testbed_test.sh, root).
    script = ("import datetime, torch.distributed as dist, mrc_torch\n"
              f"dist.init_process_group('mrc', init_method='file://{tmp_path / 'store'}', rank=0, world_size=1,"
              " timeout=datetime.timedelta(seconds=10))\n")
    env = rank_env(port=23992, ev_port_base=23993, MRC_PLANES="127.0.0.1", MRC_SRV6_PATHS="zz")
    [(code, output)] = run_ranks([[python(), "-c", script]], env, timeout=60)
    assert code != 0 and "MRC_SRV6_PATHS=zz: bad SRv6 path 'zz'" in output, output
    env = rank_env(port=23994, ev_port_base=23995, MRC_PLANES="127.0.0.1", MRC_SRV6_PATHS="200,201")
    [(code, output)] = run_ranks([[python(), "-c", script]], env, timeout=60)
    assert code != 0 and "is IPv4: SRv6 paths need IPv6 planes" in output, output


def test_a_rank_serves_its_metrics_when_asked(tmp_path):
    # MRC_METRICS_PORT (a host setting every front door shares): the rank serves its engine's
    # Prometheus metrics on that port + its slot (slot 0 here) and says where.
    script = ("import datetime, urllib.request, torch.distributed as dist, mrc_torch\n"
              f"dist.init_process_group('mrc', init_method='file://{tmp_path / 'store'}', rank=0, world_size=1,"
              " timeout=datetime.timedelta(seconds=10))\n"
              "text = urllib.request.urlopen('http://127.0.0.1:23997/metrics', timeout=10).read().decode()\n"
              "print('plane 0 up' if 'mrc_plane_up{plane=\"0\"} 1' in text else text)\n"
              "dist.destroy_process_group()\n")
    env = rank_env(port=23996, ev_port_base=23700, MRC_PLANES="127.0.0.1", MRC_METRICS_PORT="23997")
    [(code, output)] = run_ranks([[python(), "-c", script]], env, timeout=60)
    assert code == 0 and "plane 0 up" in output, output
    env = rank_env(port=23996, ev_port_base=23700, MRC_PLANES="127.0.0.1", MRC_METRICS_PORT="http")
    [(code, output)] = run_ranks([[python(), "-c", script]], env, timeout=60)
    assert code != 0 and "MRC_METRICS_PORT=http is not a TCP port" in output, output
