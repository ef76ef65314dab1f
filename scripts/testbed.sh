#!/usr/bin/env bash
# The mrc namespace testbed: hosts in Linux network namespaces joined by one veth link per plane
# (or through a router namespace per plane and host side, with ECMP over parallel links), with
# per-plane rates (tbf), loss (nftables numgen at the receiver), delay (NFQUEUE + nfq-delay),
# hard failures (link down) and silent blackholes (an nftables set). Root only.
# Reference: docs/TESTBED.md. Run `scripts/testbed.sh help` for the summary.
# shellcheck disable=SC2015  # "A && B || die" is meant: die when A or B fails
set -euo pipefail

PROG=${MRC_TESTBED_PROG:-testbed.sh}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE_ROOT=${MRC_TESTBED_STATE:-/run/mrc-testbed}
# shellcheck source=scripts/testbed_srv6.sh
. "$REPO/scripts/testbed_srv6.sh"

usage() {
  cat <<EOF
usage: $PROG [options] SUBCOMMAND [args]

Subcommands:
  up                        create the testbed (--hosts, --planes, --rate, --router, --paths,
                            --routing, --spines, --mtu)
  down                      remove it (idempotent; ends processes left inside its namespaces)
  status                    print the layout, addresses, link states, rates and faults
  addrs HOST                print HOST's plane addresses, comma-separated (for mrc perf --planes)
  fail PLANE                take the plane's links down (the NICs see it); repair brings them up
                            (--routing srv6 with --spine S [--leaf L]: spine S's links, or only
                            its link down to leaf L, a silent black hole for the senders)
  repair PLANE
  blackhole PLANE           drop the plane's packets silently (links stay up); unblackhole ends it
  unblackhole PLANE
  rate PLANE RATE           shape the plane's links to RATE (tc syntax: 500mbit, 1gbit; 0 = unlimited)
  offload PLANE on|off      the plane's segmentation offloads (TSO, GSO, UDP GSO; off at up, so
                            loss rules see single packets): on lets 64 KB super-packets cross
                            the veths whole, as NICs with segmentation offload carry them
  loss PLANE PERCENT        drop PERCENT of the packets at each receiver (0 = none)
  delay PLANE MS            hold every packet MS milliseconds in each direction (0 = none)
  exec HOST CMD...          run CMD inside HOST's namespace (HOST: 0, h1, or p2-sw0 for a router)

Options:
  --hosts N       hosts (default 2; without --router exactly 2)
  --planes P      planes, one NIC per host each (default 4, at most 16)
  --rate RATE     per-plane rate at up (default unlimited)
  --router        a router namespace per plane and host between the hosts (default: direct veth pairs)
  --paths K       parallel links between the routers of a plane, ECMP-hashed on UDP ports (default 1)
  --routing MODE  ecmp (default: the layouts above, IPv4) or srv6: an IPv6 leaf-spine per plane
                  whose spines run SRv6 uSID (End next-csid, uN) SIDs and whose leaves have
                  a uA SID per uplink; hosts get locators fd00:P:1HH:3HH:: (docs/TESTBED.md
                  "SRv6 fabric"); status shows SIDs, both path lists and per-spine and
                  per-uplink counters; rate/loss/delay/blackhole are not available there
  --spines S      spines per plane with --routing srv6 (default 2)
  --mtu BYTES     MTU of every link (default 9000: mrc's 4 KiB packets travel unfragmented)
  --queue-ms MS   queue of a rate-limited link, in ms at its rate (default 5)
  --prefix NAME   name prefix of the namespaces (default mrctb; letters, digits, _)
  --host H        fault subcommands: only host H's link of the plane
  --path K        fault subcommands (--router): only parallel link K between the plane's routers
  --spine S       fail/repair (--routing srv6): spine S of the plane
  --leaf L        with --spine: only the spine's link to leaf L (host L's leaf)
  --json          machine-readable output
Addresses: host h, plane p is 198.18.p.(h+1)/24. Root only. See docs/TESTBED.md.
EOF
}

die() {
  echo "$PROG: $*" >&2
  exit 1
}

# ---------------------------------------------------------------------------------------------
# Options

HOSTS=2 PLANES=4 RATE="" ROUTER=0 PATHS=1 MTU=9000 QUEUE_MS=5 PREFIX=mrctb JSON=0
ROUTING=ecmp SPINES=2 UN_MODE=""
SEL_HOST="" SEL_PATH="" SEL_SPINE="" SEL_LEAF=""

