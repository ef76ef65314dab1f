#!/bin/sh
# bench/netns_rsh.sh: Open MPI's rsh launch agent for the namespace testbed (--mca plm_rsh_agent).
# mpirun calls it as "AGENT [ssh-style options] HOST COMMAND..." to start its daemon (orted) on
# HOST; HOST is a testbed address 198.18.P.(H+1), so the daemon is started inside namespace
# $MRC_NETNS_PREFIX-hH, in its own UTS namespace with hostname $MRC_NETNS_PREFIX-hH (all namespaces
# share the machine's hostname otherwise, and Open MPI would take them for one node).
set -eu
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
h=$(( ${host##*.} - 1 ))
ns="${MRC_NETNS_PREFIX:?}-h$h"
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
