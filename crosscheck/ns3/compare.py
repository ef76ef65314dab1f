#!/usr/bin/env python3
"""Builds the ns-3 cross-check table from crosscheck/ns3/results/raw/*.json (run.sh).

usage: compare.py SCENARIO_DIR RESULTS_DIR
Writes RESULTS_DIR/comparison.json (every run, and per scenario and simulator the mean and
range over seeds) and RESULTS_DIR/comparison.md (the table in docs/SIMULATION.md).
"""
import glob
import json
import os
import re
import statistics
import sys
import tomllib

DESCRIPTIONS = {
    "xcheck-spray": "spray, trimming",
    "xcheck-ecmp": "per-flow ECMP, trimming",
    "xcheck-ecmp-linkdown": "per-flow ECMP, trimming, leaf0-spine0 failed at 200 us",
    "xcheck-spray-linkdown": "spray, trimming, leaf0-spine0 failed at 200 us",
    "xcheck-shallow-trim": "per-flow ECMP, shallow buffers, trimming",
    "xcheck-shallow-drop": "per-flow ECMP, shallow buffers, drop-tail",
}
ORDER = list(DESCRIPTIONS)


def load_runs(raw):
    runs = {}
    for path in sorted(glob.glob(os.path.join(raw, "*.json"))):
        m = re.match(r"(.*)-s(\d+)-(mrc|ns3|ns3r|ns3f|ns3rf)\.json$", os.path.basename(path))
        if not m:
            continue
        name, seed, sim = m.group(1), int(m.group(2)), m.group(3)
        text = open(path).read().strip()
        try:
            j = json.loads(text)
        except json.JSONDecodeError:
            j = {"ok": False, "failure": "no JSON output: " + text[:200]}
        runs.setdefault(name, {}).setdefault(sim, {})[seed] = j
    return runs


def line_rate_gbps(scenario_dir, name):
    with open(os.path.join(scenario_dir, name + ".toml"), "rb") as f:
        sc = tomllib.load(f)
    fab = sc["fabric"]
    return fab["hosts"] * fab["host_link"]["rate_gbps"]


def metrics(j, rate):
    ok = bool(j.get("ok"))
    t = j.get("completion_time_ns", -1)
    goodput = j["bytes_written"] * 8 / t / rate if ok and t > 0 else None
    ev = j.get("ev_transitions", {})
    return {
        "ok": ok,
        "failure": j.get("failure", ""),
        "completion_ms": t / 1e6 if t and t > 0 else None,
        "goodput_fraction": goodput,
        "retransmits": j.get("retransmits"),
        "trims": j.get("trims"),
        "fabric_drops": j.get("fabric_drops"),
        "timeouts": j.get("timeouts"),
        "nacks": j.get("nacks"),
        "ecn_marks": j.get("ecn_marks"),
        "refused": j.get("refused_packets"),
        "evs_assumed_bad": ev.get("to_assumed_bad"),
        "events": j.get("events"),
        "wall_s": j.get("wall_s"),
        "events_per_wall_s": j.get("events_per_wall_s"),
    }


