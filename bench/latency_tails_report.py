#!/usr/bin/python3
"""bench/latency_tails_report.py: the table, targets, JSON and CDF plot of a bench/latency_tails.sh run.

Reads the raw directory bench/latency_tails.sh wrote (files SCENARIO.TRANSPORT.rROUND.*, TRANSPORT
mrc or tcp): mrc perf's --json and --samples, sockperf's --full-log, the bulk transfers' JSON (mrc
perf's, iperf3's) and the cut's fault times. Per scenario and transport, every round's round trips
pooled: p50, p99, p99.9 and max in microseconds, the exchanges slower than 5 ms; each round's own
figures in the JSON. The tail targets (docs/BENCHMARKS.md, "Latency tails") are judged on the
pooled samples. Parsing and the CDF panels are bench/latency_report.py's.
"""
import argparse
import glob
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the tree by a root run
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from latency_report import ccdf_axes, ccdf_line, read_csv_column, read_sockperf_log, stats_of  # noqa: E402

SCENARIOS = ("idle", "bulk", "loss", "cut")
TRANSPORTS = ("mrc", "tcp")
LABELS = {"mrc": "mrc, 4 planes", "tcp": "kernel TCP, plane 0"}
SLOW_US = 5000.0        # the cut's target: no exchange slower than 5 ms
LOSS_P999_US = 2000.0   # at 1 % loss: p99.9 <= 2 ms
BULK_X_IDLE = 3.0       # under bulk: p99 <= 3 x idle p99
RTO_MIN_US = 200000.0   # Linux's minimum retransmission timeout


def read_context(raw):
    context = {}
    path = os.path.join(raw, "context.txt")
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.strip().partition(" ")
            context[k] = v
    return context


def mrc_samples(base):
    if not os.path.exists(base + ".samples.csv"):
        return []
    return read_csv_column(base + ".samples.csv", 1)


def tcp_rows(base):
    return read_sockperf_log(base + ".log.csv")


def tcp_unfinished_us(base):
    """How long sockperf's last exchange had waited, unanswered, when its run ended (a lower
    bound of its round trip, which its log leaves out): its run minus the 0.4 s warm-up, the
    measured part (which ends at the last answer) and the 0.05 s it always leaves at the end."""
    try:
        text = open(base + ".txt", errors="replace").read()
        total = float(re.search(r"\[Total Run\] RunTime=([0-9.]+)", text).group(1))
        valid = float(re.search(r"\[Valid Duration\] RunTime=([0-9.]+)", text).group(1))
    except (OSError, AttributeError, ValueError):
        return 0.0
    return max(0.0, (total - 0.4 - valid - 0.05) * 1e6)


COUNTERS = ("retransmits", "spurious_retransmits", "losses_tail", "losses_timeout", "timeouts",
            "tail_probes", "ev_probes")


def mrc_counters(base):
    """The ping-pong QP's loss and retransmission counters at each end, and its largest RTT."""
    out = {}
    for side, path in (("client", base + ".json"), ("server", base + ".server.json")):
        try:
            with open(path) as f:
                qps = json.load(f)["summary"]["qps"]
        except (OSError, ValueError, KeyError):
            continue
        if qps:
            c = {k: sum(q.get(k, 0) for q in qps) for k in COUNTERS}
            c["rtt_max_us"] = max(q["rtt_us"]["max"] for q in qps)
            out[side] = c
    return out


def bulk_goodput(base, transport):
    """Gbit/s of the bulk transfer beside the ping-pong (None if there was none or it failed)."""
    try:
        if transport == "mrc":
            with open(base + ".bulk.json") as f:
                d = json.load(f)
            return d["sweep"][0]["gbit_per_s"]
        with open(base + ".iperf.json") as f:
            d = json.load(f)
        return d["end"]["sum_received"]["bits_per_second"] / 1e9
    except (OSError, ValueError, KeyError, IndexError):
        return None


def faults(base):
    """The cut's epoch times (traffic seen, fail and repair started and returned), or None."""
    try:
        times = dict(line.split() for line in open(base + ".faults") if line.strip())
        return {k: float(v) for k, v in times.items()}
    except (OSError, ValueError):
        return None