CMD="" ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) HOSTS=${2:?--hosts needs a number}; shift 2 ;;
    --planes) PLANES=${2:?--planes needs a number}; shift 2 ;;
    --rate) RATE=${2:?--rate needs a rate}; shift 2 ;;
    --router) ROUTER=1; shift ;;
    --paths) PATHS=${2:?--paths needs a number}; shift 2 ;;
    --routing) ROUTING=${2:?--routing needs ecmp or srv6}; shift 2 ;;
    --spines) SPINES=${2:?--spines needs a number}; shift 2 ;;
    --spine) SEL_SPINE=${2:?--spine needs a spine number}; shift 2 ;;
    --leaf) SEL_LEAF=${2:?--leaf needs a leaf number}; shift 2 ;;
    --mtu) MTU=${2:?--mtu needs a number}; shift 2 ;;
    --queue-ms) QUEUE_MS=${2:?--queue-ms needs a number}; shift 2 ;;
    --prefix) PREFIX=${2:?--prefix needs a name}; shift 2 ;;
    --host) SEL_HOST=${2:?--host needs a host number}; shift 2 ;;
    --path) SEL_PATH=${2:?--path needs a path number}; shift 2 ;;
    --json) JSON=1; shift ;;
    -h|--help|help) usage; exit 0 ;;
    --*) die "unknown option $1 (see '$PROG help')" ;;
    *)
      if [ -z "$CMD" ]; then
        CMD=$1
        shift
        if [ "$CMD" = exec ]; then  # everything after HOST is the command, options included
          [ $# -ge 2 ] || die "usage: $PROG [--prefix NAME] exec HOST CMD..."
          ARGS=("$@")
          break
        fi
      else
        ARGS+=("$1")
        shift
      fi
      ;;
  esac
done
[ -n "$CMD" ] || { usage >&2; exit 2; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
[[ $PREFIX =~ ^[A-Za-z0-9_]{1,32}$ ]] || die "--prefix '$PREFIX': use 1 to 32 letters, digits or _"
is_uint "$HOSTS" && [ "$HOSTS" -ge 2 ] && [ "$HOSTS" -le 16 ] || die "--hosts must be 2..16"
is_uint "$PLANES" && [ "$PLANES" -ge 1 ] && [ "$PLANES" -le 16 ] || die "--planes must be 1..16"
is_uint "$PATHS" && [ "$PATHS" -ge 1 ] && [ "$PATHS" -le 16 ] || die "--paths must be 1..16"
is_uint "$SPINES" && [ "$SPINES" -ge 1 ] && [ "$SPINES" -le 16 ] || die "--spines must be 1..16"
case "$ROUTING" in ecmp | srv6) ;; *) die "--routing '$ROUTING': use ecmp or srv6" ;; esac
is_uint "$MTU" && [ "$MTU" -ge 1280 ] && [ "$MTU" -le 65535 ] || die "--mtu must be 1280..65535"
[[ $QUEUE_MS =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--queue-ms must be a number of milliseconds"

# ---------------------------------------------------------------------------------------------
# Preconditions

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "mrc testbed needs root: it creates network namespaces, veth links, qdiscs and nftables rules (run it with sudo)" >&2
    exit 1
  fi
}

# need_cmd COMMAND DEBIAN_PACKAGE
need_cmd() {
  command -v "$1" >/dev/null 2>&1 ||
    die "'$1' not found: install Debian's package $2 (apt-get install $2, or scripts/install-deps.sh)"
}

# ---------------------------------------------------------------------------------------------
# Names and addresses (docs/TESTBED.md "Layout")

STATE=$STATE_ROOT/$PREFIX
host_ns() { echo "$PREFIX-h$1"; }           # host h
sw_ns() { echo "$PREFIX-p$1-sw$2"; }        # router of plane p on host h's side (--router)
nic() { echo "h$1p$2"; }                    # host h's NIC of plane p (in host_ns h)
host_addr() { echo "198.18.$2.$(($1 + 1))"; }  # host h, plane p
sw_host_addr() { echo "198.18.$2.$(($1 + 129))"; }  # router (p,h) on its host link
sw_id_addr() { echo "198.19.$2.$(($1 + 1))"; }      # router (p,h) on its links to other routers
sw_link() { echo "sw$1k$2"; }               # in router (p,h): parallel link k to router (p,g)

# Writes the configuration of a testbed that is up; load_config reads it back.
save_config() {
  cat >"$STATE/config" <<EOF
HOSTS=$HOSTS
PLANES=$PLANES
ROUTER=$ROUTER
PATHS=$PATHS
ROUTING=$ROUTING
SPINES=$SPINES
UN_MODE=$UN_MODE
MTU=$MTU
QUEUE_MS=$QUEUE_MS
RATE=$RATE
EOF
}

load_config() {
  [ -f "$STATE/config" ] || die "testbed '$PREFIX' is not up (run '$PROG${PREFIX_ARG} up' first)"
  local key value
  while IFS='=' read -r key value; do
    case "$key" in
      HOSTS) HOSTS=$value ;; PLANES) PLANES=$value ;; ROUTER) ROUTER=$value ;; PATHS) PATHS=$value ;;
      ROUTING) ROUTING=$value ;; SPINES) SPINES=$value ;; UN_MODE) UN_MODE=$value ;;
      MTU) MTU=$value ;; QUEUE_MS) QUEUE_MS=$value ;; RATE) RATE=$value ;;
    esac
  done <"$STATE/config"
}
PREFIX_ARG=""
[ "$PREFIX" = mrctb ] || PREFIX_ARG=" --prefix $PREFIX"

# Every namespace of the configured testbed, hosts first.
all_namespaces() {
  local h p
  for ((h = 0; h < HOSTS; h++)); do host_ns "$h"; done
  [ "$ROUTING" != srv6 ] || srv6_namespaces
  if [ "$ROUTER" = 1 ]; then
    for ((p = 0; p < PLANES; p++)); do
      for ((h = 0; h < HOSTS; h++)); do sw_ns "$p" "$h"; done
    done
  fi
}

# Namespaces that exist now and are named exactly as this prefix's testbed names them.
existing_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-(h[0-9]+|p[0-9]+-(sw|l|s)[0-9]+)\$" || true
}

# ---------------------------------------------------------------------------------------------
# Link ends. An end is "NAMESPACE|INTERFACE".

# Both ends of every link of plane p (or of host h's link, or of parallel link k).
plane_ends() {
  local p=$1 host=${2:-} path=${3:-} h g k
  if [ -n "$path" ]; then
    for ((h = 0; h < HOSTS; h++)); do
      for ((g = 0; g < HOSTS; g++)); do
        [ "$g" = "$h" ] || echo "$(sw_ns "$p" "$h")|$(sw_link "$g" "$path")"
      done
    done
    return
  fi
  for ((h = 0; h < HOSTS; h++)); do
    [ -z "$host" ] || [ "$host" = "$h" ] || [ "$ROUTER" = 0 ] || continue
    echo "$(host_ns "$h")|$(nic "$h" "$p")"
    if [ "$ROUTER" = 1 ]; then echo "$(sw_ns "$p" "$h")|host"; fi
  done
  if [ "$ROUTER" = 1 ] && [ -z "$host" ]; then
    for ((h = 0; h < HOSTS; h++)); do
      for ((g = 0; g < HOSTS; g++)); do
        [ "$g" = "$h" ] && continue
        for ((k = 0; k < PATHS; k++)); do echo "$(sw_ns "$p" "$h")|$(sw_link "$g" "$k")"; done
      done
    done
  fi
}

