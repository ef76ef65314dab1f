#!/usr/bin/env bash
# bench/datapath_loopback.sh: the UDP datapath where the CPU is the limit: one unshaped loopback
# plane, mrc perf against raw UDP with GSO (bench/udp_gso_blast, datagrams of mrc's size) and
# kernel TCP (iperf3 over lo, whose 64 KiB MTU is TCP at its strongest) in one run, as ratios, in
# goodput and in Gbit per CPU-second of both processes. No root needed.
#
#   bench/datapath_loopback.sh                       # 3 rounds of every variant, 4 s each
#   bench/datapath_loopback.sh --rounds 5 --json
#   bench/datapath_loopback.sh --variants "udp_gso mrc_default mrc_auth mrc_encrypt"
#
# Variants: kernel TCP (tcp: one iperf3 stream, the receiver's goodput), the raw UDP ceiling
# (GSO sends, recvmmsg without GRO: one datagram per receive buffer, as the baseline of
# bench/compare.sh), the same with UDP_GRO at the receiver, and mrc
# perf (1 MiB messages, 16 in flight) with EV bursts of 1, of 4 with a SACK per 4 packets, and
# the datapath's defaults (8192-byte payloads on loopback), and with GSO/GRO off; then both at
# 4096-byte payloads (udp_gso_4k: 4136-byte datagrams, mrc_4k: --mtu 4096); on request (--variants) also the defaults with
# the messages cycling through one 1 MiB buffer (mrc_shared: a working set that stays in the
# cache, as the raw UDP sender's and iperf3's reused buffers do), and mrc's secure mode,
# authenticated (mrc_auth) and encrypted (mrc_encrypt), with the datapath's defaults and a
# fresh pre-shared key. Rounds alternate the variants (A B C ... A B C ...), so a slow moment of the
# shared machine hits all of them; the table gives each variant's median over the rounds.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
ROUNDS=3 DURATION=4 BUILD=1 JSON=0
VARIANTS="tcp udp_gso udp_gso_gro mrc_k1 mrc_k4_ack4 mrc_default mrc_no_gso udp_gso_4k mrc_4k"
usage() {
  cat <<EOF
usage: bench/datapath_loopback.sh [--rounds N] [--duration S] [--json] [--no-build]
  --rounds N     alternations of all variants (default $ROUNDS)
  --duration S   seconds per transfer (default $DURATION)
  --json         one JSON object on stdout (else a table)
  --no-build     use build/release as it is
  --variants "V ..."  which variants, in this order (default: $VARIANTS;
                 also mrc_shared, mrc_auth, mrc_encrypt); ratios are to udp_gso, tcp,
                 mrc_default and udp_gso_4k where run
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --no-build) BUILD=0; shift ;;
    --variants) VARIANTS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "datapath_loopback.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
say() { echo "datapath_loopback.sh: $*" >&2; }
if [ "$BUILD" = 1 ]; then
  say "building mrc and udp_gso_blast (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release --target mrc udp_gso_blast >/dev/null
fi
MRC=$REPO/build/release/src/mrc
BLAST=$REPO/build/release/bench/udp_gso_blast
for b in "$MRC" "$BLAST"; do [ -x "$b" ] || { say "$b is missing (drop --no-build)"; exit 1; }; done
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
# mrc's data datagram: headers 36 + payload + ICRC 4; loopback's MTU carries 8192-byte payloads
DATAGRAM=8232 DATAGRAM_4K=4136

# Both sides' CPU seconds (user + system) from bash `times` of a subshell.
cpu_of() { awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }

run_blast() {  # NAME GRO FILE [DATAGRAM]
  local gro=() port=$((9100 + RANDOM % 500))
  [ "$2" = 1 ] && gro=(--gro)
  (timeout 60 "$BLAST" recv --bind "127.0.0.1:$port" --idle-ms 500 --max-seconds 60 "${gro[@]}" >"$3.server"; times >"$3.server.times") &
  local server=$!
  sleep 0.3
  (timeout 60 "$BLAST" send --bind 127.0.0.1 --to "127.0.0.1:$port" --segment "${4:-$DATAGRAM}" --duration "$DURATION" >"$3.client"; times >"$3.client.times")
  wait "$server"
}

run_tcp() {  # FILE
  local port=$((9700 + RANDOM % 200))
  (timeout 60 iperf3 --server --one-off --bind 127.0.0.1 --port "$port" >/dev/null 2>&1; times >"$1.server.times") &
  local server=$!
  sleep 0.3
  (timeout 60 iperf3 --client 127.0.0.1 --port "$port" --time "$DURATION" --json >"$1.client"; times >"$1.client.times")
  wait "$server" || true
}

