#!/usr/bin/python3
"""bench/latency_report.py: the table, JSON and CDF plot of a bench/latency.sh run.

Reads the raw directory bench/latency.sh wrote (files WHERE.TRANSPORT.SIZE.rROUND.*): mrc perf's
--json and --samples, sockperf's summary and --full-log, fi_pingpong's and mpi_pt2pt's output.
Per path, size and transport: the median over the rounds of each round's p50, p99, p99.9, max
and mean round trip in microseconds; the ratios of mrc1 and mrc4 to udp and tcp. fi_pingpong and
mpi_pt2pt report a mean of half a round trip: doubled, a mean only.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p999", 0.999))


def stats_of(samples):
    s = sorted(samples)
    if not s:
        return None
    out = {name: s[min(len(s) - 1, int(q * len(s)))] for name, q in PERCENTILES}
    out["max"] = s[-1]
    out["mean"] = sum(s) / len(s)
    out["samples"] = len(s)
    return out


def read_csv_column(path, column):
    values = []
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            try:
                values.append(float(parts[column]))
            except (ValueError, IndexError):
                continue
    return values


def parse_mrc(base):
    try:
        with open(base + ".json") as f:
            row = json.load(f)["sweep"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None, []
    samples = read_csv_column(base + ".samples.csv", 1) if os.path.exists(base + ".samples.csv") else []
    return ({"p50": row["p50_us"], "p99": row["p99_us"], "p999": row["p999_us"],
             "max": row["max_us"], "mean": row["mean_us"], "samples": row["timed"]}, samples)


def read_sockperf_log(path):
    """sockperf's --full-log with --full-rtt: [(transmit time in s from its start, round trip in us)]."""
    rows = []
    if os.path.exists(path):  # packet, tx time (s), rx time (s), round trip (us)
        with open(path) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) != 4:
                    continue
                try:
                    rows.append((float(parts[1]), float(parts[3])))
                except ValueError:
                    continue
    return rows


def parse_sockperf(base):
    samples = [rtt for _, rtt in read_sockperf_log(base + ".log.csv")]
    if samples:
        return stats_of(samples), samples
    try:
        text = re.sub(r"\x1b\[[0-9;]*m", "", open(base + ".txt").read())
    except OSError:
        return None, []
    found = {}
    for name, label in (("p50", "50.000"), ("p99", "99.000"), ("p999", "99.900")):
        m = re.search(r"percentile " + re.escape(label) + r" =\s*([0-9.]+)", text)
        if m:
            found[name] = float(m.group(1))
    m = re.search(r"<MAX> observation =\s*([0-9.]+)", text)
    if m:
        found["max"] = float(m.group(1))
    m = re.search(r"avg-rtt=([0-9.]+)", text)
    if m:
        found["mean"] = float(m.group(1))
    return (found if "p50" in found else None), []


def parse_fi(base, size):
    try:
        text = open(base + ".txt").read()
    except OSError:
        return None, []
    for line in text.splitlines():
        f = line.split()
        # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec (bytes may carry a k/m suffix)
        if len(f) >= 8 and f[0][:1].isdigit() and f[2].startswith("="):
            try:
                return {"mean": 2 * float(f[6])}, []
            except ValueError:
                continue
    return None, []


def parse_mpi(base):
    try:
        for line in open(base + ".txt"):
            if line.startswith("{") and '"latency"' in line:
                return {"mean": 2 * json.loads(line)["us"]}, []
    except (OSError, ValueError):
        pass
    return None, []


def load(raw):
    """{(where, transport, size): [round results]} and {(where, transport, size): samples}."""
    runs, samples = {}, {}
    pattern = re.compile(r"^(\w+)\.(\w+)\.(\d+)\.r(\d+)$")
    bases = set()
    for path in glob.glob(os.path.join(raw, "*.r*.*")):
        name = os.path.basename(path)
        m = re.match(r"^(\w+\.\w+\.\d+\.r\d+)\.", name)
        if m:
            bases.add(m.group(1))
    for b in sorted(bases):
        where, transport, size, _ = pattern.match(b).groups()
        base = os.path.join(raw, b)
        size = int(size)
        if transport.startswith("mrc"):
            result, s = parse_mrc(base)
        elif transport in ("udp", "tcp"):
            result, s = parse_sockperf(base)
        elif transport.startswith("fi_"):
            result, s = parse_fi(base, size)
        else:
            result, s = parse_mpi(base)
        key = (where, transport, size)
        if result is not None:
            runs.setdefault(key, []).append(result)
        samples.setdefault(key, []).extend(s)
    return runs, samples


