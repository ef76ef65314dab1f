#!/usr/bin/env bash
# Tests other people wrote, over the mrc libfabric provider: libfabric's fabtests (runfabtests.sh's
# lists, run as shipped and with out-of-band address exchange, -b) and mpi4py's own test suite
# under Open MPI's OFI MTL at 2 and 3 ranks, beside the same suite over libfabric's own
# "tcp;ofi_rxm" as the baseline for Open MPI's OFI layer. Sources come from the Debian archive
# (apt-get source, through a private deb-src list) or from --fabtests-src / --mpi4py-src.
# Every test runs under a timeout: a hang is reported as such, naming the test. Prints a summary
# per suite (pass / notrun / n/a / fail / hang / crash, the tests that did not pass with the
# reason) and, with --json FILE, writes it as JSON. Verdicts are runfabtests.sh's, except that a
# fabtest whose one side the provider refused (-FI_ENODATA, -FI_ENOSYS) while the other was only
# left waiting for it in accept() is Notrun (runfabtests.sh: Fail), and one that cannot run in a
# form with any provider is n/a (outside_suites_lib.sh, ft_verdict).
# Exit status: 0 if no fabtest failed, hung or crashed and mpi4py over mrc had no failure, hang or
# crash that the tcp;ofi_rxm run lacks; 1 otherwise; 77 if no suite could run (sources or tools
# missing); 2 for bad usage.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

usage() {
  cat << 'EOF'
usage: scripts/outside-suites.sh [OPTIONS]

  --suites LIST         fabtests,mpi4py (default both)
  --fabtests-sets LIST  runfabtests.sh test sets: quick (unit,functional,short) and/or
                        standard (default quick)
  --fabtests-modes LIST shipped (addresses from fi_getinfo node/service) and/or oob (-b:
                        names exchanged out of band) (default shipped,oob)
  --fabtests-src DIR    a libfabric source tree (holding fabtests/) or a fabtests tree
  --mpi4py-src DIR      an mpi4py source tree (holding test/runtests.py)
  --no-debian           do not try `apt-get source` for sources not given
  --ranks LIST          mpi4py's rank counts (default 2,3)
  --no-baseline         skip mpi4py over tcp;ofi_rxm (--mpi4py-over mrc)
  --mpi4py-over LIST    the providers mpi4py's suite runs over: mrc and/or tcp (libfabric's
                        tcp;ofi_rxm, the baseline) (default mrc,tcp)
  --mpi4py-modules LIST only these test modules (e.g. test_util_pkl5,test_comm; default all)
  --lib DIR             where libmrc-fi.so is (default build/release/lib)
  --planes LIST         FI_MRC_PLANES (default 127.0.0.41,127.0.0.42)
  --port-base N         FI_MRC_PORT; EV ports from N+100, test ports from N+800 (default 48000)
  --timeout S           bound on one fabtest (default 120, as runfabtests.sh)
  --test-timeout S      bound on one mpi4py test (default 60)
  --module-timeout S    bound on one mpirun of an mpi4py test module (default 900)
  --work DIR            where sources are unpacked and built (default /tmp/mrc-outside-suites)
  --json FILE           write the summary as JSON
  --help                this text

Getting the sources by hand: `apt-get source libfabric mpi4py` (Debian 12: libfabric 1.17.0,
mpi4py 3.1.4; needs a deb-src line and an archive that serves the tarballs), or the upstream tags
v1.17.0 of ofiwg/libfabric and 3.1.4 of mpi4py/mpi4py, e.g. from local clones:
  git --git-dir=LIBFABRIC.git archive v1.17.0 | tar -x -C /tmp/libfabric-1.17.0
  git --git-dir=MPI4PY.git archive 3.1.4 | tar -x -C /tmp/mpi4py-3.1.4
then --fabtests-src /tmp/libfabric-1.17.0 --mpi4py-src /tmp/mpi4py-3.1.4 --no-debian. Building
fabtests needs autoconf, automake and libtool (installed with apt-get when run as root).