def slow_exchanges(r, base, limit_us=SLOW_US):
    """The exchanges slower than limit_us, each with when it started, in seconds from the moment
    its traffic was seen on the cut plane (approximately: mrc's from the sum of the round trips
    before it, scaled to the timed phase's length; sockperf's from its log's transmit times,
    after its 0.4 s warm-up)."""
    times = []
    if r["transport"] == "mrc":
        try:
            seconds = json.load(open(base + ".json"))["sweep"][0]["seconds"]
        except (OSError, ValueError, KeyError, IndexError):
            return []
        total = sum(r["samples"]) / 1e6 or 1.0
        acc = 0.0
        for v in r["samples"]:
            times.append(acc / total * seconds)
            acc += v / 1e6
    else:
        rows = tcp_rows(base)
        times = [0.4 + tx - rows[0][0] for tx, _ in rows] if rows else []
    return [{"at_s": round(t, 3), "us": round(v, 1)}
            for t, v in zip(times, r["samples"]) if v > limit_us]


def load(raw):
    rounds = []
    for path in sorted(glob.glob(os.path.join(raw, "*.*.r*.start"))):
        m = re.match(r"^(\w+)\.(mrc|tcp)\.r(\d+)\.start$", os.path.basename(path))
        if not m:
            continue
        scenario, transport, rnd = m.group(1), m.group(2), int(m.group(3))
        base = path[: -len(".start")]
        r = {"scenario": scenario, "transport": transport, "round": rnd,
             "bulk_gbit_per_s": bulk_goodput(base, transport), "faults": None}
        f = faults(base) if scenario == "cut" else None
        if f:  # seconds from the traffic seen on the cut plane
            zero = f.pop("traffic_start", None) or float(open(path).read().split()[0])
            r["faults"] = {k: round(v - zero, 3) for k, v in f.items()}
            try:  # when the ping-pong's client returned
                r["faults"]["client_done"] = round(float(open(base + ".end").read().split()[0]) - zero, 3)
            except (OSError, ValueError, IndexError):
                pass
        if transport == "mrc":
            r["samples"] = mrc_samples(base)
            r["counters"] = mrc_counters(base)
        else:
            r["samples"] = [rtt for _, rtt in tcp_rows(base)]
            waited = tcp_unfinished_us(base)
            if waited > SLOW_US:  # counted as a sample of that (lower-bound) length
                r["samples"].append(waited)
                r["unfinished_us"] = round(waited, 1)
        if r["faults"]:
            r["slow"] = slow_exchanges(r, base)
        rounds.append(r)
    order = {s: i for i, s in enumerate(SCENARIOS)}
    rounds.sort(key=lambda r: (order.get(r["scenario"], 99), r["transport"], r["round"]))
    return rounds


def round_row(r):
    row = {"scenario": r["scenario"], "transport": r["transport"], "round": r["round"]}
    s = stats_of(r["samples"])
    if s:
        row.update(s)
        row["over_5ms"] = sum(1 for v in r["samples"] if v > SLOW_US)
    else:
        row["samples"] = 0
    if r["bulk_gbit_per_s"] is not None:
        row["bulk_gbit_per_s"] = r["bulk_gbit_per_s"]
    if r["faults"] is not None:
        row["faults_s"] = r["faults"]
    for k in ("counters", "slow", "unfinished_us"):
        if r.get(k):
            row[k] = r[k]
    return row


def summarize(rounds):
    table = {}
    for scenario in SCENARIOS:
        for transport in TRANSPORTS:
            mine = [r for r in rounds if r["scenario"] == scenario and r["transport"] == transport]
            if not mine:
                continue
            pooled = [v for r in mine for v in r["samples"]]
            row = {"rounds": len(mine)}
            s = stats_of(pooled)
            if s:
                row.update(s)
                row["over_5ms"] = sum(1 for v in pooled if v > SLOW_US)
            else:
                row["samples"] = 0
            bulk = [r["bulk_gbit_per_s"] for r in mine if r["bulk_gbit_per_s"] is not None]
            if bulk:
                row["bulk_gbit_per_s_min"] = min(bulk)
                row["bulk_gbit_per_s_max"] = max(bulk)
            table[(scenario, transport)] = row
    return table


