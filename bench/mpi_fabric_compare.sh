#!/usr/bin/env bash
# bench/mpi_fabric_compare.sh: MPI over the mrc libfabric provider against Open MPI's TCP BTL
# striping over the same four interfaces, on the namespace testbed, in one run. Root only.
#
#   sudo bench/mpi_fabric_compare.sh                         # 2.5 Gbit/s planes, then unshaped
#   sudo bench/mpi_fabric_compare.sh --rates 1gbit --seconds 3 --no-cut
#
# Per rate (tc syntax, or "unshaped"): scripts/testbed.sh up --hosts 2 --planes 4 [--rate R]; one
# rank per host namespace; mpirun runs in host 0's namespace and starts host 1's daemon through
# bench/netns_rsh.sh (as bench/allreduce_compare.sh does), with --mca mpi_yield_when_idle 1 (two
# busy-polling ranks on 2 cores otherwise starve the kernel's veth softirq work). Transports:
#   mrc  --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mrc,
#        FI_PROVIDER_PATH=<build>/lib, FI_MRC_PLANES=<the four plane prefixes>
#   tcp  --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include <the four plane prefixes>
# Tests (bench/mpi_pt2pt.c, bench/mpi_allreduce.c):
#   latency     8-byte ping-pong, half the round trip
#   bandwidth   1 MiB messages, 16 in flight, --seconds
#   allreduce   MPI_Allreduce float32 sum, 1, 4 and 16 MiB
#   cut         (unless --no-cut) the bandwidth test for 9 s with plane 1 failed (testbed `fail 1`)
#               from 3 s to 6 s: Gbit/s per 100 ms, averaged before, during and after the cut
# Prints a table and writes JSON (--out, default bench/results/mpi-fabric-compare-DATE.json);
# raw output in bench/results/raw/mpi-fabric-STAMP/ (git-ignored). The testbed is always taken down.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
STAMP=$(date +%Y%m%d-%H%M%S)
COMMAND_LINE="bench/mpi_fabric_compare.sh $*"
RATES="2.5gbit unshaped" SECONDS_RUN=5 CUT=1 PREFIX=mrcmf BUILD_DIR=build/release
OUT="bench/results/mpi-fabric-compare-$(date +%F).json"
RAW="bench/results/raw/mpi-fabric-$STAMP"
say() { echo "mpi_fabric_compare.sh: $*" >&2; }
die() { say "$*"; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --rates) RATES=$2; shift 2 ;;
    --seconds) SECONDS_RUN=$2; shift 2 ;;
    --no-cut) CUT=0; shift ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (--help)" ;;
  esac
done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
for c in mpicc mpirun ip tc unshare python3; do command -v "$c" >/dev/null || die "'$c' not found"; done
LIB=$REPO/$BUILD_DIR/lib
[ -f "$LIB/libmrc-fi.so" ] || die "$LIB/libmrc-fi.so is missing: build first (cmake --build --preset release)"
mkdir -p "$RAW/bin"
RAW=$(cd "$RAW" && pwd)
mpicc -O2 -o "$RAW/bin/mpi_pt2pt" bench/mpi_pt2pt.c
mpicc -O2 -o "$RAW/bin/mpi_allreduce" bench/mpi_allreduce.c

# shellcheck source=bench/testbed_session.sh
. bench/testbed_session.sh
machine_context > "$RAW/context.txt"
addr() { echo "198.18.$2.$(($1 + 1))"; }  # host, plane (docs/TESTBED.md)
SUBNETS=198.18.0.0/24,198.18.1.0/24,198.18.2.0/24,198.18.3.0/24
transport_args() {  # TRANSPORT
  case $1 in
    mrc) echo "--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mrc -x FI_PROVIDER_PATH=$LIB -x FI_MRC_PLANES=$SUBNETS" ;;
    tcp) echo "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include $SUBNETS" ;;
  esac
}
run_mpi() {  # OUTFILE TRANSPORT PROGRAM ARGS...
  local out=$1 t=$2
  shift 2
  # shellcheck disable=SC2046
  ip netns exec "$PREFIX-h0" env MRC_NETNS_PREFIX="$PREFIX" timeout -k 5 120 unshare --uts sh -c \
    'hostname "$0"; exec "$@"' "$PREFIX-h0" \
    mpirun --allow-run-as-root -np 2 -H "$(addr 0 0),$(addr 1 0)" --map-by node \
    --mca plm_rsh_agent "$REPO/bench/netns_rsh.sh" --mca oob_tcp_if_include 198.18.0.0/24 \
    --mca mpi_yield_when_idle 1 \
    $(transport_args "$t") "$@" > "$out" 2> "${out%.out}.err" || say "run failed: $out (see ${out%.out}.err)"
}

