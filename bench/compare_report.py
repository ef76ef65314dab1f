#!/usr/bin/python3
"""Summary JSON and plot of a bench/compare.sh run (mrc vs TCP vs MPTCP on the namespace testbed).

    /usr/bin/python3 bench/compare_report.py --raw bench/results/raw/STAMP \
        --out bench/results/compare-DATE.json --plot docs/img/compare.png

Reads the raw files compare.sh wrote (one directory per scenario and transport: meta.txt, the
client's and server's JSON, bash `times` of each, samples.txt of the receiver's NIC counters)
and computes what docs/BENCHMARKS.md reports. Definitions (all rates in bit/s):

- goodput: application bytes delivered per second. mrc: bytes of completed WRITEs during the
  sending phase (`sweep[0]` of the client's JSON); iperf3: `end.sum_received`; raw UDP: bytes
  the receiver got from its first to its last datagram.
- capacity: the sum of the plane rates (tbf counts link-layer bytes, so even a perfect
  transport stays below 1: mrc's 4136-byte datagrams carry 4096 bytes in 4178 bytes on the
  link, 0.980; TCP at MTU 9000 with timestamps 8936 in 9014, 0.991).
- wire throughput: bytes received on the receiver's NICs (/proc/net/dev, every 1 ms in the cut
  runs), headers and retransmissions included; the same counter for every transport.
- recovery after the cut (transports with surviving planes): the time from the cut (the last
  millisecond in which the cut plane delivered anything) until the wire throughput is >= 90 % of
  the surviving capacity over the next 10 ms and over the next 100 ms.
- CPU: the user + system time of the sending and receiving processes (getrusage of their
  children, via bash `times`), and the whole machine's busy time from /proc/stat during the run
  minus the busy rate measured in the 2 s before it (other tenants); goodput per CPU-second is
  delivered Gbit divided by CPU-seconds.
"""
import argparse
import json
import os
import re

import numpy as np

TRANSPORT_NAMES = {"mrc": "mrc, udp backend", "mrc_xdp": "mrc, xdp backend", "mptcp": "MPTCP (4 subflows)",
                   "tcp": "TCP (1 plane)", "udp_gso": "raw UDP + GSO"}
COLORS = {"mrc": "#1f77b4", "mrc_xdp": "#9467bd", "mptcp": "#ff7f0e", "tcp": "#2ca02c", "udp_gso": "#7f7f7f"}
MRC_TRANSPORTS = ("mrc", "mrc_xdp")  # mrc perf, by backend


def read_kv(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, value = line.partition(" ")
            out[key] = value.strip()
    return out


def read_json(path):
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text[text.index("{"):]) if "{" in text else None
    except (OSError, ValueError):
        return None


def read_times(path):
    """bash `times`: line 2 is the children's user and system time, e.g. '0m1.234s 0m0.567s'."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
        secs = []
        for word in lines[1].split():
            m, s = word.rstrip("s").split("m")
            secs.append(int(m) * 60 + float(s))
        return {"user_s": secs[0], "sys_s": secs[1]}
    except (OSError, IndexError, ValueError):
        return None


def stat_fields(line):
    v = [int(x) for x in line.split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    total = busy + v[3] + v[4]
    return busy, total, v[6]


def rate_bits(text):
    units = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    t = text.lower()
    for u in sorted(units, key=len, reverse=True):
        if t.endswith(u):
            return float(t[: -len(u)]) * units[u]
    return float(t)


class Samples:
    """Cumulative rx bytes per plane at real times (seconds since the client started)."""

    def __init__(self, path, t0_ns):
        rows = []
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                rows.append([int(x) for x in line.split()])
        a = np.array(rows, dtype=np.float64) if rows else np.zeros((0, 5))
        self.t = (a[:, 0] - t0_ns) / 1e9
        self.planes = a[:, 1:] - a[0, 1:] if len(a) else a[:, 1:]
        self.total = self.planes.sum(axis=1) if len(a) else np.zeros(0)

    def bytes_between(self, a, b, plane=None):
        cum = self.total if plane is None else self.planes[:, plane]
        return float(np.interp(b, self.t, cum) - np.interp(a, self.t, cum))

    def rate(self, a, b, plane=None):
        return self.bytes_between(a, b, plane) * 8 / (b - a) if b > a else 0.0

    def series(self, step, start=None, end=None):
        start = self.t[0] if start is None else start
        end = self.t[-1] if end is None else end
        edges = np.arange(start, end, step)
        cum = np.interp(edges, self.t, self.total)
        return edges[1:], np.diff(cum) * 8 / step

    def data_start(self):
        idx = np.nonzero(self.total > 20000)[0]
        return float(self.t[idx[0]]) if len(idx) else 0.0


def first_time(samples, start, stop, predicate):
    for t in samples.t[(samples.t >= start) & (samples.t <= stop)]:
        if predicate(float(t)):
            return float(t)
    return None


def tool_series(transport, server):
    """Receiver-side goodput every 0.1 s from the tool's own JSON: [(t_end_s, Gbit/s)]."""
    if server is None:
        return []
    if transport in MRC_TRANSPORTS:
        return [(iv["t_s"], iv["gbit_per_s"]) for iv in server.get("intervals", [])]
    out = []
    for iv in server.get("intervals", []):
        s = iv.get("sum", {})
        out.append((s.get("end", 0.0), s.get("bits_per_second", 0.0) / 1e9))
    return out


