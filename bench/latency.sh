#!/usr/bin/env bash
# bench/latency.sh: small-message round trips, mrc beside its peers in one run, as the
# distributions a reader compares (p50, p99, p99.9, max; a CDF plot).
#
#   bench/latency.sh                                  # loopback, 8 B to 64 KiB, 2 rounds
#   sudo bench/latency.sh --testbed                   # also over the namespace testbed's planes
#   bench/latency.sh --sizes "8 1024" --rounds 3 --json --plot lat.png
#
# Transports (--transports), each a ping-pong of one message each way at a time, round trips:
#   mrc1     mrc perf --pingpong over one plane (WRITE-with-immediate each way)
#   mrc4     the same over four planes (loopback 127.0.0.1-4; testbed planes 0-3)
#   udp      raw UDP: sockperf ping-pong --full-rtt (sockperf's messages are 14 to 65000 bytes
#            here: sizes outside run at the nearest)
#   tcp      kernel TCP: sockperf ping-pong --tcp --full-rtt
#   fi_mrc   fi_pingpong -e rdm -m tagged over the mrc libfabric provider; fi_tcp: over libfabric's tcp
#            provider (its usec/xfer is half a round trip: reported doubled, a mean only)
#   mpi_mrc  bench/mpi_pt2pt latency under Open MPI's OFI MTL over the provider; mpi_tcp: under
#            its TCP BTL (half a round trip: doubled, a mean only); loopback only
# Rounds alternate the transports at each size (A B C ... A B C ...), so a slow moment of the
# shared machine hits all of them; the table gives each one's median over the rounds and the
# ratios of mrc1 and mrc4 to udp and tcp. --testbed (root) runs the same over an unshaped
# 4-plane testbed (scripts/testbed.sh) between two host namespaces; mpi_* stay on loopback
# (bench/mpi_fabric_compare.sh measures MPI on the testbed).
# Raw output (every run's JSON and samples) goes to --raw DIR (default: a temporary directory,
# kept and named at the end).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
COMMAND_LINE="bench/latency.sh $*"
SIZES="8 64 512 4096 65536" ROUNDS=2 EXCHANGES=5000 SECONDS_PER=2 TESTBED=0 JSON=0 PLOT=""
TRANSPORTS="mrc1 mrc4 udp tcp fi_mrc fi_tcp mpi_mrc mpi_tcp" BUILD=1 INSTALL=1 RAW="" PREFIX=mrclat
MRC_ARGS=""
usage() {
  cat <<EOF
usage: bench/latency.sh [options]
  --sizes "B ..."       message sizes in bytes (default: $SIZES)
  --rounds N            alternations of every transport (default $ROUNDS)
  --exchanges N         timed mrc and fi_pingpong exchanges per size and round (default $EXCHANGES)
  --seconds S           sockperf's seconds per size and round (default $SECONDS_PER)
  --transports "T ..."  which (default: $TRANSPORTS)
  --testbed             also over the namespace testbed (root)
  --mrc-args "..."      more options for both mrc perf ends (e.g. "--busy-poll-us 200")
  --json                one JSON object on stdout (else a table)
  --plot FILE           CDF of the round trips at the smallest size (PNG or SVG)
  --raw DIR             keep raw output there
  --no-build            use build/release as it is
  --no-install          do not apt-get the packages of bench/latency-deps.txt
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) SIZES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --exchanges) EXCHANGES=$2; shift 2 ;;
    --seconds) SECONDS_PER=$2; shift 2 ;;
    --transports) TRANSPORTS=$2; shift 2 ;;
    --testbed) TESTBED=1; shift ;;
    --mrc-args) MRC_ARGS=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --plot) PLOT=$2; shift 2 ;;
    --raw) RAW=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --no-install) INSTALL=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "latency.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
say() { echo "latency.sh: $*" >&2; }
die() { say "$*"; exit 2; }
for n in $SIZES $ROUNDS $EXCHANGES $SECONDS_PER; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || die "sizes, rounds, exchanges and seconds are positive integers (got '$n')"
done
for t in $TRANSPORTS; do
  case $t in mrc1|mrc4|udp|tcp|fi_mrc|fi_tcp|mpi_mrc|mpi_tcp) ;; *) die "unknown transport '$t' (--help)" ;; esac
