#!/usr/bin/env bash
# The mrc libfabric provider as users meet it: libfabric's tools and MPI programs, unchanged,
# over loopback planes. Usage: fabric_test.sh MODE LIB_DIR [PROGRAM]
#   info      fi_info lists the provider and its settings, and refuses what it lacks; bad
#             settings are named (PROGRAM: fi_checks)
#   pingpong  fi_pingpong, untagged and tagged, every default size, over FI_EP_RDM
#   openmpi   PROGRAM (tests/fabric/mpi_suite.c) under Open MPI's OFI MTL, 2 and 4 ranks
#   mpi4py    a python3-mpi4py smoke test under Open MPI over the provider (with an
#             intercommunicator)
#   mpich     PROGRAM (mpi_suite.c's source) built by an MPICH of device ch4:ofi and run with
#             FI_PROVIDER=mrc, 2 and 4 ranks; the MPICH is $MRC_MPICH_PREFIX, else /opt/mpich-ofi
#             (Debian's MPICH is ch4:ucx and cannot load a libfabric provider; scripts/
#             build-mpich-ofi.sh builds one from Debian's source)
#   planecut  (root) PROGRAM's all-reduce loop, 2 ranks over 4 planes in a network namespace of
#             its own, while one plane is cut (nftables drops every datagram to it) and healed:
#             every all-reduce checked, the job finishes (no deadline beyond the test's timeout)
#   mpich-planecut  the same under MPICH (PROGRAM: mpi_suite.c's source, as for mpich)
# Exits 77 (skipped) when the tool a mode needs is not installed.
set -euo pipefail
mode=$1
export FI_PROVIDER_PATH=$2
program=${3:-}
# Own planes and ports, which no other test uses (several processes each take the next ports).
export FI_MRC_PLANES=127.0.0.151,127.0.0.152,127.0.0.153,127.0.0.154
export FI_MRC_PORT=22000 FI_MRC_EV_PORT_BASE=22100
need() { command -v "$1" > /dev/null || { echo "SKIP: $1 not installed ($2)"; exit 77; }; }
fail() { echo "FAILED: $*"; exit 1; }

# MPICH of device ch4:ofi ($MRC_MPICH_PREFIX, else /opt/mpich-ofi), or exit 77 naming why; sets
# prefix, and work (a temporary directory) holding mpi_suite built from PROGRAM (its source).
mpich_or_skip() {
  prefix=${MRC_MPICH_PREFIX:-/opt/mpich-ofi}
  local device
  device=$("$prefix/bin/mpichversion" 2> /dev/null | grep -o "ch4:[a-z]*" | head -1 || true)
  if [ "$device" != "ch4:ofi" ]; then
    echo "SKIP: no MPICH of device ch4:ofi at $prefix (found: ${device:-none}); Debian's MPICH is"
    echo "      ch4:ucx; scripts/build-mpich-ofi.sh builds one, or set MRC_MPICH_PREFIX"
    exit 77
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"; cleanup_ns' EXIT
  # (-Wno-stringop-overflow: gcc 12 misreads MPI_STATUSES_IGNORE in MPICH's prototypes.)
  "$prefix/bin/mpicc" -O2 -Wno-stringop-overflow -o "$work/mpi_suite" "$program" ||
    fail "mpicc of $program"
}
ns=""
cleanup_ns() { [ -z "$ns" ] || ip netns del "$ns" 2> /dev/null || true; }
# (root) A namespace of its own with the four planes' addresses on a veth, FI_MRC_PLANES set.
plane_cut_setup() {
  need nft "apt install nftables"
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: the plane cut needs root (a network namespace)"; exit 77; }
  ns=mrcfi-$$
  ip netns add $ns || { echo "SKIP: cannot create a network namespace"; exit 77; }
  [ -n "${work:-}" ] || trap cleanup_ns EXIT
  ip -n $ns link set lo up
  # The planes' addresses on a veth of the namespace (Open MPI's launcher wants an interface
  # that is not lo; traffic between local addresses still takes lo).
  ip -n $ns link add mrcfi0 type veth peer name mrcfi1 && ip -n $ns link set mrcfi0 up &&
    ip -n $ns link set mrcfi1 up || { echo "SKIP: no veth in this kernel"; exit 77; }
  for p in 0 1 2 3; do ip -n $ns addr add 10.77.$p.1/24 dev mrcfi0; done
  export FI_MRC_PLANES=10.77.0.1,10.77.1.1,10.77.2.1,10.77.3.1
}
# LAUNCH... runs mpi_suite's all-reduce loop (2 ranks) in the namespace while plane 2 is cut
# (nftables drops every datagram to it) for 4 s and healed: every all-reduce checked, the job
# finishes (no deadline beyond the test's timeout).
cut_during_loop() {
  local log=/tmp/fabric-cut.$$ job before during dropped
  ip netns exec $ns timeout 600 "$@" loop 1500 > $log 2>&1 &
  job=$!
  until grep -q "all-reduces" $log || ! kill -0 $job 2> /dev/null; do sleep 0.2; done
  before=$(grep -c "all-reduces" $log || true)
  ip netns exec $ns nft add table inet mrcfi_cut
  ip netns exec $ns nft add chain inet mrcfi_cut out "{ type filter hook output priority 0; }"
  ip netns exec $ns nft add rule inet mrcfi_cut out ip daddr 10.77.2.1 counter drop
  echo "plane 2 cut after $((before * 50)) all-reduces"
  sleep 4
  dropped=$(ip netns exec $ns nft list table inet mrcfi_cut | grep -o "packets [0-9]*" | head -1)
  during=$(( $(grep -c "all-reduces" $log || true) - before ))
  ip netns exec $ns nft delete table inet mrcfi_cut
  echo "plane 2 healed: $dropped dropped, $((during * 50)) all-reduces completed while it was cut"
  wait $job || { cat $log; fail "the MPI job failed through the plane cut"; }
  tail -3 $log
  grep -q "2 ranks: all checks passed" $log || fail "the all-reduce loop did not finish"
  # How many completed during the cut depends on the machine's load (a rate, measured by
  # bench/mpi_fabric_compare.sh); the test asks that every one is right and the job finishes.
  rm -f $log
}