def goodput(transport, client, server):
    """(Gbit/s, bytes, seconds, extra) from the tools' JSON."""
    extra = {}
    if transport in MRC_TRANSPORTS:
        if client is None or not client.get("sweep"):
            return None, None, None, extra
        sw = client["sweep"][0]
        gbps = sw["gbit_per_s"]
        sent = sum(p["packets_sent"] for p in client["summary"]["planes"])
        retx = sum(q["retransmits"] for q in client["summary"]["qps"])
        extra = {"ok": client.get("ok"), "mismatches": (client.get("server") or {}).get("mismatches"),
                 "bytes_verified_total": client.get("bytes_verified_total"),
                 "messages_sent": client.get("messages_sent"),
                 "messages_received_by_server": (client.get("server") or {}).get("received"),
                 "packets_sent": sent, "retransmits": retx,
                 "packets_per_s": sent / client["seconds"] if client.get("seconds") else None,
                 "send_errors": sum(p["send_errors"] for p in client["summary"]["planes"]),
                 "rtt_us": client["summary"]["qps"][0].get("rtt_us"),
                 "losses": {k: v for k, v in client["summary"]["qps"][0].items() if k.startswith("losses_")
                            or k in ("timeouts", "false_losses", "tail_probes")}}
        return gbps, gbps * 1e9 / 8 * sw["seconds"], sw["seconds"], extra
    if transport == "udp_gso":
        if server is None:
            return None, None, None, extra
        extra = {"sent_gbit_per_s": (client or {}).get("gbit_per_s"), "datagrams": server.get("datagrams"),
                 "sent_datagrams": (client or {}).get("datagrams"),
                 "packets_per_s": server["datagrams"] / server["seconds"] if server.get("seconds") else None}
        return server["gbit_per_s"], server["bytes"], server["seconds"], extra
    if client is None or "end" not in client:
        return None, None, None, {"error": (client or {}).get("error")}
    end = client["end"]
    rx = end["sum_received"]
    extra = {"retransmits": end.get("sum_sent", {}).get("retransmits"),
             "bytes_sent": end.get("sum_sent", {}).get("bytes"), "bytes_received": rx["bytes"],
             "error": client.get("error")}
    return rx["bits_per_second"] / 1e9, rx["bytes"], rx["seconds"], extra


