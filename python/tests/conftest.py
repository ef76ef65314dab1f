"""Helpers for the torch backend tests: start ranks as subprocesses of /usr/bin/python3 (the
interpreter running pytest), each with the MRC_* ports of its test, and wait for them."""

import os
import subprocess
import sys
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


def run_ranks(commands, env, timeout=120):
    """Runs one process per command; returns [(returncode, output)], killing all on timeout."""
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in commands]
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            results.append((p.returncode, out))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        outs = [p.communicate()[0] for p in procs]
        raise AssertionError("ranks timed out:\n" + "\n".join(o or "" for o in outs)) from None
    return results


def python():
    return sys.executable
