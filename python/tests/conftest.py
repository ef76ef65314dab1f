"""Helpers for the torch backend tests: start ranks as subprocesses of /usr/bin/python3 (the
interpreter running pytest), each with the MRC_* ports of its test, and wait for them."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


def rank_env(port, ev_port_base, **extra):
    """Environment for ranks of one test: its own UDP ports (tests may run in parallel)."""
    env = dict(os.environ)
    env.update({
        "MRC_PORT": str(port),
        "MRC_EV_PORT_BASE": str(ev_port_base),
        "MRC_TIMEOUT_S": "30",
        "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_ranks(commands, env, timeout=120, may_be_killed=()):
    """Runs one process per command; returns [(returncode, output)], killing all on timeout.
    `env` is the environment of every rank, or a list of one per command. Output goes to files,
    so a rank that writes a lot never blocks on a full pipe. Ranks in `may_be_killed` may end by
    a signal (they kill themselves)."""
    envs = env if isinstance(env, list) else [env] * len(commands)
    logs = [tempfile.TemporaryFile(mode="w+") for _ in commands]
    procs = [subprocess.Popen(c, env=e, stdout=log, stderr=subprocess.STDOUT, text=True)
             for c, e, log in zip(commands, envs, logs)]
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    if any(p.returncode is None or (p.returncode < 0 and r not in may_be_killed)
           for r, p in enumerate(procs)):
        raise AssertionError("ranks timed out or were killed:\n" + "\n".join(outputs))
    return [(p.returncode, out) for p, out in zip(procs, outputs)]


def python():
    return sys.executable
