#!/usr/bin/env python3
"""Runs the scenarios that reproduce published results (docs/SIMULATION.md, "Published results
reproduced") and prints a markdown table of what they measure.

  bench/published.py [--mrc build/pub/src/mrc] [--only PREFIX ...] [--quick] [--out FILE]
                     [--set SECTION.KEY=VALUE ...]

Each experiment is a scenario file in scenarios/ plus overrides (key = value lines replaced in
their [section], a [[fault]] block appended for random drop). Runs one simulation at a time.
--quick keeps only the smaller message size of the 64-host sweep. --set overrides a key in
every MRC scenario (e.g. --set qp.path_policy=p2c to run them under another path policy).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCEN = os.path.join(ROOT, "scenarios")
MiB = 1 << 20


def override(text, sets):
    """sets: {"section.key": value}; replaces `key = ...` inside [section] or adds it there."""
    lines = text.split("\n")
    for dotted, value in sets.items():
        if "." not in dotted:  # a top-level key: before the first [section]
            first = next(i for i, l in enumerate(lines) if l.startswith("["))
            lines.insert(first, "%s = %s" % (dotted, "true" if value is True else "false" if value is False else repr(value)))
            continue
        section, key = dotted.rsplit(".", 1)
        val = json.dumps(value) if isinstance(value, str) else (
            "true" if value is True else "false" if value is False else repr(value))
        start = next(i for i, l in enumerate(lines) if l.strip() == "[%s]" % section)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
        for i in range(start + 1, end):
            if re.match(r"\s*%s\s*=" % re.escape(key), lines[i]):
                lines[i] = "%s = %s" % (key, val)
                break
        else:
            lines.insert(start + 1, "%s = %s" % (key, val))
    return "\n".join(lines)


EXTRA_SETS = {}  # --set: applied to every scenario whose transport is MRC


def run(mrc, scenario, sets=None, loss=0.0, report=False, replace=()):
    text = open(os.path.join(SCEN, scenario)).read()
    text = override(text, sets or {})
    if EXTRA_SETS and not re.search(r'^kind\s*=\s*"(roce|roce_pfc|mptcp)"', text, re.M):
        text = override(text, EXTRA_SETS)
    for old, new in replace:  # text edits, e.g. inside an inline table
        assert old in text, old
        text = text.replace(old, new)
    if loss > 0:
        text += "\n[[fault]]\nat_us = 0\naction = \"faults\"\nloss = %g\n" % loss
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.toml")
        open(path, "w").write(text)
        cmd = [mrc, "sim", path, "--json", "--quiet"]
        if report:
            cmd += ["--report", os.path.join(d, "r")]
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.time() - t0
        if p.returncode == 2 or not p.stdout.strip():
            raise SystemExit("%s: %s" % (scenario, p.stderr.strip()))
        r = json.loads(p.stdout)
        if report:
            r["_report"] = json.load(open(os.path.join(d, "r", "report.json")))
    r["_wall"] = wall
    return r


def gbps(nbytes, ns):
    return nbytes * 8 / ns if ns > 0 else 0.0


def steady_utilisation(rep, hosts, rate_gbps):
    """Aggregate goodput / (hosts x rate) from 10% of the first flow's completion time to that
    completion (every flow still running: a permutation's steady state)."""
    s = rep["series"]
    first = min(rep["fct_all_ns"])
    t0, t1 = 0.1 * first, first
    def at(t):
        ts, b = s["t_ns"], s["placed_bytes"]
        for i in range(1, len(ts)):
            if ts[i] >= t:
                f = (t - ts[i - 1]) / (ts[i] - ts[i - 1])
                return b[i - 1] + f * (b[i] - b[i - 1])
        return b[-1]
    return gbps(at(t1) - at(t0), t1 - t0) / (hosts * rate_gbps)


def row(exp, cfg, r, metric, note=""):
    ok = "ok" if r["ok"] else "FAIL " + r.get("failure", "")
    return "| %s | %s | %s | %.3f ms | %d | %d | %.1f s | %.2f | %s %s |" % (
        exp, cfg, metric, r["completion_time_ns"] / 1e6, r["retransmits"], r["timeouts"],
        r["_wall"], r["events_per_wall_s"] / 1e6, ok, note)


def mrc64(mrc, quick, out):
    sizes = [4 * MiB] if quick else [4 * MiB, 16 * MiB]
    configs = [("MRC 4x100G, 1 QP, 256 EVs", "mrc", 1)] + [
        ("RoCE+PFC 400G, %d QP" % q, "roce", q) for q in (1, 4, 16)]
    for wl in ("ring", "a2a"):
        for size in sizes:
            for loss in (0.0, 0.001, 0.01):
                for name, kind, qps in configs:
                    sets = {"workload.qps": qps}
                    if wl == "ring":
                        sets["workload.message_bytes"] = size
                    else:  # size per host, spread over 63 peers and the QPs
                        sets["workload.message_bytes"] = size // 64 // qps
                    r = run(mrc, "mrc64-%s-%s.toml" % (wl, kind), sets, loss)
                    if wl == "ring":
                        g = r["groups"][0] if r["groups"] else {"busbw_gbit_per_s": 0}
                        m = "busbw %.0f Gbit/s (%.0f %%)" % (g["busbw_gbit_per_s"], g["busbw_gbit_per_s"] / 4)
                    else:
                        g = gbps(r["bytes_written"], r["completion_time_ns"]) / 64
                        m = "per host %.0f Gbit/s (%.0f %%)" % (g, g / 4)
                    out(row("64-GPU %s %d MiB, drop %g %%" % (wl, size // MiB, loss * 100), name, r, m))


def incast(mrc, quick, out):
    for f, name, sets in (("mrc", "MRC (trimming, NSCC, rcv_cwnd_pen)", None),
                          ("mrc", "MRC without rcv_cwnd_pen (incast_penalty = 0)", {"qp.incast_penalty": 0}),
                          ("roce", "RoCE + DCQCN, lossy", None), ("roce-pfc", "RoCE + DCQCN + PFC", None)):
        r = run(mrc, "mrc-incast-victim-%s.toml" % f, sets)
        v = next(g for g in r["groups"] if g["name"] == "victim")
        t = gbps(v["bytes"], v["end_ns"] - v["start_ns"])
        out(row("7:1 incast + victim", name, r, "victim %.0f Gbit/s (%.0f %% of 400G)" % (t, t / 4)))


def ev(mrc, quick, out):
    for name, r in (("no fault", run_nofault(mrc, "mrc-ev-drop20.toml")),
                    ("20 % drop on one of 16 paths", run(mrc, "mrc-ev-drop20.toml"))):
        g = gbps(r["bytes_written"], r["completion_time_ns"])
        e = r["ev_transitions"]
        out(row("EV failover, 8 planes x 2 paths", name, r,
                "%.0f Gbit/s (%.0f %% of 800G)" % (g, g / 8),
                "(%d EVs ->ASSUMED_BAD, %d replaced)" % (e["to_assumed_bad"], e["replaced"])))


def two_flows(mrc, quick, out):
    """[P] §5.2.5: two flows whose EV lists put 3/4 of their packets on one path (spine 0)."""
    for name, sets, replace in (
            ("list [EV0, EV0, EV0, EV1], ECN marks", {}, ()),
            ("same list, ECN marking off", {}, (("ecn_kib = 32", "ecn_kib = 0"),)),
            ("list [EV0, EV1] (no forced EV)", {"qp.ev_list": [[0, 0], [0, 1]]}, ())):
        r = run(mrc, "mrc-two-flows-one-ev.toml", sets, replace=replace)
        g = gbps(r["bytes_written"], r["completion_time_ns"])
        e = r["ev_transitions"]
        out(row("two flows forced onto one EV", name, r, "%.0f Gbit/s (%.0f %% of 2 x 100G)" % (g, g / 2),
                "(%d SKIPs)" % e["to_skip"]))


def large(mrc, quick, out):
    """Payload-free runs (no payload bytes moved: the same runs, faster) at sizes the payload
    limit (4 GiB of writes) rules out: the 64-host all-to-all (MRC at 0 and 1 % drop, RoCE +
    PFC 1 QP), the 64-host ring all-reduce (shuffled ranks, 8 slices) and the NDP permutation,
    at 64 MiB per host and more (--quick: 64 MiB)."""
    sizes = [64 * MiB] if quick else [64 * MiB, 256 * MiB, 1024 * MiB]
    for size in sizes:
        for kind, loss, name in (("mrc", 0.0, "MRC 4x100G, 1 QP, 256 EVs"), ("mrc", 0.01, "MRC 4x100G, 1 QP, 256 EVs"),
                                 ("roce", 0.0, "RoCE+PFC 400G, 1 QP")):
            if loss > 0 and size > 256 * MiB:
                continue  # 1 % drop at 1 GiB per host: hours on this machine
            r = run(mrc, "mrc64-a2a-%s.toml" % kind, {"payload": False, "move_payload": False, "workload.message_bytes": size // 64}, loss)
            g = gbps(r["bytes_written"], r["completion_time_ns"]) / 64
            out(row("64-GPU a2a %d MiB, drop %g %%, payload-free" % (size // MiB, loss * 100),
                    name, r, "per host %.0f Gbit/s (%.1f %%)" % (g, g / 4)))
    for size in sizes[:2]:
        for kind, name in (("mrc", "MRC 4x100G, 1 QP, 256 EVs"), ("roce", "RoCE+PFC 400G, 1 QP")):
            r = run(mrc, "mrc64-ring-%s.toml" % kind, {"payload": False, "move_payload": False, "workload.message_bytes": size})
            g = r["groups"][0] if r["groups"] else {"busbw_gbit_per_s": 0}
            out(row("64-GPU ring %d MiB, shuffled ranks, payload-free" % (size // MiB), name, r,
                    "busbw %.0f Gbit/s (%.1f %%)" % (g["busbw_gbit_per_s"], g["busbw_gbit_per_s"] / 4)))
    for f, name in (("ndp-fattree-k8-mrc.toml", "MRC per-EV ECMP, 8-packet queues"),
                    ("ndp-fattree-k8-mrc-deep.toml", "MRC per-EV ECMP, 900 KiB buffers")):
        r = run(mrc, f, {"payload": False, "move_payload": False, "workload.message_bytes": 64 * MiB}, report=True)
        u = steady_utilisation(r["_report"], 128, 10)
        slow = min(gbps(r["bytes_written"] / 128, t) for t in r["_report"]["fct_all_ns"])
        out(row("NDP FatTree k=8 permutation, 64 MiB, payload-free", name, r,
                "utilisation %.1f %% (slowest flow %.1f Gbit/s)" % (u * 100, slow)))


def run_nofault(mrc, scenario):
    text = open(os.path.join(SCEN, scenario)).read()
    text = text[:text.index("[[fault]]")] if "[[fault]]" in text else text
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as t:
        t.write(text)
    try:
        t0 = time.time()
        p = subprocess.run([mrc, "sim", t.name, "--json", "--quiet"], capture_output=True, text=True)
        r = json.loads(p.stdout)
        r["_wall"] = time.time() - t0
        return r
    finally:
        os.unlink(t.name)


def ndp(mrc, quick, out, k12=False):
    files = [("ndp-fattree-k8-mrc.toml", {}, "MRC per-EV ECMP"),
             ("ndp-fattree-k8-mrc.toml", {"fabric.routing": "spray"}, "MRC spray"),
             ("ndp-fattree-k8-mrc-deep.toml", {}, "MRC per-EV ECMP, 900 KiB buffers (as MPTCP's)"),
             ("ndp-fattree-k8-mptcp.toml", {}, "MPTCP 8 subflows"),
             ("ndp-fattree-k8-roce.toml", {}, "RoCE 1 QP (single path)")]
    for f, sets, name in files:
        for k, hosts in ((8, 128),) + (((12, 432),) if k12 else ()):
            s = dict(sets)
            if k == 12:
                s.update({"fabric.k": 12, "fabric.hosts": 432})
            r = run(mrc, f, s, report=True)
            u = steady_utilisation(r["_report"], hosts, 10)
            fct = r["_report"]["fct_all_ns"]
            slow = min(gbps(r["bytes_written"] / hosts, t) for t in fct)
            out(row("NDP FatTree k=%d permutation" % k, name, r,
                    "utilisation %.1f %% (slowest flow %.1f Gbit/s)" % (u * 100, slow)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mrc", default=os.path.join(ROOT, "build/pub/src/mrc"))
    ap.add_argument("--only", nargs="*", default=["mrc64", "incast", "ev", "two_flows", "ndp"],
                    help="also: large (payload-free runs at 64 MiB - 1 GiB per host, minutes each)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--k12", action="store_true", help="also the 432-host FatTree (slow)")
    ap.add_argument("--out")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override a key in every MRC scenario (a number, true/false or a string)")
    a = ap.parse_args()
    for item in a.set:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            sys.exit("published.py: --set takes SECTION.KEY=VALUE, e.g. qp.path_policy=p2c")
        try:
            EXTRA_SETS[key] = json.loads(value)
        except ValueError:
            EXTRA_SETS[key] = value
    f = open(a.out, "a") if a.out else None

    def out(line):
        print(line, flush=True)
        if f:
            f.write(line + "\n")
            f.flush()
    out("| experiment | configuration | measured | sim time | retransmits | timeouts | wall | M events/s | check |")
    out("|---|---|---|---|---|---|---|---|---|")
    for name in a.only:
        if name == "ndp":
            ndp(a.mrc, a.quick, out, a.k12)
        else:
            globals()[name](a.mrc, a.quick, out)


if __name__ == "__main__":
    main()