def cpu(meta, client_times, server_times, delivered_bits, nproc):
    b0, t0, _ = stat_fields(meta["stat_bg0"])
    b1, t1, _ = stat_fields(meta["stat_bg1"])
    r0, rt0, s0 = stat_fields(meta["stat_run0"])
    r1, rt1, s1 = stat_fields(meta["stat_run1"])
    bg_cores = (b1 - b0) / (t1 - t0) * nproc if t1 > t0 else 0.0
    wall = (rt1 - rt0) / 100 / nproc
    machine = (r1 - r0) / 100
    # Only meaningful on a quiet machine: with other work running, what the transfer costs
    # cannot be told from what the others cost (and the 2 s before are not the same as during).
    net = max(0.0, machine - bg_cores * wall) if bg_cores < 0.25 else None
    proc = None
    if client_times and server_times:
        proc = sum(client_times.values()) + sum(server_times.values())
    out = {"process_cpu_s": proc, "client": client_times, "server": server_times,
           "machine_busy_cpu_s": round(machine, 3), "machine_softirq_cpu_s": round((s1 - s0) / 100, 3),
           "background_busy_cores": round(bg_cores, 3), "machine_net_cpu_s": None if net is None else round(net, 3),
           "wall_s": round(wall, 3)}
    if net is None:
        out["machine_net_cpu_note"] = "other work kept the machine busy just before the run: not measurable"
    if delivered_bits:
        if proc:
            out["gbit_per_process_cpu_s"] = round(delivered_bits / 1e9 / proc, 3)
        if net:
            out["gbit_per_machine_cpu_s"] = round(delivered_bits / 1e9 / net, 3)
    return out


def failed_attempt(d, meta, ctx):
    """What is known of a run whose client failed: exit status, when the wire went quiet, and
    (mrc, cut) the queue-pair and plane state scraped from its metrics while it hung."""
    f = {"client_exit": int(meta["client_rc"]), "server_exit": int(meta["server_rc"]),
         "load_1min_at_start": float(meta["load_start"])}
    s = Samples(os.path.join(d, "samples.txt"), int(meta["t0_ns"]))
    if len(s.t) > 2:
        busy = [float(t) for t in s.t[::100] if s.rate(t, t + 0.1) > 1e6]
        f["wire_quiet_from_s"] = round(busy[-1] + 0.1, 2) if busy else None
        if meta.get("repair_cmd_end_ns"):
            f["repair_cmd_end_s"] = round((int(meta["repair_cmd_end_ns"]) - int(meta["t0_ns"])) / 1e9, 3)
    for role in ("client", "server"):
        path = os.path.join(d, f"hang-{role}.prom")
        if os.path.exists(path):
            with open(path) as fh:
                wanted = ("mrc_plane_up{", "mrc_qp_retransmits_total", "mrc_qp_timeouts_total", "mrc_qp_cwnd_bytes",
                          "mrc_qp_in_flight_bytes", "mrc_qp_work_requests_completed_total", "mrc_qp_wimm_delivered_total",
                          "mrc_qp_data_packets_sent_total", "mrc_qp_tail_probes_total", "mrc_qp_ev_probes_total")
                keep = [l.strip() for l in fh if (l.startswith("mrc_qp_state{") and l.rstrip().endswith(" 1"))
                        or l.startswith(wanted)]
            f[f"{role}_metrics_while_hung"] = keep[:40]
    return f