Verdicts: runfabtests.sh's (Notrun when both sides end with -FI_ENODATA or both with
-FI_ENOSYS), except that a fabtest whose client the provider refused while its server only waited
for it in accept() is Notrun (runfabtests.sh: Fail), and one that no provider can run in a form
is n/a; a side over --timeout is a hang, one killed by a signal a crash. The summary gives the
reason of each fabtest that did not pass.
EOF
}

suites=fabtests,mpi4py sets=quick modes=shipped,oob ft_src="" py_src="" debian=1 ranks=2,3
py_over=mrc,tcp py_modules="" lib=$root/build/release/lib planes=127.0.0.41,127.0.0.42 port_base=48000
timeout_s=120 test_timeout=60 module_timeout=900 py=/usr/bin/python3 work=/tmp/mrc-outside-suites json=""
while [ $# -gt 0 ]; do
  case $1 in
    --suites) suites=$2; shift 2 ;;
    --fabtests-sets) sets=$2; shift 2 ;;
    --fabtests-modes) modes=$2; shift 2 ;;
    --fabtests-src) ft_src=$2; shift 2 ;;
    --mpi4py-src) py_src=$2; shift 2 ;;
    --no-debian) debian=0; shift ;;
    --ranks) ranks=$2; shift 2 ;;
    --no-baseline) py_over=mrc; shift ;;
    --mpi4py-over) py_over=$2; shift 2 ;;
    --mpi4py-modules) py_modules=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --planes) planes=$2; shift 2 ;;
    --port-base) port_base=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --test-timeout) test_timeout=$2; shift 2 ;;
    --module-timeout) module_timeout=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --help | -h) usage; exit 0 ;;
    *) echo "outside-suites: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
for p in ${py_over//,/ }; do
  [[ "$p" =~ ^(mrc|tcp)$ ]] || { echo "outside-suites: --mpi4py-over takes mrc and/or tcp, not '$p'" >&2; exit 2; }
done
for n in "$port_base" "$timeout_s" "$test_timeout" "$module_timeout"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "outside-suites: '$n' is not a number" >&2; exit 2; }
done
[ -f "$lib/libmrc-fi.so" ] || { echo "outside-suites: no libmrc-fi.so in $lib (--lib)" >&2; exit 2; }
mkdir -p "$work" || exit 2
work=$(cd "$work" && pwd)
lib=$(cd "$lib" && pwd)
export FI_MRC_PLANES=$planes FI_MRC_PORT=$port_base FI_MRC_EV_PORT_BASE=$((port_base + 100))
server=${planes%%,*}
log=$work/logs
mkdir -p "$log"

# shellcheck source=outside_suites_lib.sh
. "$here/outside_suites_lib.sh"

rm -rf "$work/results"
ran=0
if [[ ",$suites," == *,fabtests,* ]]; then
  if ft_bin=$(fabtests_build); then
    for set in ${sets//,/ }; do
      for mode in ${modes//,/ }; do
        fabtests_run "$ft_bin" "$set" "$mode"
        ran=1
      done
    done
  else
    echo "outside-suites: fabtests not run (above: why)"
  fi
fi
if [[ ",$suites," == *,mpi4py,* ]]; then
  if py_dir=$(mpi4py_sources); then
    for n in ${ranks//,/ }; do
      [[ ",$py_over," != *,mrc,* ]] || mpi4py_run "$py_dir" mrc "$n"
      [[ ",$py_over," != *,tcp,* ]] || mpi4py_run "$py_dir" "tcp;ofi_rxm" "$n"
      ran=1
    done
  else
    echo "outside-suites: mpi4py's suite not run (above: why)"
  fi
fi
[ $ran -eq 1 ] || { echo "outside-suites: no suite ran"; exit 77; }
summary_print
bad=$?
[ -z "$json" ] || summary_json > "$json"
exit $bad
