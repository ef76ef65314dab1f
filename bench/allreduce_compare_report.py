#!/usr/bin/python3
"""Summary JSON and plot of a bench/allreduce_compare.sh run (all-reduce: mrc vs Gloo vs Open MPI).

    /usr/bin/python3 bench/allreduce_compare_report.py --raw bench/results/raw/allreduce-STAMP \
        --out bench/results/allreduce-compare-DATE.json --plot docs/img/allreduce_compare.png

Reads the raw directories (sweep-nN-T/, fail-nN-T/, context.txt). Definitions:
- time: the slowest rank's average time per all-reduce (float32 sum); mrc and MPI out of place,
  Gloo in place (torch has no out-of-place all_reduce); mrc's in-place numbers are kept too.
- algbw = size / time; busbw = algbw * 2(n-1)/n (nccl-tests); GB/s = 1e9 bytes/s.
- capacity of a host = planes * per-plane rate (tbf counts link-layer bytes: even a perfect
  transport stays a few % below it).
- failure runs: Gloo and MPI: per-iteration wall-clock start/end, so the stall is the longest
  iteration against the median before the cut; mrc: allreduce-perf's average over N iterations
  (out of place and in place) against the clean run at the same size, and the run's wall time.
"""
import argparse
import glob
import json
import os
import re
import statistics

NAMES = {"mrc": "mrc (4 planes)", "gloo": "torch Gloo (1 plane)", "mpi": "Open MPI TCP BTL (4 planes)",
         "mrc_torch": "mrc torch backend (4 planes)"}
COLORS = {"mrc": "#1f77b4", "gloo": "#2ca02c", "mpi": "#d62728", "mrc_torch": "#17becf"}


def read_kv(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            if key:
                out[key] = value.strip()
    return out


def json_lines(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def mrc_doc(path):
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text[text.index("{"):])
    except (OSError, ValueError):
        return None


def rate_bps(rate):
    m = re.fullmatch(r"([0-9.]+)\s*([kmgt]?)(bit|bps)?", rate.lower())
    if not m:
        return None
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)]
    v = float(m.group(1)) * mult
    return v * 8 if m.group(3) == "bps" else v


def rc_ok(meta):
    return all(x == "0" for x in meta.get("rc", "1").split())