def cut_metrics(s, meta, ctx, transport):
    planes = int(ctx["planes"])
    rate = rate_bits(ctx["rate"])
    fp = int(ctx["fail_plane"])
    t0 = int(meta["t0_ns"])
    tf0 = (int(meta["fail_cmd_start_ns"]) - t0) / 1e9
    tf1 = (int(meta["fail_cmd_end_ns"]) - t0) / 1e9
    tr0 = (int(meta["repair_cmd_start_ns"]) - t0) / 1e9
    tr1 = (int(meta["repair_cmd_end_ns"]) - t0) / 1e9
    # The cut: the last sample at which the cut plane still delivered bytes, before the repair.
    cum = s.planes[:, fp]
    window = np.nonzero((s.t >= tf0 - 0.05) & (s.t <= tr0))[0]
    t_cut = tf0
    if len(window):
        grew = [i for i in window if i > 0 and cum[i] > cum[i - 1]]
        if grew:
            t_cut = max(float(s.t[grew[-1]]), tf0)
    m = {"fail_cmd_s": [round(tf0, 4), round(tf1, 4)], "repair_cmd_s": [round(tr0, 4), round(tr1, 4)],
         "cut_at_s": round(t_cut, 4)}
    pre = s.rate(t_cut - 1.0, t_cut)
    m["pre_cut_wire_gbit_per_s"] = round(pre / 1e9, 4)
    m["pre_cut_fraction_of_capacity"] = round(pre / (planes * rate), 4)
    single = transport == "tcp" and int(ctx["tcp_plane"]) == fp
    m["paths_survive"] = not single
    if not single:
        cs = (planes - 1) * rate
        m["surviving_capacity_gbit_per_s"] = cs / 1e9

        def recovered(level):
            return first_time(s, t_cut, tr0, lambda t: s.rate(t, t + 0.010) >= level and s.rate(t, t + 0.100) >= level)

        t_rec = recovered(0.9 * cs)
        m["recovery_to_90pct_surviving_capacity_ms"] = None if t_rec is None else round((t_rec - t_cut) * 1e3, 1)
        own = 0.9 * pre * (planes - 1) / planes
        t_own = recovered(own)
        m["recovery_to_90pct_of_own_pre_cut_rate_scaled_ms"] = None if t_own is None else round((t_own - t_cut) * 1e3, 1)
        mins = [s.rate(t, t + 0.010) for t in np.arange(t_cut, t_cut + 0.5, 0.001)]
        m["min_10ms_wire_fraction_of_surviving_capacity_first_500ms"] = round(min(mins) / cs, 3)
        # Longest interval in the first 500 ms over which the transport delivered less than
        # 10 % of the surviving capacity on average (a stall; single stray packets allowed).
        sel = (s.t >= t_cut) & (s.t <= t_cut + 0.5)
        ts, cum = s.t[sel], s.total[sel]
        longest = 0.0
        for k in range(len(ts) - 1):
            dt = ts[k + 1:] - ts[k]
            ok = (cum[k + 1:] - cum[k]) * 8 < 0.1 * cs * dt
            if ok.any():
                longest = max(longest, float(dt[ok].max()))
        m["longest_below_10pct_first_500ms_ms"] = round(longest * 1e3, 1)
        m["mean_wire_fraction_of_surviving_capacity_first_100ms"] = round(s.rate(t_cut, t_cut + 0.1) / cs, 3)
        m["mean_wire_fraction_of_surviving_capacity_first_1s"] = round(s.rate(t_cut, t_cut + 1.0) / cs, 3)
        during_end = tr0
        m["mean_wire_fraction_of_surviving_capacity_while_cut"] = round(s.rate(t_cut, during_end) / cs, 3)
        # Capacity left unused in the first second, as milliseconds of the whole surviving capacity.
        m["deficit_first_1s_ms"] = round(max(0.0, cs * 1.0 - s.bytes_between(t_cut, t_cut + 1.0) * 8) / cs * 1e3, 1)
    else:
        t_res = first_time(s, t_cut + 0.001, s.t[-1], lambda t: s.bytes_between(t_cut, t) > 20000)
        m["stalled_ms"] = None if t_res is None else round((t_res - t_cut) * 1e3, 1)
        m["resumed_after_repair_cmd_ms"] = None if t_res is None else round((t_res - tr1) * 1e3, 1)
    # After the repair: the cut plane carries data again; everything back to 90 % of before.
    t_reuse = first_time(s, tr0, s.t[-1], lambda t: s.bytes_between(tr0, t, fp) > 20000)
    m["plane_reused_after_repair_cmd_ms"] = None if t_reuse is None else round((t_reuse - tr1) * 1e3, 1)
    t_back = first_time(s, tr0, s.t[-1], lambda t: s.rate(t, t + 0.100) >= 0.9 * pre)
    m["back_to_90pct_pre_cut_after_repair_cmd_ms"] = None if t_back is None else round((t_back - tr1) * 1e3, 1)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot", required=True)
    args = ap.parse_args()

    ctx = read_kv(os.path.join(args.raw, "context.txt"))
    planes = int(ctx["planes"])
    rate = rate_bits(ctx["rate"])
    capacity = planes * rate
    nproc = int(ctx["nproc"])
    runs = {}
    cut_series = {}
    zoom = {}
    failures = []
    for name in sorted(os.listdir(args.raw)):
        d = os.path.join(args.raw, name)
        if not os.path.isfile(os.path.join(d, "meta.txt")):
            continue
        meta = read_kv(os.path.join(d, "meta.txt"))
        scenario, transport = meta["scenario"], meta["transport"]
        if "-failed" in name:
            failures.append((scenario, transport, failed_attempt(d, meta, ctx)))
            continue
        client = read_json(os.path.join(d, "client.json"))
        server = read_json(os.path.join(d, "server.json"))
        gbps, nbytes, secs, extra = goodput(transport, client, server)
        r = {"load_1min_at_start": float(meta["load_start"]), "loadavg_at_start": meta["loadavg"],
             "client_exit": int(meta["client_rc"]), "server_exit": int(meta["server_rc"]),
             "goodput_gbit_per_s": None if gbps is None else round(gbps, 4), "seconds": secs}
        if gbps is not None and scenario != "unshaped":
            r["fraction_of_sum_of_plane_rates"] = round(gbps * 1e9 / capacity, 4)
            if transport == "tcp":
                r["fraction_of_its_one_plane"] = round(gbps * 1e9 / rate, 4)
        r.update(extra)
        r["cpu"] = cpu(meta, read_times(os.path.join(d, "client.times")), read_times(os.path.join(d, "server.times")),
                       None if nbytes is None else nbytes * 8, nproc)
        s = Samples(os.path.join(d, "samples.txt"), int(meta["t0_ns"]))
        if transport == "mptcp" and os.path.exists(os.path.join(d, "ss-client.txt")):
            with open(os.path.join(d, "ss-client.txt")) as f:
                lines = [l.split() for l in f if ":5301" in l]
            r["mptcp_subflow_planes"] = sorted({l[2].split(".")[2] for l in lines if len(l) > 3})
        if scenario == "cut" and len(s.t):
            r["cut"] = cut_metrics(s, meta, ctx, transport)
            off = s.data_start()
            ts = tool_series(transport, server)
            r["cut"]["goodput_series_0p1s"] = [[round(t + off, 3), round(g, 4)] for t, g in ts]
            t10, g10 = s.series(0.010)
            t20, g20 = s.series(0.020)
            r["cut"]["wire_series_20ms"] = [[round(float(a), 2), round(float(b) / 1e9, 3)] for a, b in zip(t20, g20)]
            cut_series[transport] = (ts, off, t10, g10, r["cut"])
            tc = r["cut"]["cut_at_s"]
            tz = np.arange(-0.020, 0.2005, 0.001)
            zoom[transport] = (tz, np.array([s.bytes_between(tc, tc + x) for x in tz]))
        runs.setdefault(scenario, {})[transport] = r
    for scenario, transport, f in failures:
        entry = runs.setdefault(scenario, {}).setdefault(transport, {"goodput_gbit_per_s": None, "load_1min_at_start": f["load_1min_at_start"],
                                                                      "cpu": {}, "note": "every attempt failed"})
        entry.setdefault("failed_attempts", []).append(f)

    summary = {
        "what": "mrc vs single-path TCP vs MPTCP on the namespace testbed (bench/compare.sh); definitions in bench/compare_report.py",
        "command": ctx.get("command"), "date": ctx.get("date"),
        "git": {"commit": ctx.get("git_commit"), "uncommitted_changes_in": ctx.get("git_dirty", "").split()},
        "machine": {"cpu": ctx.get("cpu_model"), "nproc": nproc, "kernel": ctx.get("kernel"),
                    "mem_total_kb": int(ctx.get("mem_total_kb", 0)), "iperf3": ctx.get("iperf3"),
                    "tcp_congestion_control": ctx.get("tcp_congestion_control")},
        "testbed": {"hosts": 2, "planes": planes, "rate_per_plane": ctx["rate"], "sum_of_plane_rates_gbit_per_s": capacity / 1e9,
                    "mtu": int(ctx["mtu"]), "queue_ms": float(ctx["queue_ms"]), "fail_plane": int(ctx["fail_plane"]),
                    "fail_at_s": float(ctx["fail_at_s"]), "fail_for_s": float(ctx["fail_for_s"]),
                    "loss_percent": float(ctx["loss_percent"]), "tcp_plane": int(ctx["tcp_plane"]),
                    "mrc_datagram_bytes": int(ctx["mrc_datagram"]),
                    "unshaped_offloads": ctx.get("unshaped_offloads", "off")},
        "load": {"max_load_wanted": float(ctx["max_load"]), "waited_s": int(ctx["waited_s"]),
                 "max_load_1min_at_a_start": max((r["load_1min_at_start"] for sc in runs.values() for r in sc.values()), default=None)},
        "runs": runs,
        "failed_attempts": sum(len(r.get("failed_attempts", [])) for sc in runs.values() for r in sc.values()),
    }
    summary["targets"] = targets(runs)
    text = json.dumps(summary, indent=1)
    # Keep the time series readable but small: each [t, value] pair on one line.
    text = re.sub(r"\[\s+(-?[\d.]+|null),\s+(-?[\d.]+|null)\s+\]", r"[\1, \2]", text)
    with open(args.out, "w") as f:
        f.write(text + "\n")
    plot(args.plot, runs, cut_series, zoom, ctx, capacity, rate, planes)
    print_table(runs)