def targets(table, context):
    """Each tail target that this run's scenarios can judge."""
    out = []

    def get(scenario, transport, field):
        return table.get((scenario, transport), {}).get(field)

    idle99, bulk99, tcpbulk99 = get("idle", "mrc", "p99"), get("bulk", "mrc", "p99"), get("bulk", "tcp", "p99")
    if idle99 and bulk99:
        x = bulk99 / idle99
        out.append({"target": "bulk: mrc p99 <= 3 x mrc idle p99", "value": round(x, 2),
                    "detail": f"{bulk99:.0f} / {idle99:.0f} us", "met": x <= BULK_X_IDLE})
    if bulk99 and tcpbulk99:
        x = bulk99 / tcpbulk99
        out.append({"target": "bulk: mrc p99 below TCP's p99 under its bulk", "value": round(x, 3),
                    "detail": f"{bulk99:.0f} / {tcpbulk99:.0f} us", "met": bulk99 < tcpbulk99})
    loss999 = get("loss", "mrc", "p999")
    if loss999 is not None:
        pct = context.get("loss_percent", "?")
        out.append({"target": f"loss {pct} %: mrc p99.9 <= 2 ms", "value": round(loss999, 1),
                    "detail": f"{loss999:.0f} us", "met": loss999 <= LOSS_P999_US})
    cutmax = get("cut", "mrc", "max")
    if cutmax is not None:
        n = get("cut", "mrc", "over_5ms")
        out.append({"target": "cut: no mrc exchange slower than 5 ms", "value": round(cutmax, 1),
                    "detail": f"slowest {cutmax:.0f} us, {n} over 5 ms", "met": n == 0})
    tcpcut = get("cut", "tcp", "max")
    if tcpcut is not None:
        out.append({"target": "cut: TCP waits out its RTO (slowest exchange >= 200 ms), same run",
                    "value": round(tcpcut, 1), "detail": f"slowest {tcpcut / 1000:.0f} ms",
                    "met": tcpcut >= RTO_MIN_US})
    return out


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def print_table(table, tgt, rounds, context):
    print(f"round trips in microseconds, {context.get('size', '?')}-byte messages, every round's "
          f"exchanges pooled; testbed: {context.get('testbed', '?')}")
    print(f"{'scenario':8} {'transport':20} {'rounds':>6} {'samples':>8} {'p50':>8} {'p99':>8} "
          f"{'p99.9':>8} {'max':>9} {'>5ms':>5}  bulk Gbit/s (min-max)")
    for (scenario, transport), row in table.items():
        bulk = ""
        if "bulk_gbit_per_s_min" in row:
            bulk = f"{row['bulk_gbit_per_s_min']:.2f}-{row['bulk_gbit_per_s_max']:.2f}"
        print(f"{scenario:8} {LABELS[transport]:20} {row['rounds']:>6} {row.get('samples', 0):>8} "
              f"{fmt(row.get('p50')):>8} {fmt(row.get('p99')):>8} {fmt(row.get('p999')):>8} "
              f"{fmt(row.get('max')):>9} {row.get('over_5ms', '-'):>5}  {bulk}")
    for r in rounds:
        if not r["faults"]:
            continue
        f = r["faults"]
        plane = context.get("cut_plane", "?") if r["transport"] == "mrc" else 0
        print(f"cut, {r['transport']} round {r['round']}: plane {plane} failed "
              f"{f.get('fail_start', 0):.2f}-{f.get('fail_done', 0):.2f} s and repaired "
              f"{f.get('repair_start', 0):.2f}-{f.get('repair_done', 0):.2f} s after its ping-pong "
              f"traffic was seen (when the command started and returned)")
        if f.get("repair_done", 0) > f.get("client_done", 1e9):
            print(f"  WARNING: the repair ended after the ping-pong's client had ({f['client_done']:.2f} s): "
                  f"the fault commands were slow (a busy machine or a held testbed lock); "
                  f"run it again or give --cut-for, --seconds more room")
        if r.get("unfinished_us"):
            print(f"  sockperf's last exchange was still unanswered when it stopped, after "
                  f"{r['unfinished_us'] / 1000:.1f} ms: counted as an exchange that long (at least)")
        slow = sorted(r.get("slow", []), key=lambda x: -x["us"])
        if slow:
            shown = ", ".join(f"{x['us'] / 1000:.1f} ms at {x['at_s']:.2f} s" for x in slow[:8])
            more = f" and {len(slow) - 8} more" if len(slow) > 8 else ""
            print(f"  slower than 5 ms, slowest first (when each began): {shown}{more}")
    counted = [r for r in rounds if r.get("counters")]
    if counted:
        print("mrc ping-pong QP, client / server: retransmits (spurious), tail resends, timeouts, "
              "largest RTT sample (us)")
        for r in counted:
            c = r["counters"]
            cells = []
            for side in ("client", "server"):
                x = c.get(side)
                cells.append("-" if x is None else
                             f"{x['retransmits']} ({x['spurious_retransmits']}), {x['losses_tail']}, "
                             f"{x['timeouts']}, {x['rtt_max_us']:.0f}")
            print(f"  {r['scenario']:5} round {r['round']}: {cells[0]} / {cells[1]}")
    print("targets:")
    for t in tgt:
        print(f"  {'met    ' if t['met'] else 'NOT met'}  {t['target']}: {t['value']} ({t['detail']})")
    idle = table.get(("idle", "mrc"), {})
    if idle.get("over_5ms"):
        print(f"note: {idle['over_5ms']} idle mrc exchanges were slower than 5 ms with no fault at "
              f"all (slowest {idle['max']:.0f} us): the machine's own stalls, which the cut's count "
              f"includes too")
    if ("cut", "tcp") in table:
        print("TCP's cut: a segment sent into the failed plane is retransmitted only when its "
              "retransmission timeout fires (200 ms at least, doubling while the plane is down), so "
              "its slowest exchange is the cut's length rounded up to the RTO's backoff steps; TCP "
              "has no other path to move to.")