def sweep_rows(d, transport, n):
    rows = []
    if transport == "mrc":
        for f in sorted(glob.glob(os.path.join(d, "g*", "rank0.out"))):
            doc = mrc_doc(f)
            if not doc:
                continue
            for r in doc["rows"]:
                o, i = r["out_of_place"], r["in_place"]
                rows.append({"size": r["size"], "time_us": o["time_us"], "algbw": o["algbw_gbps"],
                             "busbw": o["busbw_gbps"], "wrong": o["wrong"] + i["wrong"],
                             "in_place_time_us": i["time_us"], "in_place_busbw": i["busbw_gbps"]})
    else:
        for r in json_lines(os.path.join(d, "rank0.out")):
            rows.append({k: r[k] for k in ("size", "time_us", "algbw", "busbw", "wrong")})
    rows.sort(key=lambda r: r["size"])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot", required=True)
    a = ap.parse_args()
    ctx = read_kv(os.path.join(a.raw, "context.txt"))
    planes = int(ctx.get("planes", 4))
    cap_gbs = rate_bps(ctx.get("rate", "0")) * planes / 8 / 1e9 if rate_bps(ctx.get("rate", "0")) else None

    sweeps = {}
    for d in sorted(glob.glob(os.path.join(a.raw, "sweep-n*-*"))):
        m = re.search(r"sweep-n(\d+)-(\w+)$", d)
        n, t = int(m.group(1)), m.group(2)
        meta = read_kv(os.path.join(d, "meta.txt"))
        nb0 = [int(float(x)) for x in meta.get("nic_bytes_h0_before", "").split()]
        nb1 = [int(float(x)) for x in meta.get("nic_bytes_h0_after", "").split()]
        sweeps.setdefault(str(n), {})[t] = {
            "rows": sweep_rows(d, t, n), "exit_ok": rc_ok(meta), "load_start": float(meta.get("load_start", "nan")),
            "busy_cores_start": float(meta.get("busy_cores_start") or "nan"),
            "loadavg": meta.get("loadavg"),
            "host0_plane_bytes": [y - x for x, y in zip(nb0, nb1)] if nb0 and nb1 else None}

    # Targets, per rank count: busbw at the largest size (and the best of sizes >= 16 MiB).
    targets = {}
    for n, by_t in sweeps.items():
        def at(t, size):
            for r in by_t.get(t, {}).get("rows", []):
                if r["size"] == size:
                    return r
            return None
        sizes = sorted({r["size"] for v in by_t.values() for r in v["rows"]})
        if not sizes:
            continue
        big = sizes[-1]
        tg = {"largest_size": big, "per_size": []}
        for s in sizes:
            e = {"size": s}
            for t in by_t:
                r = at(t, s)
                e[t] = r["busbw"] if r else None
            if e.get("mrc") and e.get("gloo"):
                e["mrc_over_gloo"] = e["mrc"] / e["gloo"]
            if e.get("mrc") and e.get("mpi"):
                e["mrc_over_mpi"] = e["mrc"] / e["mpi"]
            if cap_gbs and e.get("mrc"):
                e["mrc_over_capacity"] = e["mrc"] / cap_gbs
            tg["per_size"].append(e)
        last = tg["per_size"][-1]
        tg["busbw_over_capacity"] = last.get("mrc_over_capacity")
        tg["busbw_over_capacity_target"] = 0.9
        tg["mrc_over_gloo"] = last.get("mrc_over_gloo")
        tg["mrc_over_gloo_target"] = 3.5
        tg["mrc_over_mpi"] = last.get("mrc_over_mpi")
        tg["mrc_over_mpi_target"] = 1.2
        targets[n] = tg

    fails = {}
    for d in sorted(glob.glob(os.path.join(a.raw, "fail-n*-*"))):
        m = re.search(r"fail-n(\d+)-(\w+)$", d)
        n, t = int(m.group(1)), m.group(2)
        meta = read_kv(os.path.join(d, "meta.txt"))
        size = int(meta.get("size", 0))
        bus = 2 * (n - 1) / n
        tf, tr, t0 = int(meta.get("fail_ns", 0)), int(meta.get("repair_ns", 0)), int(meta.get("t0_ns", 0))
        tend = int(meta.get("tend_ns", 0))
        e = {"size": size, "exit_codes": meta.get("rc"), "completed": rc_ok(meta),
             "load_start": float(meta.get("load_start", "nan")),
             "busy_cores_start": float(meta.get("busy_cores_start") or "nan"), "fail_s": (tf - t0) / 1e9,
             "repair_s": (tr - t0) / 1e9, "wall_s": (tend - t0) / 1e9,
             "running_at_fail": meta.get("running_at_fail") == "1",
             "running_at_repair": meta.get("running_at_repair") == "1",
             "data_s": (int(meta["data_ns"]) - t0) / 1e9 if meta.get("data_ns") else None}
        clean = next((r for r in sweeps.get(str(n), {}).get(t, {}).get("rows", []) if r["size"] == size), None)
        e["clean_time_us"] = clean["time_us"] if clean else None
        if t == "mrc":
            doc = mrc_doc(os.path.join(d, "rank0.out"))
            if doc and doc.get("rows"):
                r = doc["rows"][0]
                e.update({"iters": doc.get("iters"), "wrong": doc.get("wrong"), "correct": doc.get("wrong") == 0,
                          "time_us": r["out_of_place"]["time_us"], "busbw": r["out_of_place"]["busbw_gbps"],
                          "in_place_time_us": r["in_place"]["time_us"], "in_place_busbw": r["in_place"]["busbw_gbps"]})
            else:
                e.update({"correct": False, "wrong": None})
            errs = ""
            for f in glob.glob(os.path.join(d, "rank*.err")):
                errs += open(f, errors="replace").read()[-2000:]
            e["stderr_tail"] = errs[-600:] if errs.strip() else ""
        else:
            its = json_lines(os.path.join(d, "rank0.out"))
            # Each iteration is the all-reduce plus its check and the 1-element "go on?" all-reduce;
            # "gap" is the time from the previous all-reduce's end to this one's (a stall can sit
            # in the small all-reduces between two timed ones), "busbw" is size over that gap.
            tl = []
            prev = None
            for i in its:
                gap = (i["end_ns"] - (prev if prev is not None else i["start_ns"])) / 1e9
                tl.append({"t_s": (i["start_ns"] - t0) / 1e9, "dur_s": (i["end_ns"] - i["start_ns"]) / 1e9,
                           "end_s": (i["end_ns"] - t0) / 1e9, "gap_s": gap,
                           "busbw": size / gap / 1e9 * bus, "wrong": i["wrong"]})
                prev = i["end_ns"]
            before = [x["dur_s"] for x in tl if x["t_s"] + x["dur_s"] < (tf - t0) / 1e9]
            e["iterations"] = len(tl)
            e["wrong"] = sum(x["wrong"] for x in tl)
            e["correct"] = e["completed"] and e["wrong"] == 0 and len(tl) > 0
            e["median_iter_before_fail_s"] = statistics.median(before) if before else None
            e["longest_iter_s"] = max((x["dur_s"] for x in tl), default=None)
            e["median_gap_before_fail_s"] = statistics.median([x["gap_s"] for x in tl[1:] if x["end_s"] < (tf - t0) / 1e9] or [float("nan")])
            e["longest_gap_s"] = max((x["gap_s"] for x in tl[1:]), default=None)
            e["stall_s"] = (e["longest_gap_s"] - e["median_gap_before_fail_s"]) if e["longest_gap_s"] else None
            span = [x for x in tl if x["t_s"] < (tr - t0) / 1e9 and x["t_s"] + x["dur_s"] > (tf - t0) / 1e9]
            e["iterations_overlapping_outage"] = len(span)
            e["timeline"] = tl
            errs = ""
            for f in glob.glob(os.path.join(d, "rank*.err")):
                errs += open(f, errors="replace").read()[-2000:]
            e["stderr_tail"] = errs[-600:] if errs.strip() else ""
        fails.setdefault(str(n), {})[t] = e

    summary = {"context": ctx, "host_capacity_gbs": cap_gbs, "sweeps": sweeps, "targets": targets, "failure_runs": fails}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(summary, f, indent=1)

    # --- plot
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns = sorted(sweeps, key=int)
    fig, axes = plt.subplots(2, max(2, len(ns)), figsize=(6.2 * max(2, len(ns)), 9.5))
    for k, n in enumerate(ns):
        ax = axes[0][k]
        for t, v in sweeps[n].items():
            rows = v["rows"]
            if rows:
                ax.plot([r["size"] for r in rows], [r["busbw"] for r in rows], "o-", color=COLORS.get(t), label=NAMES.get(t, t))
        if cap_gbs:
            ax.axhline(cap_gbs, color="k", lw=0.8, ls="--", label=f"host capacity {cap_gbs:.3f} GB/s")
            ax.axhline(0.9 * cap_gbs, color="grey", lw=0.8, ls=":", label="0.9 x capacity (target)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("all-reduce size (bytes, float32)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"{n} ranks, one per host, {planes} planes x {ctx.get('rate')}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes[1][0]
    for n in ns:
        for t, v in sweeps[n].items():
            rows = v["rows"]
            if rows:
                ax.plot([r["size"] for r in rows], [r["time_us"] for r in rows], "o-" if n == ns[0] else "s--",
                        color=COLORS.get(t), label=f"{NAMES.get(t, t)}, {n} ranks")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("all-reduce size (bytes)")
    ax.set_ylabel("time per all-reduce (us)")
    ax.set_title("latency")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax = axes[1][1]
    if fails:
        fn = max(fails, key=int)
        ff = fails[fn]
        shade = None
        for t, e in ff.items():
            f0 = e["fail_s"]  # each run's own cut time: x = seconds since the cut
            if shade is None:
                shade = (0, e["repair_s"] - f0)
            if t == "mrc":
                if e.get("busbw"):
                    ax.hlines(e["busbw"], (e.get("data_s") or 0) - f0, e["wall_s"] - f0, color=COLORS["mrc"], lw=2,
                              label=f"{NAMES['mrc']}: average over the run ({e.get('wrong')} wrong)")
            elif e.get("timeline"):
                xs, ys = [], []
                for x in e["timeline"][1:]:
                    xs += [x["end_s"] - x["gap_s"] - f0, x["end_s"] - f0]
                    ys += [x["busbw"], x["busbw"]]
                ax.plot(xs, ys, color=COLORS.get(t), lw=1.2,
                        label=f"{NAMES.get(t, t)}: each all-reduce, end to end ({'completed' if e['completed'] else 'FAILED'}, {e['wrong']} wrong)")
        if shade:
            ax.axvspan(shade[0], shade[1], color="red", alpha=0.12, label=f"plane {ctx.get('fail_plane')} down")
        ax.set_xlabel("seconds since the plane was cut")
        ax.set_ylabel("busbw (GB/s)")
        size = next(iter(ff.values()))["size"]
        ax.set_title(f"failure run: {fn} ranks, {size >> 20} MiB all-reduces, plane {ctx.get('fail_plane')} cut")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.35)
        ax.legend(fontsize=7, loc="upper left")
    for k in range(2, len(axes[1])):
        axes[1][k].axis("off")
    fig.suptitle(f"all-reduce on the namespace testbed: mrc vs Gloo vs Open MPI ({ctx.get('date', '')}, load at start "
                 f"{min((v['load_start'] for s in sweeps.values() for v in s.values()), default=float('nan')):.2f}-"
                 f"{max((v['load_start'] for s in sweeps.values() for v in s.values()), default=float('nan')):.2f})", fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(a.plot)), exist_ok=True)
    fig.savefig(a.plot, dpi=110)

    # --- text table on stdout
    print(f"host capacity {cap_gbs:.3f} GB/s ({planes} x {ctx.get('rate')})" if cap_gbs else "")
    for n in ns:
        ts = list(sweeps[n])
        print(f"\n{n} ranks: busbw GB/s (time us)")
        print("size".rjust(10) + "".join(t.rjust(24) for t in ts))
        sizes = sorted({r["size"] for v in sweeps[n].values() for r in v["rows"]})
        for s in sizes:
            line = str(s).rjust(10)
            for t in ts:
                r = next((r for r in sweeps[n][t]["rows"] if r["size"] == s), None)
                line += (f"{r['busbw']:.4f} ({r['time_us']:.0f})" if r else "-").rjust(24)
            print(line)
        print("  load1 / busy cores at start: " + ", ".join(
            f"{t} {sweeps[n][t]['load_start']:.2f}/{sweeps[n][t]['busy_cores_start']:.2f}" for t in ts))
        tg = targets.get(n, {})
        print(f"  largest size: mrc/capacity {tg.get('busbw_over_capacity')}, mrc/gloo {tg.get('mrc_over_gloo')}, mrc/mpi {tg.get('mrc_over_mpi')}")
    for n, ff in fails.items():
        for t, e in ff.items():
            print(f"fail n={n} {t} (load1 {e['load_start']:.2f}, busy {e['busy_cores_start']:.2f}): completed {e['completed']} correct {e.get('correct')} wrong {e.get('wrong')} wall {e['wall_s']:.1f}s "
                  + (f"avg busbw {e.get('busbw')} (clean time {e.get('clean_time_us')} us, now {e.get('time_us')} us)" if t == "mrc" else
                     f"iters {e.get('iterations')} median gap before {e.get('median_gap_before_fail_s'):.3f} longest gap {e.get('longest_gap_s'):.3f} stall {e.get('stall_s'):.2f}"))


if __name__ == "__main__":
    main()