case $mode in
  info)
    need fi_info "apt install libfabric-bin"
    out=$(fi_info -p mrc)
    echo "$out"
    grep -q "provider: mrc" <<< "$out" || fail "fi_info does not list mrc"
    grep -q "FI_EP_RDM" <<< "$out" || fail "no RDM endpoint"
    fi_info -p mrc -t FI_EP_MSG > /dev/null 2>&1 && fail "fi_info offers MSG endpoints"
    fi_info -p mrc -c FI_ATOMIC > /dev/null 2>&1 && fail "fi_info offers atomics"
    grep -q FI_MRC_PLANES <<< "$(fi_info -p mrc -e)" || fail "fi_info -e does not list FI_MRC_PLANES"
    # A bad setting is named when the domain opens, not a crash (tests/fabric/fi_checks.c).
    # (Output captured first: grep -q ending a pipeline early would fail it under pipefail.)
    out=$(FI_LOG_LEVEL=warn FI_MRC_PLANES=no-such-interface "$program" badplanes 2>&1)
    echo "$out"
    grep -q "FI_MRC_PLANES=no-such-interface: 'no-such-interface' is no address" <<< "$out" ||
      fail "a bad FI_MRC_PLANES is not named"
    # Every host setting (src/host/options.h) is an FI_MRC_ variable, checked the same way.
    grep -q FI_MRC_METRICS_PORT <<< "$(fi_info -p mrc -e)" || fail "fi_info -e does not list FI_MRC_METRICS_PORT"
    out=$(FI_LOG_LEVEL=warn FI_MRC_BUSY_POLL_US=2.5 "$program" badplanes 2>&1)
    grep -q "FI_MRC_BUSY_POLL_US=2.5 is not a whole number" <<< "$out" ||
      { echo "$out"; fail "a bad FI_MRC_BUSY_POLL_US is not named"; }
    out=$(FI_LOG_LEVEL=warn FI_MRC_SLOTS=1 "$program" badplanes 2>&1)
    grep -q "FI_MRC_SLOTS must be" <<< "$out" || fail "a bad FI_MRC_SLOTS is not named"
    echo "info: ok";;
  pingpong)
    need fi_pingpong "apt install libfabric-bin"
    for m in msg tagged; do
      port=$((47600 + RANDOM % 300))
      timeout 120 fi_pingpong -p mrc -e rdm -m $m -B $port > /tmp/fabric-pp.$$ 2>&1 &
      server=$!
      sleep 1
      timeout 120 fi_pingpong -p mrc -e rdm -m $m -P $port 127.0.0.1 | tee /tmp/fabric-ppc.$$
      wait $server || fail "fi_pingpong server ($m): $(cat /tmp/fabric-pp.$$)"
      grep -q "^1m " /tmp/fabric-ppc.$$ || fail "fi_pingpong ($m) did not reach 1 MiB"
    done
    rm -f /tmp/fabric-pp.$$ /tmp/fabric-ppc.$$
    echo "pingpong: ok";;
  openmpi)
    need mpirun "apt install openmpi-bin"
    for n in 2 4; do
      timeout 300 mpirun --allow-run-as-root --oversubscribe -np $n --mca pml cm --mca mtl ofi \
        --mca mtl_ofi_provider_include mrc -x FI_PROVIDER_PATH -x FI_MRC_PLANES -x FI_MRC_PORT \
        -x FI_MRC_EV_PORT_BASE "$program" | tee /tmp/fabric-mpi.$$
      grep -q "$n ranks: all checks passed" /tmp/fabric-mpi.$$ || fail "mpi_suite on $n ranks"
    done
    rm -f /tmp/fabric-mpi.$$
    echo "openmpi: ok";;
  mpi4py)
    need mpirun "apt install openmpi-bin"
    /usr/bin/python3 -c "import mpi4py" 2> /dev/null || { echo "SKIP: apt install python3-mpi4py"; exit 77; }
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
      --mca mtl_ofi_provider_include mrc -x FI_PROVIDER_PATH -x FI_MRC_PLANES -x FI_MRC_PORT \
      -x FI_MRC_EV_PORT_BASE /usr/bin/python3 -c '