def plot(rounds, path, context):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    present = [s for s in SCENARIOS if any(r["scenario"] == s and r["samples"] for r in rounds)]
    if not present:
        print("no samples to plot", file=sys.stderr)
        return
    cols = min(2, len(present))
    rows = (len(present) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.4 * rows), squeeze=False)
    for ax in axes.flat[len(present):]:
        ax.set_visible(False)
    titles = {"idle": "idle", "bulk": "beside a bulk transfer",
              "loss": f"{context.get('loss_percent', '?')} % loss on every plane",
              "cut": f"plane {context.get('cut_plane', '?')} cut for {context.get('cut_for', '?')} s"}
    colors = {"mrc": "tab:blue", "tcp": "tab:red"}
    for ax, scenario in zip(axes.flat, present):
        for transport in TRANSPORTS:
            pooled = [v for r in rounds if r["scenario"] == scenario and r["transport"] == transport
                      for v in r["samples"]]
            if pooled:
                ccdf_line(ax, pooled, LABELS[transport], color=colors[transport])
        if scenario == "cut":
            ax.axvline(SLOW_US, color="gray", linestyle="--", linewidth=0.8)
        if scenario == "loss":
            ax.axvline(LOSS_P999_US, color="gray", linestyle="--", linewidth=0.8)
        # Upper right: the slowest exchanges, at the bottom right, stay visible.
        ccdf_axes(ax, f"{titles[scenario]}, {context.get('size', '?')} B", legend="upper right")
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--plot")
    args = ap.parse_args()
    rounds = load(args.raw)
    if not any(r["samples"] for r in rounds):
        sys.exit(f"latency_tails_report.py: no samples in {args.raw}")
    context = read_context(args.raw)
    table = summarize(rounds)
    tgt = targets(table, context)
    if args.plot:
        plot(rounds, args.plot, context)
    if args.json:
        json.dump({"context": context,
                   "results": [{"scenario": s, "transport": t, **row} for (s, t), row in table.items()],
                   "targets": tgt,
                   "rounds": [round_row(r) for r in rounds]}, sys.stdout, indent=1)
        print()
    else:
        print_table(table, tgt, rounds, context)


if __name__ == "__main__":
    main()