def summary(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return {"mean": statistics.mean(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def fmt(s, kind):
    if s is None:
        return "—"
    if kind == "ms":
        f = lambda v: f"{v:.3f}"
    elif kind == "pct":
        f = lambda v: f"{100 * v:.1f} %"
    elif kind == "mev":
        f = lambda v: f"{v / 1e6:.2f}"
    else:
        f = lambda v: f"{v:.0f}" if s["mean"] >= 10 or s["mean"] == int(s["mean"]) else f"{v:.1f}"
    if s["n"] == 1 or s["min"] == s["max"]:
        return f(s["mean"])
    return f"{f(s['mean'])} ({f(s['min'])}–{f(s['max'])})"


def main():
    scenario_dir, out = sys.argv[1], sys.argv[2]
    runs = load_runs(os.path.join(out, "raw"))
    result = {"scenarios": {}}
    names = [n for n in ORDER if n in runs] + sorted(n for n in runs if n not in ORDER)
    rows = []
    for name in names:
        rate = line_rate_gbps(scenario_dir, name)
        entry = {"description": DESCRIPTIONS.get(name, name), "line_rate_gbps": rate, "runs": {}, "summary": {}}
        for sim in ("mrc", "ns3", "ns3r", "ns3f", "ns3rf"):
            per_seed = {seed: metrics(j, rate) for seed, j in sorted(runs[name].get(sim, {}).items())}
            entry["runs"][sim] = per_seed
            keys = next(iter(per_seed.values())).keys() if per_seed else []
            entry["summary"][sim] = {
                k: summary([m[k] for m in per_seed.values()])
                for k in keys if k not in ("ok", "failure")
            }
            entry["summary"][sim]["ok_runs"] = sum(1 for m in per_seed.values() if m["ok"])
            entry["summary"][sim]["runs"] = len(per_seed)
            entry["summary"][sim]["failures"] = sorted({m["failure"] for m in per_seed.values() if not m["ok"]})
        result["scenarios"][name] = entry
        for sim, label in (("mrc", "ours (`mrc sim`)"), ("ns3", "ns-3 3.37"),
                           ("ns3r", "ns-3, thresholds − 1 packet"), ("ns3f", "ns-3, framing 66 B"),
                           ("ns3rf", "ns-3, both")):
            s = entry["summary"].get(sim, {})
            if not s.get("runs"):
                continue
            rows.append(
                f"| {entry['description']} | {label} | {s['ok_runs']}/{s['runs']} | {fmt(s['completion_ms'], 'ms')} | "
                f"{fmt(s['goodput_fraction'], 'pct')} | {fmt(s['trims'], 'n')} | {fmt(s['fabric_drops'], 'n')} | "
                f"{fmt(s['retransmits'], 'n')} | {fmt(s['refused'], 'n')} | {fmt(s['timeouts'], 'n')} | "
                f"{fmt(s['ecn_marks'], 'n')} | {fmt(s['evs_assumed_bad'], 'n')} | {fmt(s['events'], 'mev')} | "
                f"{fmt(s['wall_s'], 'ms')} | {fmt(s['events_per_wall_s'], 'mev')} |")
    seeds = max((len(r) for e in runs.values() for r in e.values()), default=0)
    md = [
        f"Mean (min–max) over {seeds} seeds; 16 hosts, 4 leaves x 4 hosts, 4 spines, one plane, every link",
        "10 Gbit/s and 1 us; random permutation, 4 x 1 MiB per host (64 MiB). Goodput = bytes written x 8 /",
        "completion time / (16 x 10 Gbit/s). trims = trimmed packets the receivers' engines saw; drops =",
        "packets the fabric lost (queue overflow, failed link); refused = packets the engines discarded",
        "(duplicates of spurious retransmissions); EVs bad = EV transitions to ASSUMED_BAD.",
        "",
        "| configuration | simulator | ok | completion ms | goodput / line rate | trims | drops | retransmits | refused | timeouts | ECN marks | EVs bad | M events | wall s | M events / wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ] + rows
    # Same seed = same permutation, PSNs and immediates in both: the completion times side by side.
    md += ["", "Completion time per seed, ms: ours / ns-3 (ns-3 − ours in %); same seed = same permutation,",
           "immediates and initial PSNs, but not the same paths (the ECMP hashes differ)", "",
           "| configuration | " + " | ".join(f"seed {s}" for s in range(1, seeds + 1)) + " |",
           "|---|" + "---|" * seeds]
    for name in names:
        e = result["scenarios"][name]
        cells = []
        for seed in range(1, seeds + 1):
            a = e["runs"]["mrc"].get(seed, {}).get("completion_ms")
            b = e["runs"].get("ns3", {}).get(seed, {}).get("completion_ms")
            cells.append(f"{a:.3f} / {b:.3f} ({100 * (b - a) / a:+.1f} %)" if a and b else "—")
        md.append(f"| {e['description']} | " + " | ".join(cells) + " |")
    # Paired by seed: (ns-3 variant - ours) / ours, completion time.
    variants = [("ns3", "ns-3"), ("ns3r", "thresholds − 1 packet"), ("ns3f", "framing 66 B"), ("ns3rf", "both")]
    md += ["", "Completion time, ns-3 − ours in % of ours, paired by seed: mean ± s.d. (min, max)", "",
           "| configuration | " + " | ".join(label for _, label in variants) + " |", "|---|" + "---|" * len(variants)]
    for name in names:
        e = result["scenarios"][name]
        cells = []
        for sim, _ in variants:
            d = []
            for seed, m in e["runs"]["mrc"].items():
                b = e["runs"].get(sim, {}).get(seed, {}).get("completion_ms")
                if m.get("completion_ms") and b:
                    d.append(100 * (b - m["completion_ms"]) / m["completion_ms"])
            sd = statistics.stdev(d) if len(d) > 1 else 0.0
            cells.append(f"{statistics.mean(d):+.1f} ± {sd:.1f} ({min(d):+.1f}, {max(d):+.1f})" if d else "—")
            e.setdefault("paired_completion_diff_pct", {})[sim] = d
        md.append(f"| {e['description']} | " + " | ".join(cells) + " |")
    failures = [(n, sim, f) for n, e in result["scenarios"].items() for sim in e["summary"]
                for f in e["summary"][sim]["failures"]]
    if failures:
        md += ["", "Failed runs:"] + [f"- {n} {sim}: {f}" for n, sim, f in failures]
    with open(os.path.join(out, "comparison.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out, "comparison.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