# Receive sides where loss, delay and blackholes act, so that each packet of the selection
# passes exactly one of them: the hosts' NICs for a whole plane; both ends of host h's link
# with --host; both ends of parallel link k with --path.
ingress_ends() {
  local p=$1 host=${2:-} path=${3:-} h
  if [ -n "$path" ] || [ -n "$host" ]; then
    plane_ends "$p" "$host" "$path"
    return
  fi
  for ((h = 0; h < HOSTS; h++)); do echo "$(host_ns "$h")|$(nic "$h" "$p")"; done
}

# Ends taken administratively down by `fail`: the hosts' NICs (or host h's NIC), or both ends
# of parallel link k (both routers then drop that next hop from their ECMP routes).
fail_ends() {
  local p=$1 host=${2:-} path=${3:-} h
  if [ -n "$path" ]; then
    plane_ends "$p" "" "$path"
    return
  fi
  for ((h = 0; h < HOSTS; h++)); do
    [ -z "$host" ] || [ "$host" = "$h" ] || continue
    echo "$(host_ns "$h")|$(nic "$h" "$p")"
  done
}

# NFQUEUE number of an interface, unique within its namespace.
queue_of() {
  local ifname=$1
  case "$ifname" in
    host) echo 100 ;;
    sw*) local g=${ifname#sw}; g=${g%k*}; local k=${ifname##*k}; echo $((200 + g * 16 + k)) ;;
    *) echo "${ifname##*p}" ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# Fault records: "KIND PLANE SCOPE VALUE" lines in $STATE/faults; SCOPE is all, hH or kK.

scope_of() {
  if [ -n "$SEL_PATH" ]; then echo "k$SEL_PATH"; elif [ -n "$SEL_HOST" ]; then echo "h$SEL_HOST"; else echo all; fi
}

record_fault() {  # KIND PLANE SCOPE VALUE ("" removes the record)
  local file=$STATE/faults
  touch "$file"
  grep -v -E "^$1 $2 $3( |\$)" "$file" >"$file.new" || true
  [ -z "$4" ] || echo "$1 $2 $3 $4" >>"$file.new"
  mv "$file.new" "$file"
}

# ---------------------------------------------------------------------------------------------
# Rates

rate_bits() {  # tc rate -> bits per second (prints nothing if not a rate)
  echo "$1" | awk '
    match($0, /^[0-9]+(\.[0-9]+)?/) {
      v = substr($0, 1, RLENGTH); u = tolower(substr($0, RLENGTH + 1))
      m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9; m["tbit"] = 1e12
      m["bps"] = 8; m["kbps"] = 8e3; m["mbps"] = 8e6; m["gbps"] = 8e9
      if (u in m && v * m[u] >= 8000) printf "%.0f\n", v * m[u]
    }'
}

is_unlimited() { case "$1" in "" | 0 | off | none | unlimited) return 0 ;; esac; return 1; }

check_rate() {
  is_unlimited "$1" && return 0
  [ -n "$(rate_bits "$1")" ] || die "rate '$1': use tc syntax such as 100mbit, 1gbit or 2.5gbit (or 0 for unlimited)"
}

