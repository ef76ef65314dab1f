"""What a torch user sees when things go wrong, and the send-first exchanges that must not
deadlock, with ranks as processes. UDP ports 1100-1199, 1200-1999 and 3000-4700 belong to this
file."""

import re

from conftest import HERE, python, rank_env, run_ranks


def commands(mode, world, store, worlds=None):
    return [[python(), str(HERE / "failure_ranks.py"), mode, str(r),
             str(worlds[r] if worlds else world), str(store)] for r in range(world)]


def test_a_killed_rank_fails_every_rank_naming_it(tmp_path):
    # The collective timeout is far away: the error must come from failure detection.
    env = rank_env(port=1100, ev_port_base=3000, MRC_PLANES="127.0.0.1,127.0.0.2",
                   MRC_TIMEOUT_S=600)
    ran = run_ranks(commands("kill", 4, tmp_path / "store"), env, timeout=150,
                    may_be_killed={2})
    for rank, (code, output) in enumerate(ran):
        if rank == 2:
            continue
        assert code == 0 and "new group of the survivors works" in output, \
            f"rank {rank} exited with {code}:\n{output}"
        print(re.findall(r"rank \d failed [\d.]+ s after the kill", output))


def test_send_first_exchanges_of_any_size_complete(tmp_path):
    env = rank_env(port=1110, ev_port_base=1200, MRC_PLANES="127.0.0.1,127.0.0.2")
    for world in (2, 3):
        ran = run_ranks(commands("exchange", world, tmp_path / f"store{world}"), env, timeout=120)
        for rank, (code, output) in enumerate(ran):
            assert code == 0 and "exchange ok" in output, f"{world} ranks, rank {rank}:\n{output}"


def test_ranks_that_disagree_on_the_world_size_say_so(tmp_path):
    env = rank_env(port=1120, ev_port_base=4200, MRC_PLANES="127.0.0.1,127.0.0.2",
                   MRC_TIMEOUT_S=600)
    ran = run_ranks(commands("world", 2, tmp_path / "store", worlds=[2, 3]), env, timeout=60)
    for rank, (code, output) in enumerate(ran):
        assert code == 0, f"rank {rank} exited with {code}:\n{output}"
