#!/usr/bin/env bash
# bench/allreduce_small.sh: small all-reduces (8 B .. 64 KiB) over loopback planes, where the
# number of message latencies decides the time: mrc's three algorithms (direct exchange,
# recursive doubling, ring) beside Open MPI's (TCP BTL over lo) in one run, rounds alternating,
# to find the size and rank count where each algorithm wins (what `-a auto` should choose).
# No root needed.
#
#   bench/allreduce_small.sh                          # 2 and 4 ranks, 3 rounds, 8 B .. 64 KiB
#   bench/allreduce_small.sh --ranks 4 --rounds 5 --json out.json
#
# float32 sum, out of place. mrc: `mrc allreduce-perf --ranks N -a ALG -n ITERS -w WARMUP`
# (planes 127.0.0.1-4, checked); MPI: bench/mpi_allreduce.c's sweep (20 timed, 3 warm-up per
# size, the slowest rank's average, checked) under mpirun --oversubscribe --mca btl tcp,self
# --mca mpi_yield_when_idle 1. Per ranks and size: the median over rounds of each time (us),
# each mrc algorithm's ratio to Open MPI, and the fastest mrc algorithm. With more ranks than
# cores the ranks share them, for every transport alike: read 4-rank rows on 2 cores as such.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
RANKS="2 4" ROUNDS=3 MAX=64K ITERS=200 WARMUP=20 JSON="" BUILD=1
usage() {
  cat <<USAGE
usage: bench/allreduce_small.sh [--ranks LIST] [--rounds N] [--max SIZE] [--iters N]
                                [--json FILE] [--no-build]
  --ranks LIST   rank counts (default "$RANKS")
  --rounds N     rounds, each running every transport once per rank count (default $ROUNDS)
  --max SIZE     largest size, K suffix allowed, from 8 B by factors of 2 (default $MAX)
  --iters N      mrc's timed iterations per size (default $ITERS; warm-up $WARMUP)
  --json FILE    also write the table as JSON
  --no-build     use build/release as it is
USAGE
}
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) RANKS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "allreduce_small: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "allreduce_small: --rounds must be a positive number" >&2; exit 2; }
max_bytes=$(numfmt --from=iec "$MAX" 2>/dev/null) || { echo "allreduce_small: bad --max $MAX" >&2; exit 2; }
command -v mpicc > /dev/null && command -v mpirun > /dev/null ||
  { echo "allreduce_small: needs Open MPI (apt install libopenmpi-dev openmpi-bin)" >&2; exit 2; }
[ "$BUILD" = 1 ] && cmake --build build/release -j2 --target mrc > /dev/null
MRC=build/release/src/mrc
RAW=$(mktemp -d)
trap 'rm -rf "$RAW"' EXIT
mpicc -O2 -o "$RAW/mpi_allreduce" bench/mpi_allreduce.c

run_mrc() {  # RANKS ALGORITHM OUT
  timeout 300 "$MRC" allreduce-perf --ranks "$1" -a "$2" -b 8 -e "$max_bytes" -f 2 -n "$ITERS" \
    -w "$WARMUP" --port 45600 --ev-port-base 30000 --json > "$3" 2> "$3.err" ||
    echo "allreduce_small: mrc $2 at $1 ranks failed: $(tail -1 "$3.err")" >&2
}
run_mpi() {  # RANKS OUT
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$1" --mca pml ob1 --mca btl tcp,self \
    --mca btl_tcp_if_include lo --mca mpi_yield_when_idle 1 "$RAW/mpi_allreduce" sweep 8 "$max_bytes" 2 \
    > "$2" 2> "$2.err" || echo "allreduce_small: Open MPI at $1 ranks failed: $(tail -1 "$2.err")" >&2
}

for round in $(seq "$ROUNDS"); do
  for n in $RANKS; do
    echo "round $round, $n ranks" >&2
    for t in mpi direct recursive ring; do
      out="$RAW/r$round-n$n-$t.json"
      if [ "$t" = mpi ]; then run_mpi "$n" "$out"; else run_mrc "$n" "$t" "$out"; fi
    done
  done
done
/usr/bin/python3 bench/allreduce_small_report.py "$RAW" "${JSON:-}" \
  "bench/allreduce_small.sh --ranks '$RANKS' --rounds $ROUNDS --max $MAX --iters $ITERS"