for rate in $RATES; do
  rate_args=()
  [ "$rate" = unshaped ] || rate_args=(--rate "$rate")
  say "testbed: 2 hosts x 4 planes, $rate"
  "${TB[@]}" --hosts 2 --planes 4 "${rate_args[@]}" up > "$RAW/testbed-$rate.txt"
  for t in mrc tcp; do
    dir=$RAW/$rate-$t
    mkdir -p "$dir"
    say "$rate $t: latency, bandwidth, all-reduce"
    run_mpi "$dir/latency.out" $t "$RAW/bin/mpi_pt2pt" latency 8 2000
    run_mpi "$dir/bandwidth.out" $t "$RAW/bin/mpi_pt2pt" bandwidth 1048576 16 "$SECONDS_RUN"
    run_mpi "$dir/allreduce.out" $t "$RAW/bin/mpi_allreduce" sweep 1048576 16777216 4
    [ "$CUT" = 1 ] || continue
    say "$rate $t: plane 1 cut from 3 s to 6 s"
    run_mpi "$dir/cut.out" $t "$RAW/bin/mpi_pt2pt" timeline 1048576 16 9 &
    job=$!
    sleep 3
    date +%s%N > "$dir/cut-times.txt"
    "${TB[@]}" fail 1 > /dev/null
    sleep 3
    date +%s%N >> "$dir/cut-times.txt"
    "${TB[@]}" repair 1 > /dev/null
    wait $job || true
  done
  "${TB[@]}" down > /dev/null
done

python3 - "$RAW" "$OUT" "$COMMAND_LINE" "$RATES" <<'PY'
import json, os, sys
raw, out, command, rates = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()
def lines(path):
    try:
        return [json.loads(l) for l in open(path) if l.startswith("{")]
    except FileNotFoundError:
        return []
result = {"command": command, "context": open(os.path.join(raw, "context.txt")).read(), "rates": {}}
for rate in rates:
    r = result["rates"][rate] = {}
    for t in ("mrc", "tcp"):
        d = os.path.join(raw, f"{rate}-{t}")
        e = r[t] = {}
        lat = lines(os.path.join(d, "latency.out"))
        bw = lines(os.path.join(d, "bandwidth.out"))
        ar = lines(os.path.join(d, "allreduce.out"))
        e["latency_us"] = lat[0]["us"] if lat else None
        e["bandwidth_gbps"] = bw[0]["gbps"] if bw else None
        e["bandwidth_bad"] = bw[0]["bad"] if bw else None
        e["allreduce"] = {str(x.get("size")): x for x in ar}
        tl = [x for x in lines(os.path.join(d, "cut.out")) if x.get("test") == "timeline"]
        times = os.path.join(d, "cut-times.txt")
        if tl and os.path.exists(times):
            down, up = [int(x) for x in open(times).read().split()]
            def mean(xs): return sum(xs) / len(xs) if xs else None
            e["cut"] = {
                "before_gbps": mean([x["gbps"] for x in tl if x["t_ns"] < down]),
                "during_gbps": mean([x["gbps"] for x in tl if down + 2e8 <= x["t_ns"] < up]),
                "during_min_gbps": min([x["gbps"] for x in tl if down <= x["t_ns"] < up], default=None),
                "after_gbps": mean([x["gbps"] for x in tl if x["t_ns"] >= up + 5e8]),
                "longest_gap_ms": max([(b["t_ns"] - a["t_ns"]) / 1e6 for a, b in zip(tl, tl[1:])], default=None),
            }
json.dump(result, open(out, "w"), indent=1)
def f(v, spec=".2f"):
    return "-" if v is None else format(v, spec)
print(f"{'rate':10} {'transport':9} {'lat us':>7} {'bw Gbit/s':>9} {'AR 16MiB GB/s':>13} {'cut: before':>11} {'during':>7} {'min':>6} {'after':>6} {'gap ms':>7}")
for rate, r in result["rates"].items():
    for t, e in r.items():
        ar = e["allreduce"].get("16777216", {})
        busbw = ar.get("algbw")  # GB/s: bytes reduced per second
        c = e.get("cut", {})
        print(f"{rate:10} {t:9} {f(e['latency_us'], '.1f'):>7} {f(e['bandwidth_gbps']):>9} {f(busbw):>13} "
              f"{f(c.get('before_gbps')):>11} {f(c.get('during_gbps')):>7} {f(c.get('during_min_gbps')):>6} "
              f"{f(c.get('after_gbps')):>6} {f(c.get('longest_gap_ms'), '.0f'):>7}")
    m, t = r.get("mrc", {}), r.get("tcp", {})
    if m.get("bandwidth_gbps") and t.get("bandwidth_gbps"):
        print(f"{rate}: mrc / tcp BTL bandwidth = {m['bandwidth_gbps'] / t['bandwidth_gbps']:.2f}")
PY
say "summary $OUT, raw files $RAW"