apply_rate() {  # END RATE
  local ns=${1%%|*} ifname=${1##*|} rate=$2
  if is_unlimited "$rate"; then
    tc -n "$ns" qdisc del dev "$ifname" root 2>/dev/null || true
    return
  fi
  local bits burst
  bits=$(rate_bits "$rate")
  # Bucket: 2 ms at the rate, at least 32 KiB (must hold a whole MTU). Queue: --queue-ms.
  burst=$(awk -v b="$bits" -v m="$MTU" 'BEGIN { x = b / 8 * 0.002; if (x < 32768) x = 32768; if (x < 2 * m) x = 2 * m; printf "%.0f", x }')
  tc -n "$ns" qdisc replace dev "$ifname" root tbf rate "$rate" burst "$burst" latency "${QUEUE_MS}ms"
}

# ---------------------------------------------------------------------------------------------
# "up", "no-carrier" (up here, the other end is down), "down" or "missing".
link_state() {  # NS IFNAME
  local line flags
  line=$(ip -n "$1" -o link show dev "$2" 2>/dev/null || true)
  [ -n "$line" ] || { echo missing; return; }
  flags=${line#*<}
  flags=",${flags%%>*},"
  if [[ $flags != *,UP,* ]]; then echo down
  elif [[ $flags == *,NO-CARRIER,* ]]; then echo no-carrier
  else echo up; fi
}

# Routes (--router). Idempotent: run at up and after every repair, since taking a link down
# removes the routes through it.

plane_routes() {
  local p=$1 h g k ns
  [ "$ROUTER" = 1 ] || return 0
  for ((h = 0; h < HOSTS; h++)); do
    ns=$(sw_ns "$p" "$h")
    ip -n "$ns" route replace "$(host_addr "$h" "$p")/32" dev host scope link 2>/dev/null || true
    for ((g = 0; g < HOSTS; g++)); do
      [ "$g" = "$h" ] && continue
      local hops=()
      for ((k = 0; k < PATHS; k++)); do
        # Only next hops whose link is up: the kernel refuses a route through a down device.
        if [ "$(link_state "$ns" "$(sw_link "$g" "$k")")" != down ]; then
          hops+=(nexthop via "$(sw_id_addr "$g" "$p")" dev "$(sw_link "$g" "$k")" onlink)
        fi
      done
      if [ ${#hops[@]} -gt 0 ]; then
        ip -n "$ns" route replace "$(host_addr "$g" "$p")/32" "${hops[@]}"
      fi
    done
  done
}

# ---------------------------------------------------------------------------------------------
# up / down

configure_ns() {  # NS ROLE(host|router)
  local ns=$1
  ip -n "$ns" link set lo up
  local s=(net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0)
  if [ "$2" = router ]; then
    s+=(net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1
      net.ipv4.conf.all.ignore_routes_with_linkdown=1 net.ipv4.conf.default.ignore_routes_with_linkdown=1)
  fi
  ip netns exec "$ns" sysctl -q -w "${s[@]}" >/dev/null
}

configure_link_end() {  # NS IFNAME
  ip -n "$1" link set dev "$2" mtu "$MTU"
  # Per-packet behaviour: with segmentation offloads a 64 KB super-packet would cross the veth
  # as one skb and a loss rule would drop it (or not) as one.
  ip netns exec "$1" ethtool -K "$2" tso off gso off tx-udp-segmentation off >/dev/null 2>&1 || true
  ip -n "$1" link set dev "$2" up
}

raise_buffers() {
  # UDP at these rates needs bigger socket buffers than Debian's default (testbeds.md). These
  # two are global (not per namespace) on this kernel; only ever raised, never lowered.
  local key cur
  for key in net.core.rmem_max net.core.wmem_max; do
    cur=$(sysctl -n "$key")
    if [ "$cur" -lt 16777216 ]; then
      sysctl -q -w "$key=16777216" >/dev/null && echo "$PROG: raised $key from $cur to 16777216 (global)" >&2
    fi
  done
}

cmd_up() {
  need_cmd ip iproute2
  need_cmd tc iproute2
  need_cmd ethtool ethtool
  need_cmd flock util-linux
  [ "$ROUTER" = 1 ] || [ "$PATHS" = 1 ] || die "--paths $PATHS needs --router (parallel links are between routers)"
  [ "$ROUTING" = ecmp ] || [ "$ROUTER" = 0 ] || die "--routing srv6 builds its own leaf-spine: leave out --router"
  check_rate "$RATE"
  if [ -f "$STATE/config" ] || [ -n "$(existing_namespaces)" ]; then
    die "testbed '$PREFIX' is already up ('$PROG${PREFIX_ARG} status' shows it; '$PROG${PREFIX_ARG} down' removes it)"
  fi
  mkdir -p "$STATE"
  [ "$ROUTING" != srv6 ] || UN_MODE=$(srv6_un_mode)
  # From here on, any failure removes what was made.
  trap 'echo "$PROG: up failed; removing what was made" >&2; teardown >/dev/null 2>&1 || true' EXIT
  save_config
  : >"$STATE/faults"

  local h g p k ns
  local first_ns
  first_ns=$(host_ns 0)
  if ! ip netns add "$first_ns" 2>"$STATE/err"; then
    die "cannot create network namespace $first_ns: $(cat "$STATE/err") (this needs root and a kernel and container that allow network namespaces)"
  fi
  configure_ns "$first_ns" host
  for ((h = 1; h < HOSTS; h++)); do ip netns add "$(host_ns "$h")"; configure_ns "$(host_ns "$h")" host; done
  if [ "$ROUTING" = srv6 ]; then
    srv6_up
    return
  fi
  if [ "$ROUTER" = 1 ]; then
    for ((p = 0; p < PLANES; p++)); do
      for ((h = 0; h < HOSTS; h++)); do ip netns add "$(sw_ns "$p" "$h")"; configure_ns "$(sw_ns "$p" "$h")" router; done
    done
  fi

  for ((p = 0; p < PLANES; p++)); do
    if [ "$ROUTER" = 0 ]; then
      [ "$HOSTS" = 2 ] || die "--hosts $HOSTS needs --router or --routing srv6 (direct veth pairs join exactly 2 hosts)"
      ip link add "$(nic 0 "$p")" netns "$(host_ns 0)" type veth peer name "$(nic 1 "$p")" netns "$(host_ns 1)"
      for h in 0 1; do
        configure_link_end "$(host_ns "$h")" "$(nic "$h" "$p")"
        ip -n "$(host_ns "$h")" addr add "$(host_addr "$h" "$p")/24" dev "$(nic "$h" "$p")"
      done
      continue
    fi
    for ((h = 0; h < HOSTS; h++)); do
      ns=$(sw_ns "$p" "$h")
      ip link add "$(nic "$h" "$p")" netns "$(host_ns "$h")" type veth peer name host netns "$ns"
      configure_link_end "$(host_ns "$h")" "$(nic "$h" "$p")"
      ip -n "$(host_ns "$h")" addr add "$(host_addr "$h" "$p")/24" dev "$(nic "$h" "$p")"
      configure_link_end "$ns" host
      ip -n "$ns" addr add "$(sw_host_addr "$h" "$p")/32" dev host
      # The host sees its plane as one /24: the router answers ARP for the other hosts.
      ip netns exec "$ns" sysctl -q -w net.ipv4.conf.host.proxy_arp=1 net.ipv4.neigh.host.proxy_delay=0 >/dev/null
    done
    for ((h = 0; h < HOSTS; h++)); do
      for ((g = h + 1; g < HOSTS; g++)); do
        for ((k = 0; k < PATHS; k++)); do
          ip link add "$(sw_link "$g" "$k")" netns "$(sw_ns "$p" "$h")" type veth peer name "$(sw_link "$h" "$k")" netns "$(sw_ns "$p" "$g")"
          configure_link_end "$(sw_ns "$p" "$h")" "$(sw_link "$g" "$k")"
          configure_link_end "$(sw_ns "$p" "$g")" "$(sw_link "$h" "$k")"
          ip -n "$(sw_ns "$p" "$h")" addr add "$(sw_id_addr "$h" "$p")/32" dev "$(sw_link "$g" "$k")"
          ip -n "$(sw_ns "$p" "$g")" addr add "$(sw_id_addr "$g" "$p")/32" dev "$(sw_link "$h" "$k")"
        done
      done
    done
    plane_routes "$p"
  done

  if ! is_unlimited "$RATE"; then
    local end
    for ((p = 0; p < PLANES; p++)); do
      while read -r end; do apply_rate "$end" "$RATE"; done < <(plane_ends "$p")
    done
  fi
  up_done
}

# The end of a successful up: buffers, the trap lifted, what was made.
up_done() {
  raise_buffers
  trap - EXIT
  if [ "$JSON" = 1 ]; then
    cmd_status
    return
  fi
  local h first extra=""
  first=$(host_addr 0 0)
  if [ "$ROUTING" = srv6 ]; then first=$(srv6_locator 0 0) extra=" --srv6-paths $(srv6_paths)"; fi
  echo "testbed '$PREFIX' is up: $HOSTS hosts x $PLANES planes, $(layout_words)"
  for ((h = 0; h < HOSTS; h++)); do
    echo "  host $h: namespace $(host_ns "$h"), plane addresses $(addrs_of "$h")"
  done
  echo "  try: ip netns exec $(host_ns 0) build/release/src/mrc perf --server --planes $(addrs_of 0)$extra"
  echo "       ip netns exec $(host_ns 1) build/release/src/mrc perf --client $first --planes $(addrs_of 1)$extra --bytes 536870912 --verify"
}

# --routing srv6: the fabric of every plane, rates on the hosts' links.
srv6_up() {
  local h p end
  for ((h = 0; h < HOSTS; h++)); do srv6_host_ns_setup "$(host_ns "$h")"; done
  for ((p = 0; p < PLANES; p++)); do srv6_plane_up "$p"; done
  if ! is_unlimited "$RATE"; then
    for ((p = 0; p < PLANES; p++)); do
      for ((h = 0; h < HOSTS; h++)); do
        for end in "$(host_ns "$h")|$(nic "$h" "$p")" "$(leaf_ns "$p" "$h")|host"; do apply_rate "$end" "$RATE"; done
      done
    done
  fi
  up_done
}

layout_words() {
  local w
  if [ "$ROUTING" = srv6 ]; then
    echo "SRv6 uSID leaf-spine per plane ($SPINES spines, uN by $UN_MODE), MTU $MTU"
    return
  elif [ "$ROUTER" = 1 ]; then
    w="routers per plane and host, $PATHS parallel link(s) between them (ECMP on UDP ports)"
  else
    w="direct veth pair per plane"
  fi
  echo "$w, MTU $MTU, rate $(is_unlimited "$RATE" && echo unlimited || echo "$RATE")"
}

addrs_of() {
  [ "$ROUTING" != srv6 ] || { srv6_addrs_of "$1"; return; }
  local h=$1 p out=""
  for ((p = 0; p < PLANES; p++)); do out+="${out:+,}$(host_addr "$h" "$p")"; done
  echo "$out"
}

# Ends the delay relays, then every process left in the namespaces, then the namespaces.
teardown() {
  local f pid ns n=0 relays=()
  for f in "$STATE"/delay.*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nfq-delay ]; then
      kill "$pid" 2>/dev/null || true
      relays+=("$pid")
    fi
    rm -f "$f"
  done
  for pid in "${relays[@]}"; do  # they accept the packets they hold, then exit
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nfq-delay ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || break
      sleep 0.05
    done
  done
  local namespaces=()
  if [ -f "$STATE/config" ]; then load_config; fi
  mapfile -t namespaces < <( { [ -f "$STATE/config" ] && all_namespaces; existing_namespaces; } | sort -u)
  for ns in "${namespaces[@]}"; do
    [ -e "/run/netns/$ns" ] || continue
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    if [ -n "${pids// /}" ]; then
      echo "$PROG: ending processes left in $ns: $pids" >&2
      # shellcheck disable=SC2086
      kill $pids 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
        sleep 0.1
      done
      pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
      # shellcheck disable=SC2086
      [ -z "${pids// /}" ] || kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns" && n=$((n + 1))
  done
  rm -rf "$STATE"
  echo "$n"
}

cmd_down() {
  need_cmd ip iproute2
  local n
  n=$(teardown)
  if [ "$JSON" = 1 ]; then
    echo "{\"prefix\": \"$PREFIX\", \"removed_namespaces\": $n}"
  elif [ "$n" = 0 ]; then
    echo "testbed '$PREFIX': nothing to remove"
  else
    echo "testbed '$PREFIX' is down: removed $n namespaces"
  fi
}

# ---------------------------------------------------------------------------------------------
# Faults

check_plane() {
  is_uint "$1" && [ "$1" -lt "$PLANES" ] || die "plane '$1' does not exist (planes are 0..$((PLANES - 1)))"
}

check_selection() {
  [ -z "$SEL_HOST" ] || { is_uint "$SEL_HOST" && [ "$SEL_HOST" -lt "$HOSTS" ]; } ||
    die "--host $SEL_HOST does not exist (hosts are 0..$((HOSTS - 1)))"
  if [ -n "$SEL_PATH" ]; then
    [ "$ROUTER" = 1 ] || die "--path needs a testbed made with --router (parallel links are between routers)"
    { is_uint "$SEL_PATH" && [ "$SEL_PATH" -lt "$PATHS" ]; } || die "--path $SEL_PATH does not exist (paths are 0..$((PATHS - 1)))"
    [ -z "$SEL_HOST" ] || die "give --host or --path, not both"
  fi
}

what() {  # words for the selection
  if [ -n "$SEL_PATH" ]; then echo "plane $1 parallel link $SEL_PATH"
  elif [ -n "$SEL_HOST" ]; then echo "plane $1 link of host $SEL_HOST"
  else echo "plane $1"; fi
}

done_line() {  # ACTION PLANE VALUE MESSAGE
  if [ "$JSON" = 1 ]; then
    local v=$3
    [[ $v =~ ^[0-9.]+$ ]] || v="\"$v\""
    echo "{\"prefix\": \"$PREFIX\", \"action\": \"$1\", \"plane\": $2, \"scope\": \"$(scope_of)\", \"value\": $v}"
  else
    echo "$4"
  fi
}

cmd_fail() {  # PLANE up|down
  local p=$1 state=$2 end
  if [ -n "$SEL_SPINE" ]; then
    [ "$ROUTING" = srv6 ] || die "--spine needs a testbed made with --routing srv6"
    srv6_cmd_fail "$p" "$state"
    return
  fi
  [ -z "$SEL_LEAF" ] || die "--leaf needs --spine (the spine's link to that leaf)"
  check_plane "$p"
  check_selection
  while read -r end; do ip -n "${end%%|*}" link set dev "${end##*|}" "$state"; done < <(fail_ends "$p" "$SEL_HOST" "$SEL_PATH")
  if [ "$state" = up ]; then
    plane_routes "$p"
    [ "$ROUTING" != srv6 ] || srv6_routes "$p"
    record_fault fail "$p" "$(scope_of)" ""
    done_line repair "$p" up "$(what "$p"): links up"
  else
    record_fault fail "$p" "$(scope_of)" down
    done_line fail "$p" down "$(what "$p"): links down"
  fi
}

ensure_blackhole_table() {  # NS
  ip netns exec "$1" nft list table inet mrctb_bh >/dev/null 2>&1 && return 0
  ip netns exec "$1" nft -f - <<'EOF'
table inet mrctb_bh {
  set failed { type ifname; counter; }
  chain pre { type filter hook prerouting priority -300; policy accept; iifname @failed drop; }
}
EOF
}

cmd_blackhole() {  # PLANE on|off
  local p=$1 on=$2 end ns ifname
  need_cmd nft nftables
  check_plane "$p"
  check_selection
  while read -r end; do
    ns=${end%%|*} ifname=${end##*|}
    if [ "$on" = on ]; then
      ensure_blackhole_table "$ns"
      ip netns exec "$ns" nft add element inet mrctb_bh failed "{ \"$ifname\" }"
    else
      ip netns exec "$ns" nft delete element inet mrctb_bh failed "{ \"$ifname\" }" 2>/dev/null || true
    fi
  done < <(ingress_ends "$p" "$SEL_HOST" "$SEL_PATH")
  if [ "$on" = on ]; then
    record_fault blackhole "$p" "$(scope_of)" on
    done_line blackhole "$p" on "$(what "$p"): blackholed (links up, every packet dropped silently)"
  else
    record_fault blackhole "$p" "$(scope_of)" ""
    done_line unblackhole "$p" off "$(what "$p"): blackhole removed"
  fi
}

cmd_offload() {  # PLANE on|off
  local p=$1 state=$2 end
  [ "$state" = on ] || [ "$state" = off ] || die "usage: $PROG offload PLANE on|off (not '$state')"
  need_cmd ethtool ethtool
  check_plane "$p"
  check_selection
  while read -r end; do
    ip netns exec "${end%%|*}" ethtool -K "${end##*|}" tso "$state" gso "$state" tx-udp-segmentation "$state" >/dev/null 2>&1 ||
      die "ethtool -K ${end##*|} (namespace ${end%%|*}): cannot turn segmentation offloads $state"
  done < <(fail_ends "$p" "$SEL_HOST" "$SEL_PATH")
  done_line offload "$p" "$state" "$(what "$p"): segmentation offloads $state"
}

cmd_rate() {  # PLANE RATE
  local p=$1 rate=${2:?usage: $PROG rate PLANE RATE} end
  check_plane "$p"
  check_selection
  check_rate "$rate"
  while read -r end; do apply_rate "$end" "$rate"; done < <(plane_ends "$p" "$SEL_HOST" "$SEL_PATH")
  is_unlimited "$rate" && rate=unlimited
  record_fault rate "$p" "$(scope_of)" "$([ "$rate" = unlimited ] || echo "$rate")"
  done_line rate "$p" "$rate" "$(what "$p"): rate $rate"
}

cmd_loss() {  # PLANE PERCENT
  local p=$1 pct=${2:?usage: $PROG loss PLANE PERCENT} end ns ifname ppm
  need_cmd nft nftables
  check_plane "$p"
  check_selection
  [[ $pct =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v x="$pct" 'BEGIN { exit !(x <= 100) }' || die "loss '$pct': give a percentage 0..100"
  ppm=$(awk -v x="$pct" 'BEGIN { printf "%.0f", x * 10000 }')
  while read -r end; do
    ns=${end%%|*} ifname=${end##*|}
    if [ "$ppm" = 0 ]; then
      ip netns exec "$ns" nft delete chain netdev mrctb_loss "in_$ifname" 2>/dev/null || true
      continue
    fi
    ip netns exec "$ns" nft -f - <<EOF
add table netdev mrctb_loss
add chain netdev mrctb_loss in_$ifname { type filter hook ingress device "$ifname" priority 0; policy accept; }
flush chain netdev mrctb_loss in_$ifname
add rule netdev mrctb_loss in_$ifname meta protocol ip numgen random mod 1000000 < $ppm counter drop
EOF
  done < <(ingress_ends "$p" "$SEL_HOST" "$SEL_PATH")
  record_fault loss "$p" "$(scope_of)" "$([ "$ppm" = 0 ] || echo "$pct")"
  done_line loss "$p" "$pct" "$(what "$p"): loss $pct% at each receiver"
}

find_nfq_delay() {
  local c
  for c in "${MRC_NFQ_DELAY:-}" "$REPO/build/release/tools/nfq-delay" "$REPO"/build/*/tools/nfq-delay "$STATE_ROOT/bin/nfq-delay"; do
    [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return; }
  done
  command -v nfq-delay 2>/dev/null && return
  # Not built: compile it (needs a C compiler and libnetfilter-queue-dev).
  if command -v cc >/dev/null && [ -f /usr/include/libnetfilter_queue/libnetfilter_queue.h ]; then
    mkdir -p "$STATE_ROOT/bin"
    cc -O2 -o "$STATE_ROOT/bin/nfq-delay" "$REPO/tools/nfq-delay.c" -lnetfilter_queue -lnfnetlink &&
      { echo "$STATE_ROOT/bin/nfq-delay"; return; }
  fi
  die "nfq-delay not found: install Debian's package libnetfilter-queue-dev and build (cmake --build --preset release --target nfq-delay), or set MRC_NFQ_DELAY"
}

stop_delay() {  # NS IFNAME
  local ns=$1 ifname=$2 q pidfile pid
  q=$(queue_of "$ifname")
  while ip netns exec "$ns" iptables -t mangle -D PREROUTING -i "$ifname" -j NFQUEUE --queue-num "$q" --queue-bypass 2>/dev/null; do :; done
  pidfile=$STATE/delay.$ns.$ifname.pid
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = nfq-delay ]; then
      kill "$pid" 2>/dev/null || true
      for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "/proc/$pid" ] || break; sleep 0.05; done
    fi
    rm -f "$pidfile"
  fi
}

cmd_delay() {  # PLANE MS
  local p=$1 ms=${2:?usage: $PROG delay PLANE MS} end ns ifname us relay q pidfile
  check_plane "$p"
  check_selection
  [[ $ms =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v x="$ms" 'BEGIN { exit !(x <= 10000) }' || die "delay '$ms': give milliseconds 0..10000"
  us=$(awk -v x="$ms" 'BEGIN { printf "%.0f", x * 1000 }')
  if [ "$us" != 0 ]; then
    need_cmd iptables iptables
    relay=$(find_nfq_delay)
  fi
  while read -r end; do
    ns=${end%%|*} ifname=${end##*|}
    stop_delay "$ns" "$ifname"
    [ "$us" = 0 ] && continue
    q=$(queue_of "$ifname")
    pidfile=$STATE/delay.$ns.$ifname.pid
    ip netns exec "$ns" "$relay" "$q" "$us" --pidfile "$pidfile" </dev/null >>"$STATE/delay.log" 2>&1 9>&- &
    disown
    for _ in $(seq 1 100); do [ -s "$pidfile" ] && break; sleep 0.02; done
    [ -s "$pidfile" ] || die "nfq-delay did not start in $ns (see $STATE/delay.log)"
    ip netns exec "$ns" iptables -t mangle -A PREROUTING -i "$ifname" -j NFQUEUE --queue-num "$q" --queue-bypass
  done < <(ingress_ends "$p" "$SEL_HOST" "$SEL_PATH")
  record_fault delay "$p" "$(scope_of)" "$([ "$us" = 0 ] || echo "$ms")"
  done_line delay "$p" "$ms" "$(what "$p"): delay ${ms} ms in each direction"
}

# ---------------------------------------------------------------------------------------------
# status

# Live facts about one end: "link rate loss_pct loss_drops blackholed bh_drops delay_ms qdisc_drops"
end_facts() {  # NS IFNAME NFT_RULESET TC_OUTPUT
  local ns=$1 ifname=$2 ruleset=$3 tcout=$4 link rate loss ldrops bh bdrops delay qdrops
  link=$(link_state "$ns" "$ifname")
  rate=$(echo "$tcout" | awk -v d="$ifname" '$1 == "qdisc" && $2 == "tbf" && $5 == d { for (i = 1; i <= NF; i++) if ($i == "rate") { print $(i + 1); exit } }')
  qdrops=$(echo "$tcout" | awk -v d="$ifname" '$1 == "qdisc" { cur = ($5 == d) } cur && /dropped/ { for (i = 1; i <= NF; i++) if ($i == "dropped") { v = $(i + 1); sub(",", "", v); print v; exit } }')
  loss=$(echo "$ruleset" | awk -v c="in_$ifname" '$1 == "chain" { cur = ($2 == c) } cur && /numgen/ { for (i = 1; i <= NF; i++) if ($i == "<") { printf "%g", $(i + 1) / 10000; exit } }')
  ldrops=$(echo "$ruleset" | awk -v c="in_$ifname" '$1 == "chain" { cur = ($2 == c) } cur && /numgen/ { for (i = 1; i <= NF; i++) if ($i == "packets") { print $(i + 1); exit } }')
  bh=no
  bdrops=$(echo "$ruleset" | awk '/set failed \{/ { f = 1 } f { print } f && /^[[:space:]]*}[[:space:]]*$/ { f = 0 }' |
    grep -o "\"$ifname\" counter packets [0-9]*" | awk '{print $4}' | head -1)
  [ -n "$bdrops" ] && bh=yes
  delay=""
  local pidfile=$STATE/delay.$ns.$ifname.pid pid
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    delay=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | awk '{ printf "%g", $3 / 1000 }')
    [ -n "$delay" ] || delay="relay-died"
  fi
  echo "$link ${rate:--} ${loss:-0} ${ldrops:-0} $bh ${bdrops:-0} ${delay:-0} ${qdrops:-0}"
}

# The applied faults ($STATE/faults) as JSON objects, comma-separated.
faults_json() {
  local line kind fp scope value out=()
  [ -f "$STATE/faults" ] || return 0
  while read -r kind fp scope value; do
    out+=("{\"kind\": \"$kind\", \"plane\": $fp, \"scope\": \"$scope\", \"value\": \"$value\"}")
  done <"$STATE/faults"
  (IFS=,; echo "${out[*]}")
}

cmd_status() {
  if [ ! -f "$STATE/config" ]; then
    local stray
    stray=$(existing_namespaces | tr '\n' ' ')
    if [ "$JSON" = 1 ]; then echo "{\"prefix\": \"$PREFIX\", \"up\": false}"
    else
      echo "testbed '$PREFIX' is down"
      [ -z "$stray" ] || echo "  but these namespaces of its names exist: $stray('$PROG${PREFIX_ARG} down' removes them)"
    fi
    return 3
  fi
  load_config
  [ "$ROUTING" != srv6 ] || { srv6_status; return; }
  local h p ns ruleset tcout facts
  local json_hosts=() text=()
  for ((h = 0; h < HOSTS; h++)); do
    ns=$(host_ns "$h")
    ruleset=$(ip netns exec "$ns" nft list ruleset 2>/dev/null || true)
    tcout=$(tc -n "$ns" -s qdisc show 2>/dev/null || true)
    local planes_json=()
    text+=("host $h  namespace $ns")
    text+=("$(printf '  %-5s %-6s %-15s %-10s %-10s %-6s %-6s %-9s %s' plane iface address link rate loss% delay blackhole 'drops(loss/blackhole/queue)')")
    for ((p = 0; p < PLANES; p++)); do
      facts=$(end_facts "$ns" "$(nic "$h" "$p")" "$ruleset" "$tcout")
      read -r link rate loss ldrops bh bdrops delay qdrops <<<"$facts"
      text+=("$(printf '  %-5s %-6s %-15s %-10s %-10s %-6s %-6s %-9s %s/%s/%s' "$p" "$(nic "$h" "$p")" "$(host_addr "$h" "$p")/24" "$link" "$rate" "$loss" \
        "$([ "$delay" = 0 ] && echo - || echo "${delay}ms")" "$bh" "$ldrops" "$bdrops" "$qdrops")")
      planes_json+=("{\"plane\": $p, \"iface\": \"$(nic "$h" "$p")\", \"address\": \"$(host_addr "$h" "$p")\", \"prefix_len\": 24, \"link\": \"$link\", \"rate\": \"$rate\", \"loss_percent\": $loss, \"delay_ms\": $([[ $delay =~ ^[0-9.]+$ ]] && echo "$delay" || echo "\"$delay\""), \"blackholed\": $([ "$bh" = yes ] && echo true || echo false), \"loss_drops\": $ldrops, \"blackhole_drops\": $bdrops, \"queue_drops\": $qdrops}")
    done
    json_hosts+=("{\"host\": $h, \"namespace\": \"$ns\", \"addresses\": \"$(addrs_of "$h")\", \"planes\": [$(IFS=,; echo "${planes_json[*]}")]}")
  done
  local faults=()
  [ -f "$STATE/faults" ] && mapfile -t faults <"$STATE/faults"
  local routers=()
  if [ "$ROUTER" = 1 ]; then
    for ((p = 0; p < PLANES; p++)); do
      for ((h = 0; h < HOSTS; h++)); do routers+=("\"$(sw_ns "$p" "$h")\""); done
    done
  fi
  if [ "$JSON" = 1 ]; then
    echo "{\"prefix\": \"$PREFIX\", \"up\": true, \"hosts\": $HOSTS, \"planes\": $PLANES, \"router\": $([ "$ROUTER" = 1 ] && echo true || echo false), \"paths\": $PATHS, \"mtu\": $MTU, \"rate_at_up\": \"$(is_unlimited "$RATE" && echo unlimited || echo "$RATE")\", \"queue_ms\": $QUEUE_MS,"
    echo " \"host_list\": [$(IFS=,; echo "${json_hosts[*]}")],"
    echo " \"routers\": [$(IFS=,; echo "${routers[*]}")],"
    echo " \"faults\": [$(faults_json)]}"
    return 0
  fi
  echo "testbed '$PREFIX': $HOSTS hosts x $PLANES planes, $(layout_words)"
  printf '%s\n' "${text[@]}"
  if [ "$ROUTER" = 1 ]; then
    echo "routers: $(sw_ns 0 0) ... $(sw_ns $((PLANES - 1)) $((HOSTS - 1))) (plane p, host h's side: $PREFIX-pP-swH; $PATHS parallel link(s) swGkK to router G)"
  fi
  if [ ${#faults[@]} -gt 0 ]; then
    echo "applied (kind plane scope value):"
    printf '  %s\n' "${faults[@]}"
  fi
  echo "run in a host: ip netns exec $(host_ns 0) CMD   or   $PROG${PREFIX_ARG} exec 0 CMD"
}

cmd_exec() {
  local who=$1 ns
  shift
  load_config
  case "$who" in
    [0-9]*) ns=$(host_ns "$who") ;;
    h[0-9]*) ns=$(host_ns "${who#h}") ;;
    "$PREFIX"-*) ns=$who ;;
    *) ns="$PREFIX-$who" ;;
  esac
  all_namespaces | grep -qx -- "$ns" || die "no namespace '$ns' in testbed '$PREFIX' (hosts: 0..$((HOSTS - 1)))"
  exec ip netns exec "$ns" "$@"
}

# ---------------------------------------------------------------------------------------------

need_root
case "$CMD" in
  up | down | status | fail | repair | blackhole | unblackhole | rate | loss | delay | offload) ;;
  exec | addrs) ;;
  *) die "unknown subcommand '$CMD' (see '$PROG help')" ;;
esac
need_cmd ip iproute2
need_cmd flock util-linux
mkdir -p "$STATE_ROOT"
if [ "$CMD" != exec ]; then
  exec 9>"$STATE_ROOT/lock"  # one testbed command at a time
  flock -w 60 9 || die "another $PROG has been working for 60 s (lock $STATE_ROOT/lock)"
fi

nargs() { [ ${#ARGS[@]} -eq "$1" ] || die "usage: $PROG $2"; }
case "$CMD" in
  up)
    nargs 0 "[--hosts N] [--planes P] [--rate RATE] [--router [--paths K]] [--mtu BYTES] up"
    cmd_up
    ;;
  down) nargs 0 "down"; cmd_down ;;
  status)
    nargs 0 "status [--json]"
    rc=0
    cmd_status || rc=$?
    exit "$rc"
    ;;
  addrs)
    nargs 1 "addrs HOST"
    load_config
    { is_uint "${ARGS[0]#h}" && [ "${ARGS[0]#h}" -lt "$HOSTS" ]; } || die "host '${ARGS[0]}' does not exist (hosts are 0..$((HOSTS - 1)))"
    if [ "$JSON" = 1 ]; then
      echo "[\"$(addrs_of "${ARGS[0]#h}" | sed 's/,/", "/g')\"]"
    else
      addrs_of "${ARGS[0]#h}"
    fi
    ;;
  fail | repair | blackhole | unblackhole)
    nargs 1 "$CMD PLANE [--host H | --path K]"
    load_config
    case "$CMD" in
      fail) cmd_fail "${ARGS[0]}" down ;;
      repair) cmd_fail "${ARGS[0]}" up ;;
      blackhole | unblackhole) [ "$ROUTING" != srv6 ] || die "'$CMD' is not available on an SRv6 testbed (fail and repair are: --spine S [--leaf L])" ;;&
      blackhole) cmd_blackhole "${ARGS[0]}" on ;;
      unblackhole) cmd_blackhole "${ARGS[0]}" off ;;
    esac
    ;;
  rate | loss | delay | offload)
    case "$CMD" in rate) a=RATE ;; loss) a=PERCENT ;; delay) a=MS ;; offload) a=on\|off ;; esac
    nargs 2 "$CMD PLANE $a [--host H | --path K]"
    load_config
    [ "$ROUTING" != srv6 ] || die "'$CMD' is not available on an SRv6 testbed (fail and repair are: --spine S [--leaf L])"
    "cmd_$CMD" "${ARGS[0]}" "${ARGS[1]}"
    ;;
  exec) cmd_exec "${ARGS[@]}" ;;
esac