def g(runs, sc, t, *keys):
    v = runs.get(sc, {}).get(t)
    for k in keys:
        if v is None:
            return None
        v = v.get(k)
    return v


def targets(runs):
    out = []

    def add(name, value, goal, met):
        out.append({"target": name, "value": value, "goal": goal, "met": met})

    f = g(runs, "clean", "mrc", "fraction_of_sum_of_plane_rates")
    fm = g(runs, "clean", "mptcp", "fraction_of_sum_of_plane_rates")
    if f is not None:
        add("goodput / sum of plane rates", f, 0.97, f >= 0.97)
    if f is not None and fm is not None:
        add("goodput vs MPTCP (mrc / MPTCP)", round(f / fm, 4), 1.0, f >= fm)
    rec = g(runs, "cut", "mrc", "cut", "recovery_to_90pct_surviving_capacity_ms")
    if g(runs, "cut", "mrc", "cut") is not None:
        add("after a plane cut: ms to >= 90 % of the surviving capacity", rec, 5.0, rec is not None and rec <= 5.0)
        mm = g(runs, "cut", "mrc", "mismatches")
        add("bytes lost across the cut (--verify mismatches)", mm, 0, mm == 0 and g(runs, "cut", "mrc", "ok") is True)
    fl = g(runs, "loss", "mrc", "fraction_of_sum_of_plane_rates")
    if fl is not None:
        add("goodput / sum of plane rates at 1 % loss per plane", fl, 0.8, fl >= 0.8)
    uu = g(runs, "unshaped", "udp_gso", "goodput_gbit_per_s")
    ut = g(runs, "unshaped", "tcp", "goodput_gbit_per_s")
    for t in MRC_TRANSPORTS:
        mu = g(runs, "unshaped", t, "goodput_gbit_per_s")
        if mu is not None and uu:
            add(f"one unshaped path: {t} goodput / raw UDP GSO", round(mu / uu, 4), 0.9, mu / uu >= 0.9)
        if mu is not None and ut:
            add(f"one unshaped path: {t} goodput / kernel TCP", round(mu / ut, 4), 1.2, mu / ut >= 1.2)
    fx = g(runs, "clean", "mrc_xdp", "fraction_of_sum_of_plane_rates")
    if fx is not None and fm is not None:
        add("goodput vs MPTCP (mrc_xdp / MPTCP)", round(fx / fm, 4), 1.0, fx >= fm)
    return out


