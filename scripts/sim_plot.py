#!/usr/bin/env python3
"""Plots an `mrc sim --report` run: scripts/sim_plot.py report.json report.png

Three panels: goodput over simulated time (bytes placed per interval) with the scenario's
faults marked; the distribution of transfer completion times (CDF; with all-reduce or other
groups, their durations too); and link utilisation as a heat map, one row per (plane, link
class), one cell per link.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def throughput(ax, r):
    t = r["series"]["t_ns"]
    placed = r["series"]["placed_bytes"]
    xs, ys = [], []
    for i in range(1, len(t)):
        dt = t[i] - t[i - 1]
        if dt > 0:
            xs.append(t[i] / 1e6)
            ys.append((placed[i] - placed[i - 1]) * 8 / dt)  # Gbit/s
    ax.plot(xs, ys, lw=1)
    ax.set_ylim(bottom=0)
    for f in r["faults"]:
        ax.axvline(f["at_ns"] / 1e6, color="red", lw=0.8, ls="--")
        ax.text(f["at_ns"] / 1e6, ax.get_ylim()[1] * 0.95, f["what"], rotation=90, fontsize=7,
                color="red", va="top")
    ax.set_xlabel("simulated time (ms); red: faults")
    ax.set_ylabel("goodput, all hosts (Gbit/s)")
    ax.set_title("bytes placed per interval")


def completion(ax, r):
    fct = sorted(r.get("fct_all_ns", []))
    if fct:
        n = len(fct)
        ax.plot([v / 1e6 for v in fct], [(i + 1) / n for i in range(n)], label="transfers")
    groups = [g["duration_ms"] for g in r.get("groups", []) if g["duration_ms"] >= 0]
    if groups:
        groups.sort()
        ax.plot(groups, [(i + 1) / len(groups) for i in range(len(groups))], marker="o",
                label="groups (e.g. all-reduce iterations)")
    ax.set_xlabel("completion time (ms)")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=7)
    ax.set_title("completion times")


def heatmap(ax, fig, r):
    rows = {}
    for link in r["links"]:
        rows.setdefault((link["plane"], link["class"]), []).append(link["utilization"])
    keys = sorted(rows)
    width = max((len(v) for v in rows.values()), default=1)
    grid = [rows[k] + [float("nan")] * (width - len(rows[k])) for k in keys]
    im = ax.imshow(grid, aspect="auto", vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"p{p} {c}" for p, c in keys], fontsize=6)
    ax.set_xlabel("link (index within its plane and class)")
    ax.set_title("link utilisation over the run")
    fig.colorbar(im, ax=ax, fraction=0.03)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sim_plot.py report.json report.png")
    with open(sys.argv[1]) as f:
        r = json.load(f)
    fig, axes = plt.subplots(1, 3, figsize=(18, 5))
    throughput(axes[0], r)
    completion(axes[1], r)
    heatmap(axes[2], fig, r)
    fig.suptitle(f"{r['scenario']} (seed {r['seed']}): {'OK' if r['ok'] else 'FAILED ' + r['failure']}")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)


if __name__ == "__main__":
    main()