from mpi4py import MPI
import sys
c = MPI.COMM_WORLD
r = c.Get_rank()
got = c.sendrecv({"rank": r, "data": list(range(1000))}, dest=1 - r, source=1 - r)
assert got["rank"] == 1 - r and got["data"] == list(range(1000)), got
total = c.allreduce(r + 1, op=MPI.SUM)
assert total == 3, total
# An intercommunicator: Open MPI inserts the peer into the AV again (one fi_addr for both).
inter = c.Split(r, 0).Create_intercomm(0, c, 1 - r, tag=7)
assert inter.sendrecv(r, dest=0, source=0) == 1 - r
assert inter.Merge(high=r == 1).allreduce(1) == 2
if r == 0:
    print("mpi4py: 2 ranks over", MPI.Get_library_version().splitlines()[0], ": ok")
' | tee /tmp/fabric-py.$$
    grep -q "mpi4py: 2 ranks" /tmp/fabric-py.$$ || fail "mpi4py smoke test"
    rm -f /tmp/fabric-py.$$;;
  mpich)
    mpich_or_skip
    for n in 2 4; do
      # MPIR_CVAR_NOLOCAL: ranks on one host talk over the netmod (the provider), not MPICH's
      # shared memory.
      FI_PROVIDER=mrc MPIR_CVAR_NOLOCAL=1 timeout 300 "$prefix/bin/mpiexec" -n $n \
        "$work/mpi_suite" | tee "$work/out"
      grep -q "$n ranks: all checks passed" "$work/out" || fail "mpi_suite under MPICH on $n ranks"
    done
    echo "mpich: ok";;
  planecut)
    need mpirun "apt install openmpi-bin"
    plane_cut_setup
    cut_during_loop mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
      --mca mtl_ofi_provider_include mrc -x FI_PROVIDER_PATH -x FI_MRC_PLANES -x FI_MRC_PORT \
      -x FI_MRC_EV_PORT_BASE "$program"
    echo "planecut: ok";;
  mpich-planecut)
    mpich_or_skip
    plane_cut_setup
    export FI_PROVIDER=mrc MPIR_CVAR_NOLOCAL=1
    cut_during_loop "$prefix/bin/mpiexec" -n 2 "$work/mpi_suite"
    echo "mpich-planecut: ok";;
  *) echo "usage: $0 info|pingpong|openmpi|mpi4py|mpich|planecut|mpich-planecut LIB_DIR [PROGRAM]"; exit 2;;
esac