run_mrc() {  # NAME FILE ARGS...
  local file=$2 oob=$((18600 + RANDOM % 300))
  shift 2
  (timeout 60 "$MRC" perf --server --oob-port "$oob" --planes 127.0.0.1 --json "$@" >"$file.server" 2>/dev/null; times >"$file.server.times") &
  local server=$!
  sleep 0.4
  (timeout 60 "$MRC" perf --client 127.0.0.1 --oob-port "$oob" --planes 127.0.0.1 --duration "$DURATION" --json "$@" >"$file.client" 2>/dev/null; times >"$file.client.times")
  wait "$server" || true
}

for v in $VARIANTS; do
  case "$v" in
    tcp | udp_gso | udp_gso_gro | mrc_k1 | mrc_k4_ack4 | mrc_default | mrc_no_gso | udp_gso_4k | mrc_4k | mrc_shared | mrc_auth | mrc_encrypt) ;;
    *) say "unknown variant $v"; usage >&2; exit 2 ;;
  esac
  [ "$v" != tcp ] || command -v iperf3 >/dev/null || { say "the tcp variant needs iperf3 (scripts/install-deps.sh)"; exit 1; }
done
KEY=$OUT/key
openssl rand -hex 32 >"$KEY"
chmod 600 "$KEY"
for ((r = 1; r <= ROUNDS; r++)); do
  for v in $VARIANTS; do
    say "round $r/$ROUNDS: $v"
    f=$OUT/$v-$r
    case "$v" in
      tcp) run_tcp "$f" ;;
      udp_gso) run_blast "$v" 0 "$f" ;;
      udp_gso_gro) run_blast "$v" 1 "$f" ;;
      mrc_k1) run_mrc "$v" "$f" --ev-burst 1 ;;
      mrc_default) run_mrc "$v" "$f" ;;
      mrc_k4_ack4) run_mrc "$v" "$f" --ev-burst 4 --ack-every 4 ;;
      mrc_no_gso) run_mrc "$v" "$f" --ev-burst 1 --no-gso ;;
      udp_gso_4k) run_blast "$v" 0 "$f" "$DATAGRAM_4K" ;;
      mrc_4k) run_mrc "$v" "$f" --mtu 4096 ;;
      mrc_shared) run_mrc "$v" "$f" --buffer 1M ;;
      mrc_auth) run_mrc "$v" "$f" --secure auth --key-file "$KEY" ;;
      mrc_encrypt) run_mrc "$v" "$f" --secure encrypt --key-file "$KEY" ;;
    esac
    echo "$(cpu_of "$f.client.times") $(cpu_of "$f.server.times")" >"$f.cpu"
  done
done

/usr/bin/python3 - "$OUT" "$ROUNDS" "$JSON" "$VARIANTS" "$DURATION" <<'EOF'
import json, statistics, sys
out, rounds, as_json, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4].split()
duration = float(sys.argv[5])
def one(v, r):
    f = f"{out}/{v}-{r}"
    if v == "tcp":
        gbit = json.load(open(f + ".client"))["end"]["sum_received"]["bits_per_second"] / 1e9
    elif v.startswith("udp"):
        d = json.loads(open(f + ".server").read().strip().splitlines()[-1])  # receiver-side rate
        gbit = d["gbit_per_s"]
    else:
        gbit = json.load(open(f + ".client"))["gbit_per_s"]
    cpu = sum(float(x) for x in open(f + ".cpu").read().split())
    return gbit, gbit * duration / max(cpu, 1e-9)  # Gbit moved per CPU-second of both processes
rows = {}
for v in variants:
    got = [one(v, r) for r in range(1, rounds + 1)]
    rows[v] = {"gbit_per_s": statistics.median(g for g, _ in got),
               "gbit_per_cpu_s": statistics.median(c for _, c in got),
               "rounds_gbit_per_s": [round(g, 2) for g, _ in got]}
bases = [b for b in ("udp_gso", "tcp", "mrc_default", "udp_gso_4k") if b in rows]
for v in variants:
    for b in bases:
        rows[v][f"ratio_to_{b}"] = rows[v]["gbit_per_s"] / rows[b]["gbit_per_s"]
        rows[v][f"cpu_ratio_to_{b}"] = rows[v]["gbit_per_cpu_s"] / rows[b]["gbit_per_cpu_s"]
if as_json:
    print(json.dumps(rows, indent=1))
else:
    head = "".join(f"{'x ' + b:>15}" for b in bases)
    print(f"{'variant':<14}{'Gbit/s':>9}{head}{'Gbit/CPU-s':>12}{head}   rounds (Gbit/s)")
    for v in variants:
        r = rows[v]
        ratios = "".join(f"{r['ratio_to_' + b]:>15.2f}" for b in bases)
        cpu = "".join(f"{r['cpu_ratio_to_' + b]:>15.2f}" for b in bases)
        print(f"{v:<14}{r['gbit_per_s']:>9.2f}{ratios}{r['gbit_per_cpu_s']:>12.2f}{cpu}   {r['rounds_gbit_per_s']}")
EOF
