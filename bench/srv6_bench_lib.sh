# shellcheck shell=bash
# Shared by the SRv6 testbed benchmarks (srv6_compare.sh, srv6_spine_cut.sh), sourced: brings up
# an SRv6 testbed of PLANES planes and SPINES spines under PREFIX (taken down on exit), and sets
# TB (the testbed command), OUT (a scratch directory), server and client (the hosts' locators)
# and paths (the spines' uSIDs, for mrc perf --srv6-paths).
srv6_bench_up() {  # PREFIX PLANES SPINES
  TB="$REPO/scripts/testbed.sh --prefix $1"
  OUT=$(mktemp -d)
  trap '$TB down >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
  $TB down >/dev/null 2>&1 || true
  $TB --routing srv6 --planes "$2" --spines "$3" up >/dev/null
  server=$($TB addrs 0)
  client=$($TB addrs 1)
  paths=$($TB --json status | sed -n 's/.*"srv6_paths": "\([^"]*\)".*/\1/p')
}