def summarize(runs):
    table = {}
    for key, results in runs.items():
        row = {}
        for field in ("p50", "p99", "p999", "max", "mean"):
            values = [r[field] for r in results if field in r]
            if values:
                row[field] = statistics.median(values)
        row["rounds"] = len(results)
        table[key] = row
    for (where, transport, size), row in table.items():
        if not transport.startswith("mrc"):
            continue
        for peer in ("udp", "tcp"):
            other = table.get((where, peer, size))
            if other is None:
                continue
            for field in ("p50", "p99", "p999"):
                if field in row and field in other and other[field] > 0:
                    row[f"{field}_x_{peer}"] = row[field] / other[field]
    for (where, transport, size), row in table.items():
        if transport in ("fi_mrc", "mpi_mrc"):
            other = table.get((where, transport.replace("mrc", "tcp"), size))
            if other and "mean" in row and other.get("mean", 0) > 0:
                row["mean_x_tcp"] = row["mean"] / other["mean"]
    return table


def print_table(table):
    print("round trips in microseconds (median over rounds); ratios of mrc to raw UDP and kernel TCP")
    print(f"{'path':9} {'transport':9} {'size':>6} {'p50':>8} {'p99':>8} {'p99.9':>8} {'max':>9} "
          f"{'mean':>8} {'p50/udp':>8} {'p50/tcp':>8} {'p999/udp':>9}")
    order = {t: i for i, t in enumerate("mrc1 mrc4 udp tcp fi_mrc fi_tcp mpi_mrc mpi_tcp".split())}
    for key in sorted(table, key=lambda k: (k[0] != "loopback", k[2], order.get(k[1], 99))):
        where, transport, size = key
        row = table[key]

        def cell(field, width, fmt="{:.1f}"):
            return (fmt.format(row[field]) if field in row else "-").rjust(width)

        ratio_note = cell("mean_x_tcp", 8, "{:.2f}x") if "mean_x_tcp" in row else cell("p50_x_udp", 8, "{:.2f}")
        print(f"{where:9} {transport:9} {size:>6} {cell('p50', 8)} {cell('p99', 8)} {cell('p999', 8)} "
              f"{cell('max', 9)} {cell('mean', 8)} {ratio_note} {cell('p50_x_tcp', 8, '{:.2f}')} "
              f"{cell('p999_x_udp', 9, '{:.2f}')}")
    print("fi_* and mpi_*: a mean only (their tools report no distribution); the p50/udp column "
          "shows their ratio to the tcp peer (x)")


def ccdf_line(ax, values, label, **style):
    """One distribution as its complementary CDF: on log axes the tail (p99, p99.9) is where it
    can be read. The label gets the sample count."""
    v = sorted(values)
    n = len(v)
    ax.plot(v, [(n - i) / n for i in range(n)], label=f"{label} ({n})", **style)


def ccdf_axes(ax, title, legend="lower right"):
    """Log axes, labels, grid and legend (where: matplotlib's loc) of a panel of ccdf_line()s."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("round trip (us, log scale)")
    ax.set_ylabel("fraction of exchanges at least this slow")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc=legend)


def plot(samples, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    wheres = sorted({k[0] for k, v in samples.items() if v})
    if not wheres:
        print("no samples to plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(wheres), figsize=(6.5 * len(wheres), 4.5), squeeze=False)
    for ax, where in zip(axes[0], wheres):
        size = min(k[2] for k, v in samples.items() if v and k[0] == where)
        for (w, transport, s), values in sorted(samples.items()):
            if w != where or s != size or not values:
                continue
            ccdf_line(ax, values, transport)
        ccdf_axes(ax, f"{where}, {size}-byte messages")
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw")
    ap.add_argument("--context")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--plot")
    args = ap.parse_args()
    runs, samples = load(args.raw)
    if not runs:
        sys.exit(f"latency_report.py: no results in {args.raw}")
    table = summarize(runs)
    if args.plot:
        plot(samples, args.plot)
    if args.json:
        context = {}
        if args.context and os.path.exists(args.context):
            for line in open(args.context):
                k, _, v = line.strip().partition(" ")
                context[k] = v
        out = {"context": context,
               "results": [{"path": w, "transport": t, "size": s, **row}
                           for (w, t, s), row in sorted(table.items())],
               "rounds": [{"path": w, "transport": t, "size": s, **r}
                          for (w, t, s), rs in sorted(runs.items()) for r in rs]}
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        print_table(table)


if __name__ == "__main__":
    main()