done
[ "$TESTBED" = 0 ] || [ "$(id -u)" = 0 ] || die "--testbed needs root (network namespaces)"
PY=/usr/bin/python3  # Debian's, for python3-matplotlib
# shellcheck source=bench/latency_lib.sh
. bench/latency_lib.sh
[ "$INSTALL" = 0 ] || install_deps bench/latency-deps.txt
if [ "$BUILD" = 1 ]; then
  say "building mrc and the libfabric provider (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release --target mrc mrc_fabric >/dev/null
fi
MRC=$REPO/build/release/src/mrc LIB=$REPO/build/release/lib
[ -x "$MRC" ] || die "$MRC is missing (drop --no-build)"
needs() { command -v "$1" >/dev/null || die "'$1' not found: $2"; }
case " $TRANSPORTS " in *" udp "*|*" tcp "*) needs sockperf "apt-get install sockperf" ;; esac
case " $TRANSPORTS " in *" fi_"*) needs fi_pingpong "apt-get install libfabric-bin" ;; esac
case " $TRANSPORTS " in *" mpi_"*) needs mpicc "apt-get install libopenmpi-dev openmpi-bin" ;; esac
[ -n "$RAW" ] || RAW=$(mktemp -d /tmp/mrc-latency.XXXXXX)
mkdir -p "$RAW"
RAW=$(cd "$RAW" && pwd)
{
  echo "command $COMMAND_LINE"
  echo "date $(date -u +%FT%TZ)"
  echo "git_commit $(git rev-parse HEAD) dirty $(git status --porcelain --untracked-files=no | wc -l)"
  echo "cpu_model $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "nproc $(nproc) kernel $(uname -r)"
} > "$RAW/context.txt"
case " $TRANSPORTS " in *" mpi_"*) mpicc -O2 -o "$RAW/mpi_pt2pt" bench/mpi_pt2pt.c ;; esac

PIDS=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ "$TESTBED" = 0 ] || scripts/testbed.sh --prefix "$PREFIX" down >/dev/null 2>&1 || true
  [ "$rc" = 0 ] || say "failed (exit $rc); raw output in $RAW"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Where: loopback, or the testbed's host namespaces ("ns0"/"ns1" run commands in them).
in_ns() {  # SIDE CMD...: run CMD on the server (0) or client (1) side of the current path
  local side=$1; shift
  if [ "$WHERE" = testbed ]; then ip netns exec "$PREFIX-h$side" "$@"; else "$@"; fi
}
addr() {  # SIDE PLANE
  if [ "$WHERE" = testbed ]; then echo "198.18.$2.$(($1 + 1))"; else echo "127.0.0.$(($2 + 1))"; fi
}
planes() {  # SIDE COUNT
  local out="" p
  for ((p = 0; p < $2; ++p)); do out+="${out:+,}$(addr "$1" "$p")"; done
  echo "$out"
}
next_port() { PORT=$((PORT + 1)); }
PORT=$((20000 + RANDOM % 5000))
wait_server() { sleep "${1:-0.4}"; }
run_mrc() {  # PLANES SIZE OUT
  next_port
  # shellcheck disable=SC2086
  in_ns 0 timeout 70 "$MRC" perf --server --planes "$(planes 0 "$1")" --oob-port "$PORT" \
    $MRC_ARGS > "$3.server" 2>&1 &
  local server=$!
  wait_server
  # shellcheck disable=SC2086
  in_ns 1 timeout 60 "$MRC" perf --client "$(addr 0 0)" --planes "$(planes 1 "$1")" \
    --oob-port "$PORT" --pingpong --size "$2" --iterations "$EXCHANGES" --json $MRC_ARGS \
    --samples "$3.samples.csv" > "$3.json" 2> "$3.err" || say "mrc ($1 planes, $2 B) failed: $(tail -1 "$3.err")"
  reap "$server"
}

