#!/usr/bin/env python3
"""Trains the health path policy's parameters (core/path_policy.h, HealthPolicyConfig) on the
training scenarios of bench/paths_eval.py, and writes them as data.

A seeded random search: `--candidates` parameter sets drawn from the search seed (ev_shift
2..6; ratio 1.5..8 and floor 0.01..0.2, log-uniform), plus the current defaults, each run on
every training scenario with the training seeds (101.. : disjoint from the test seeds 1..N of
paths_eval.py, and the training scenarios from the test ones). A candidate's score is the mean
over scenarios of log(its mean completion time / the rules'), lower is better; a candidate
that is more than 2 % slower than the rules in any scenario is out. The best one is written to
data/path_policy/health.json with everything needed to make it again.

Usage: bench/paths_train.py [--search-seed S] [--candidates N] [--seeds N] [--jobs N]
                            [--mrc PATH] [--out FILE]
"""
import argparse
import json
import math
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paths_eval as pe  # noqa: E402

FIRST_TRAIN_SEED = 101
DEFAULTS = {"ev_shift": 4, "ratio": 3.0, "floor": 0.03}


def draw(rng):
    return {"ev_shift": rng.randint(2, 6),
            "ratio": round(math.exp(rng.uniform(math.log(1.5), math.log(8))), 3),
            "floor": round(math.exp(rng.uniform(math.log(0.01), math.log(0.2))), 4)}


def qp_extra(params):
    return (f'health_ev_shift = {params["ev_shift"]}\nhealth_ratio = {params["ratio"]}\n'
            f'health_floor = {params["floor"]}\n')


def evaluate(a, policy, params, tag):
    """Mean completion time per training scenario."""
    cells, topo = pe.plan("train", [policy], "")
    jobs = []
    for scen, w, kind, param, pol in cells:
        path = os.path.join(a.work, "scenarios", f"{scen}-{tag}.toml")
        with open(path, "w") as f:
            f.write(pe.scenario_text(scen, topo, w, kind, param, pol,
                                     qp_extra(params) if params else ""))
        for s in range(FIRST_TRAIN_SEED, FIRST_TRAIN_SEED + a.seeds):
            jobs.append((scen, pol, path, s))
    runs = pe.execute(a, jobs)
    by = {}
    for r in runs:
        by.setdefault(r["scenario"], []).append(r["completion_time_ns"])
    return {scen: statistics.fmean(v) for scen, v in by.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--search-seed", type=int, default=1)
    ap.add_argument("--candidates", type=int, default=24)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--mrc", default=os.path.join(pe.ROOT, "build/release/src/mrc"))
    ap.add_argument("--work", default="bench/results/paths-train")
    ap.add_argument("--out", default=os.path.join(pe.ROOT, "data/path_policy/health.json"))
    a = ap.parse_args()
    if a.candidates < 1 or a.seeds < 1:
        sys.exit("paths_train: --candidates and --seeds must be at least 1")
    a.mrc = pe.private_copy(a.mrc, a.work)
    rules = evaluate(a, "rules", None, "rules")
    rng = random.Random(a.search_seed)
    candidates = [dict(DEFAULTS)] + [draw(rng) for _ in range(a.candidates)]
    results = []
    for i, params in enumerate(candidates):
        means = evaluate(a, "health", params, f"c{i}")
        ratios = {s: means[s] / rules[s] for s in rules}
        score = statistics.fmean(math.log(r) for r in ratios.values())
        worst = max(ratios.values())
        results.append({"params": params, "score": score, "worst_ratio": worst,
                        "eligible": worst <= 1.02})
        print(f"paths_train: candidate {i}: {params} score {score:+.4f} worst {worst:.3f}",
              file=sys.stderr, flush=True)
    eligible = [r for r in results if r["eligible"]] or results
    best = min(eligible, key=lambda r: r["score"])
    out = {"policy": "health", **best["params"],
           "train_score_mean_log_ratio_to_rules": round(best["score"], 5),
           "train_worst_ratio_to_rules": round(best["worst_ratio"], 4),
           "search": {"script": "bench/paths_train.py", "search_seed": a.search_seed,
                      "candidates": a.candidates, "train_seeds": [FIRST_TRAIN_SEED,
                                                                  FIRST_TRAIN_SEED + a.seeds - 1],
                      "train_set": "paths_eval.py SETS['train']",
                      "command": f"bench/paths_train.py --search-seed {a.search_seed} "
                                 f"--candidates {a.candidates} --seeds {a.seeds}"},
           "all_candidates": results}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps({k: v for k, v in out.items() if k != "all_candidates"}, indent=1))


if __name__ == "__main__":
    main()
