#!/usr/bin/env bash
# Cross-check of the simulator against ns-3 (docs/SIMULATION.md, "Cross-check against ns-3").
# Installs ns-3 3.37 from Debian if missing, builds `mrc` and the engine libraries (main CMake
# build) and the ns-3 program (crosscheck/ns3, not part of the default build), runs every
# scenarios/xcheck-*.toml in both simulators for each seed, and writes
# crosscheck/ns3/results/{comparison.md,comparison.json} (raw JSON per run in results/raw/).
#
#   crosscheck/ns3/run.sh [--seeds N] [--jobs J] [--build-dir DIR] [--only NAME]
#     --seeds N      seeds 1..N per scenario (default 10)
#     --jobs J       build parallelism (default 2)
#     --build-dir D  main build directory (default build/xcheck); the ns-3 program goes to D-ns3
#     --only NAME    one scenario, e.g. ecmp-linkdown
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/../.." && pwd)"
seeds=10
jobs=2
build="$src/build/xcheck"
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

# 1. ns-3 3.37 (Debian bookworm). libgsl-dev is needed: ns-3's CMake package names libgsl.so.
missing=()
for p in ns3 libns3-dev libgsl-dev pkg-config cmake ninja-build g++; do
  dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "== installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

# 2. Build: mrc (our simulator) and the engine libraries, then the ns-3 program against them.
echo "== building mrc, mrc_core, mrc_sim in $build"
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
  -DMRC_BUILD_TORCH=OFF -DMRC_BUILD_TESTS=OFF -DMRC_BUILD_BENCH=OFF "${launcher[@]}" > /dev/null
ninja -C "$build" -j "$jobs" mrc mrc_core mrc_sim
echo "== building the ns-3 program in $build-ns3"
cmake -S "$here" -B "$build-ns3" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2" \
  -DMRC_BUILD_DIR="$build" "${launcher[@]}" > /dev/null
ninja -C "$build-ns3" -j "$jobs"

# 3. Run both simulators on every cross-check scenario and seed.
out="$here/results"
mkdir -p "$out/raw"
if [[ -n "$only" ]]; then rm -f "$out"/raw/xcheck-"$only"-s*.json; else rm -f "$out"/raw/*.json; fi
for f in "$src"/scenarios/xcheck-*.toml; do
  name="$(basename "$f" .toml)"
  [[ -n "$only" && "$name" != "xcheck-$only" ]] && continue
  for seed in $(seq 1 "$seeds"); do
    echo "== $name seed $seed"
    "$build/src/mrc" sim "$f" --seed "$seed" --json --quiet > "$out/raw/$name-s$seed-mrc.json" || true
    "$build-ns3/mrc-ns3" --scenario="$f" --seed="$seed" > "$out/raw/$name-s$seed-ns3.json" || true
    # Experiments on the two modelling differences SIMULATION.md names: switch thresholds lowered
    # by the packet a port's transmit ring holds beyond ns-3's queue disc (r), packets padded to
    # our 66 bytes of framing (f), and both (rf).
    "$build-ns3/mrc-ns3" --scenario="$f" --seed="$seed" --ring-compensation=true \
      > "$out/raw/$name-s$seed-ns3r.json" || true
    "$build-ns3/mrc-ns3" --scenario="$f" --seed="$seed" --match-framing=true \
      > "$out/raw/$name-s$seed-ns3f.json" || true
    "$build-ns3/mrc-ns3" --scenario="$f" --seed="$seed" --ring-compensation=true --match-framing=true \
      > "$out/raw/$name-s$seed-ns3rf.json" || true
  done
done

# 4. The comparison table.
python3 "$here/compare.py" "$src/scenarios" "$out"