def print_table(runs):
    for sc in ("clean", "cut", "loss", "unshaped"):
        for t, r in runs.get(sc, {}).items():
            c = r.get("cut", {})
            print(f"{sc:9s} {t:8s} load {r['load_1min_at_start']:.2f}  goodput {r.get('goodput_gbit_per_s')} Gbit/s"
                  f"  frac {r.get('fraction_of_sum_of_plane_rates')}  cpu {r['cpu'].get('process_cpu_s', 0):.2f}"
                  f"/{r['cpu'].get('machine_net_cpu_s')} s  failed attempts {len(r.get('failed_attempts', []))}"
                  + (f"  recovery {c.get('recovery_to_90pct_surviving_capacity_ms')} ms reuse {c.get('plane_reused_after_repair_cmd_ms')} ms" if c else ""))


def plot(path, runs, cut_series, zoom, ctx, capacity, rate, planes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(14, 10.5))
    gs = fig.add_gridspec(3, 2, width_ratios=[1.6, 1], hspace=0.42, wspace=0.22)
    order = [t for t in ("mrc", "mptcp", "tcp") if t in cut_series]
    fp = ctx["fail_plane"]
    if not order:
        ax = fig.add_subplot(gs[:, 0])
        ax.axis("off")
        ax.text(0.5, 0.5, "plane-cut scenario not run", ha="center", va="center", transform=ax.transAxes)
    for row, t in enumerate(order):
        ax = fig.add_subplot(gs[row, 0])
        ts, off, t10, g10, m = cut_series[t]
        ax.plot(t10, g10 / 1e9, color=COLORS[t], lw=0.6, alpha=0.45, label="wire, receiver NICs, 10 ms")
        if ts:
            xs = [a + off for a, _ in ts]
            ax.step(xs, [b for _, b in ts], where="post", color=COLORS[t], lw=1.8, label="goodput, receiver, 0.1 s")
        ax.axvspan(m["cut_at_s"], m["repair_cmd_s"][0], color="red", alpha=0.08)
        ax.axhline(capacity / 1e9, color="k", ls=":", lw=0.8)
        ax.axhline((planes - 1) * rate / 1e9, color="k", ls="--", lw=0.6)
        ax.set_ylim(0, capacity / 1e9 * 1.38)
        ax.set_xlim(0, max(t10[-1] if len(t10) else 1, 1))
        ax.set_ylabel("Gbit/s")
        if m.get("paths_survive"):
            rec = m.get("recovery_to_90pct_surviving_capacity_ms")
            note = (f"90% of 3 planes {'not reached' if rec is None else f'{rec:g} ms after the cut'}\n"
                    f"plane {fp} used again {m.get('plane_reused_after_repair_cmd_ms')} ms after the repair")
        else:
            note = (f"its only path: stalled {m.get('stalled_ms')} ms,\n"
                    f"resumed {m.get('resumed_after_repair_cmd_ms')} ms after the repair")
        ax.text(0.99, 0.97, note, transform=ax.transAxes, ha="right", va="top", fontsize=8,
                bbox=dict(facecolor="white", alpha=0.8, lw=0))
        ax.set_title(f"{TRANSPORT_NAMES[t]}: plane {fp} cut (red band) and repaired", fontsize=9.5, loc="left")
        if row == 0:
            ax.legend(loc="upper left", fontsize=7.5, ncol=1)
        if row == len(order) - 1:
            ax.set_xlabel("seconds since the client started (dotted: sum of plane rates; dashed: 3 planes)")

    axz = fig.add_subplot(gs[0, 1])
    cs = (planes - 1) * rate
    x = np.linspace(0, 0.2, 50)
    axz.plot(x * 1e3, cs * x / 8 / 1e6, color="k", ls=":", lw=0.8, label="3 planes at full rate")
    axz.plot(x * 1e3, 0.9 * cs * np.maximum(x - 0.005, 0) / 8 / 1e6, color="k", ls="--", lw=0.6,
             label="90% of that, from 5 ms")
    for t, (tz, bz) in zoom.items():
        axz.plot(tz * 1e3, bz / 1e6, color=COLORS[t], lw=1.4, label=TRANSPORT_NAMES[t])
    axz.axvline(0, color="red", lw=0.8)
    axz.set_xlim(-20, 200)
    axz.set_ylim(bottom=-0.3)
    axz.set_xlabel("ms after the cut (receiver NIC counters, 1 ms samples)")
    axz.set_ylabel("MB delivered since the cut")
    axz.set_title("the first 200 ms after the cut", fontsize=9.5, loc="left")
    axz.legend(fontsize=7, loc="upper left")
    if not zoom:  # no cut run: say so rather than draw the reference lines alone
        axz.clear()
        axz.axis("off")
        axz.text(0.5, 0.5, "plane-cut scenario not run", ha="center", va="center", transform=axz.transAxes)

    axb = fig.add_subplot(gs[1, 1])
    labels = [("clean", "clean"), ("cut", f"plane {fp} cut\n(whole run)"), ("loss", f"{ctx['loss_percent']}% loss")]
    bar_transports = [t for t in ("mrc", "mrc_xdp", "mptcp", "tcp") if t != "mrc_xdp" or any(t in runs.get(sc, {}) for sc, _ in labels)]
    width = 0.8 / len(bar_transports)
    for k, t in enumerate(bar_transports):
        # A scenario or transport that was not run gets no bar, and says so (never a 0).
        vals = [g(runs, sc, t, "fraction_of_sum_of_plane_rates") for sc, _ in labels]
        xs = [i + (k - (len(bar_transports) - 1) / 2) * width for i in range(len(labels))]
        bars = axb.bar(xs, [v or 0 for v in vals], width, color=COLORS[t], label=TRANSPORT_NAMES[t])
        for b, v in zip(bars, vals):
            text = "not run" if v is None else f"{v:.2f}"
            axb.text(b.get_x() + b.get_width() / 2, (v or 0) + 0.01, text, ha="center", fontsize=7,
                     rotation=90 if v is None else 0)
    axb.axhline(0.97, color="k", ls=":", lw=0.8)
    axb.axhline(0.8, color="k", ls="--", lw=0.6)
    axb.set_xticks(range(len(labels)))
    axb.set_xticklabels([l for _, l in labels], fontsize=8)
    axb.set_ylim(0, 1.3)
    axb.set_ylabel("goodput / sum of plane rates")
    axb.set_title(f"goodput / ({planes} x {ctx['rate']}); lines: targets 0.97 and 0.8", fontsize=9.5, loc="left")
    axb.legend(fontsize=7.5, loc="upper left", ncol=3)

    axc = fig.add_subplot(gs[2, 1])
    names = [t for t in ("mrc", "mrc_xdp", "udp_gso", "tcp") if t in runs.get("unshaped", {})]
    vals = [g(runs, "unshaped", t, "goodput_gbit_per_s") or 0 for t in names]
    per_cpu = [g(runs, "unshaped", t, "cpu", "gbit_per_process_cpu_s") or 0 for t in names]
    if not names:
        axc.text(0.5, 0.5, "unshaped scenario not run", ha="center", va="center", transform=axc.transAxes)
    xs = np.arange(len(names))
    b1 = axc.bar(xs - 0.2, vals, 0.4, color=[COLORS[t] for t in names])
    b2 = axc.bar(xs + 0.2, per_cpu, 0.4, color=[COLORS[t] for t in names], alpha=0.45, hatch="//")
    for b, v in list(zip(b1, vals)) + list(zip(b2, per_cpu)):
        axc.text(b.get_x() + b.get_width() / 2, v * 1.03 + 0.05, f"{v:.2f}", ha="center", fontsize=7)
    axc.set_xticks(xs)
    axc.set_xticklabels([TRANSPORT_NAMES[t] for t in names], fontsize=8)
    axc.set_ylabel("Gbit/s  |  Gbit per CPU-second")
    offloads = " (segmentation offloads on)" if ctx.get("unshaped_offloads") == "on" else ""
    axc.set_title(f"one unshaped path{offloads}: goodput (solid), Gbit per process CPU-second (hatched)",
                  fontsize=9.5, loc="left")
    if not names:
        axc.axis("off")
    fig.suptitle(f"mrc vs TCP vs MPTCP on the namespace testbed ({ctx.get('date', '')}, load <= "
                 f"{max((r['load_1min_at_start'] for sc in runs.values() for r in sc.values()), default=0):.2f} at starts)", fontsize=11)
    fig.savefig(path, dpi=90, bbox_inches="tight")


if __name__ == "__main__":
    main()