run_sockperf() {  # udp|tcp SIZE OUT
  local tcp=() size=$2
  [ "$1" = tcp ] && tcp=(--tcp)
  [ "$size" -ge 14 ] || size=14
  [ "$size" -le 65000 ] || size=65000  # sockperf's largest message is under 64 KiB
  next_port
  in_ns 0 timeout 120 sockperf sr -i "$(addr 0 0)" -p "$PORT" "${tcp[@]}" > "$3.server" 2>&1 &
  local server=$!
  wait_server
  sockperf_client "sockperf $1 $2 B" "$3.txt" in_ns 1 timeout 110 sockperf pp -i "$(addr 0 0)" \
    -p "$PORT" "${tcp[@]}" -m "$size" -t "$SECONDS_PER" --full-rtt --full-log "$3.log.csv"
  reap "$server"
}

run_fi() {  # mrc|tcp SIZE OUT
  local env=(env) provider=$1
  [ "$1" = mrc ] && env=(env FI_PROVIDER_PATH="$LIB" FI_MRC_PLANES="$(planes 0 1)")
  next_port
  in_ns 0 "${env[@]}" timeout 120 fi_pingpong -p "$provider" -e rdm -m tagged -I "$EXCHANGES" -S "$2" \
    -B "$PORT" > "$3.server" 2>&1 &
  local server=$!
  wait_server 1
  [ "$1" = mrc ] && env=(env FI_PROVIDER_PATH="$LIB" FI_MRC_PLANES="$(planes 1 1)")
  in_ns 1 "${env[@]}" timeout 110 fi_pingpong -p "$provider" -e rdm -m tagged -I "$EXCHANGES" -S "$2" \
    -P "$PORT" "$(addr 0 0)" > "$3.txt" 2>&1 || say "fi_pingpong $1 $2 B failed: $(tail -1 "$3.txt")"
  reap "$server"
}

run_mpi() {  # mrc|tcp SIZE OUT
  local args
  if [ "$1" = mrc ]; then
    args=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mrc
          -x FI_PROVIDER_PATH="$LIB" -x FI_MRC_PLANES=127.0.0.1)
  else
    args=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)
  fi
  # mpi_yield_when_idle: two busy-polling ranks on two cores would starve the kernel's work
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca mpi_yield_when_idle 1 "${args[@]}" \
    "$RAW/mpi_pt2pt" latency "$2" "$EXCHANGES" > "$3.txt" 2>&1 || say "MPI $1 $2 B failed: $(tail -1 "$3.txt")"
}

run_one() {  # TRANSPORT SIZE OUT
  case $1 in
    mrc1) run_mrc 1 "$2" "$3" ;;
    mrc4) run_mrc 4 "$2" "$3" ;;
    udp|tcp) run_sockperf "$1" "$2" "$3" ;;
    fi_mrc) run_fi mrc "$2" "$3" ;;
    fi_tcp) run_fi tcp "$2" "$3" ;;
    mpi_mrc) run_mpi mrc "$2" "$3" ;;
    mpi_tcp) run_mpi tcp "$2" "$3" ;;
  esac
}

PATHS="loopback"
if [ "$TESTBED" = 1 ]; then
  PATHS+=" testbed"
  scripts/testbed.sh --prefix "$PREFIX" down >/dev/null 2>&1 || true
fi
for WHERE in $PATHS; do
  if [ "$WHERE" = testbed ]; then
    say "testbed: 2 hosts, 4 unshaped planes (scripts/testbed.sh --prefix $PREFIX up)"
    scripts/testbed.sh --prefix "$PREFIX" up --hosts 2 --planes 4 >/dev/null
  fi
  for ((round = 1; round <= ROUNDS; ++round)); do
    for size in $SIZES; do
      for t in $TRANSPORTS; do
        [ "$WHERE" = testbed ] && [[ $t == mpi_* ]] && continue
        say "$WHERE round $round/$ROUNDS: $t, $size bytes"
        run_one "$t" "$size" "$RAW/$WHERE.$t.$size.r$round"
      done
    done
  done
done
report=("$PY" bench/latency_report.py "$RAW" --context "$RAW/context.txt")
[ "$JSON" = 1 ] && report+=(--json)
[ -n "$PLOT" ] && report+=(--plot "$PLOT")
"${report[@]}"
say "raw output in $RAW"
