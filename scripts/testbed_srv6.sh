# shellcheck shell=bash
# The SRv6 fabric of the mrc testbed (`testbed.sh --routing srv6`), sourced by testbed.sh.
#
# Per plane p, a leaf-spine: one leaf per host (namespace PREFIX-pP-lH) and --spines spines
# (PREFIX-pP-sS), every leaf linked to every spine. Addresses follow SRv6 uSIDs (block
# fd00:P::/32, 16-bit uSIDs; docs/TESTBED.md "SRv6 fabric"):
#   leaf h  uSID 1hh (hex: 0x100 + h)     spine s  uSID 2ss (0x200 + s)     host h  uSID 3hh
#   host h's locator on plane p: fd00:p:1hh:3hh::  (on its NIC, /128; mrc binds it)
# A spine runs uN on fd00:p:2ss::/48 and routes each leaf's /48 to it. uN is the kernel's
# seg6local End with the next-csid flavour where the kernel has it (CONFIG_IPV6_SEG6_LWTUNNEL);
# where it does not, an nftables map in the spine's prerouting hook does the same shift for
# every locator of the fabric (container fd00:p:2ss:1hh:3hh:: -> fd00:p:1hh:3hh::) before the
# kernel routes the packet: the same packets on every link, for the addresses this fabric has.
# A leaf also has a uA SID per uplink, e0s (0xe00 + s: every leaf alike), "this leaf's link to
# spine s": a container fd00:p:e0s:1hh:3hh:: is shifted at the sender's leaf and sent up that
# link (nftables: the shift, and a mark that policy routing sends to spine s), then routed
# plainly; paths e00,e01 choose the spine as 200,201 do, at the first hop instead of the spine.
# The spine's a leaf routes each spine's /48 to it, its host's /64 to the host, and the other
# leaves' /48 over every spine (ECMP on the UDP ports: plain IPv6 traffic, ECMP mode, gets there
# too). A packet to the container fd00:p:2ss:1hh:3hh:: goes up to spine s, which shifts it to
# the locator fd00:p:1hh:3hh:: and sends it down: the sender chose the spine.
# Link nets: host h - its leaf fd01:p:h::/64 (host ::1, leaf ::2); leaf h - spine s
# fd02:p:h:s::/64 (leaf ::1, spine ::2).

leaf_ns() { echo "$PREFIX-p$1-l$2"; }   # plane p, host h's leaf
spine_ns() { echo "$PREFIX-p$1-s$2"; }  # plane p, spine s
usid_hex() { printf '%x' "$1"; }
leaf_usid() { usid_hex $((0x100 + $1)); }
spine_usid() { usid_hex $((0x200 + $1)); }
host_usid() { usid_hex $((0x300 + $1)); }
srv6_locator() { echo "fd00:$2:$(leaf_usid "$1"):$(host_usid "$1")::"; }  # host h, plane p
ua_usid() { usid_hex $((0xe00 + $1)); }  # every leaf's uA SID of its link to spine s
srv6_paths() {  # the spines' uSIDs (uN), for mrc perf --srv6-paths
  local s out=""
  for ((s = 0; s < SPINES; s++)); do out+="${out:+,}$(spine_usid "$s")"; done
  echo "$out"
}
srv6_ua_paths() {  # the leaves' uplink uSIDs (uA): the same spines, chosen at the first leaf
  local s out=""
  for ((s = 0; s < SPINES; s++)); do out+="${out:+,}$(ua_usid "$s")"; done
  echo "$out"
}

srv6_namespaces() {
  local p h s
  for ((p = 0; p < PLANES; p++)); do
    for ((h = 0; h < HOSTS; h++)); do leaf_ns "$p" "$h"; done
    for ((s = 0; s < SPINES; s++)); do spine_ns "$p" "$s"; done
  done
}

# Whether this kernel has seg6local (tried once, in a scratch namespace): "kernel" or "nftables".
srv6_un_mode() {
  local ns="$PREFIX-probe" mode=nftables
  ip netns add "$ns" 2>/dev/null || true
  ip -n "$ns" link add usid0 type ifb 2>/dev/null && ip -n "$ns" link set usid0 up &&
    ip -n "$ns" -6 route add fd00:ffff:200::/48 encap seg6local action End flavors next-csid \
      lblen 32 nflen 16 dev usid0 2>/dev/null && mode=kernel
  ip netns del "$ns" 2>/dev/null || true
  echo "$mode"
}

# uN of spine s of plane p by nftables: the shift as a map from each container to its locator.
srv6_nft_un() {  # PLANE SPINE
  local p=$1 s=$2 h elements=""
  for ((h = 0; h < HOSTS; h++)); do
    elements+="${elements:+, }fd00:$p:$(spine_usid "$s"):$(leaf_usid "$h"):$(host_usid "$h"):: : $(srv6_locator "$h" "$p")"
  done
  ip netns exec "$(spine_ns "$p" "$s")" nft -f - <<NFT
table ip6 mrctb_usid {
  map shift { type ipv6_addr : ipv6_addr; elements = { $elements } }
  chain prerouting {
    type filter hook prerouting priority -300; policy accept;
    ip6 daddr fd00:$p:$(spine_usid "$s")::/48 counter ip6 daddr set ip6 daddr map @shift
  }
}
NFT
}

# uA of leaf h of plane p by nftables: per uplink s, the shift as a map from each container to
# its locator, and mark s + 1, which a rule sends to table 100 + s: the route up link s.
srv6_nft_ua() {  # PLANE LEAF
  local p=$1 h=$2 s g ns maps="" rules="" elements
  ns=$(leaf_ns "$p" "$h")
  for ((s = 0; s < SPINES; s++)); do
    elements=""
    for ((g = 0; g < HOSTS; g++)); do
      elements+="${elements:+, }fd00:$p:$(ua_usid "$s"):$(leaf_usid "$g"):$(host_usid "$g"):: : $(srv6_locator "$g" "$p")"
    done
    maps+="  map ua$s { type ipv6_addr : ipv6_addr; elements = { $elements } }"$'\n'
    rules+="    ip6 daddr fd00:$p:$(ua_usid "$s")::/48 counter meta mark set $((s + 1)) ip6 daddr set ip6 daddr map @ua$s"$'\n'
    ip -n "$ns" -6 rule add fwmark $((s + 1)) table $((100 + s)) 2>/dev/null || true
    # Link s down: its route goes and the blackhole stays (a source route does not re-route).
    ip -n "$ns" -6 route replace blackhole "fd00:$p::/32" table $((100 + s)) metric 4000 2>/dev/null || true
  done
  ip netns exec "$ns" nft -f - <<NFT
table ip6 mrctb_ua {
$maps  chain prerouting {
    type filter hook prerouting priority -300; policy accept;
$rules  }
}
NFT
}

srv6_configure_router() {  # NS
  ip -n "$1" link set lo up
  ip netns exec "$1" sysctl -q -w net.ipv6.conf.all.forwarding=1 net.ipv6.conf.default.forwarding=1 \
    net.ipv6.fib_multipath_hash_policy=1 net.ipv6.conf.all.keep_addr_on_down=1 \
    net.ipv6.conf.default.keep_addr_on_down=1 net.ipv4.conf.all.disable_policy=1 >/dev/null
  # Counts what the router forwards (status shows it per spine).
  ip netns exec "$1" nft -f - <<'NFT'
table inet mrctb_count {
  chain forward { type filter hook forward priority 0; policy accept; counter; }
}
NFT
}

# Routes of plane p. Idempotent: run at up and after every repair (an interface taken down
# loses its IPv6 routes).
srv6_routes() {
  local p=$1 h g s ns hops
  for ((s = 0; s < SPINES; s++)); do
    ns=$(spine_ns "$p" "$s")
    [ "$UN_MODE" != kernel ] || ip -n "$ns" -6 route replace "fd00:$p:$(spine_usid "$s")::/48" \
      encap seg6local action End flavors next-csid lblen 32 nflen 16 count dev usid0 2>/dev/null || true
    for ((h = 0; h < HOSTS; h++)); do
      ip -n "$ns" -6 route replace "fd00:$p:$(leaf_usid "$h")::/48" via "fd02:$p:$h:$s::1" dev "l$h" 2>/dev/null || true
    done
  done
  for ((h = 0; h < HOSTS; h++)); do
    ip -n "$(host_ns "$h")" -6 route replace "fd00:$p::/32" via "fd01:$p:$h::2" dev "$(nic "$h" "$p")" \
      src "$(srv6_locator "$h" "$p")" 2>/dev/null || true
    ns=$(leaf_ns "$p" "$h")
    ip -n "$ns" -6 route replace "fd00:$p:$(leaf_usid "$h"):$(host_usid "$h")::/64" via "fd01:$p:$h::1" dev host 2>/dev/null || true
    hops=()
    for ((s = 0; s < SPINES; s++)); do
      ip -n "$ns" -6 route replace "fd00:$p:$(spine_usid "$s")::/48" via "fd02:$p:$h:$s::2" dev "s$s" 2>/dev/null || true
      ip -n "$ns" -6 route replace "fd00:$p::/32" via "fd02:$p:$h:$s::2" dev "s$s" table $((100 + s)) 2>/dev/null || true
      [ "$(link_state "$ns" "s$s")" = up ] && hops+=(nexthop via "fd02:$p:$h:$s::2" dev "s$s")
    done
    for ((g = 0; g < HOSTS; g++)); do
      [ "$g" = "$h" ] || [ ${#hops[@]} -eq 0 ] || ip -n "$ns" -6 route replace "fd00:$p:$(leaf_usid "$g")::/48" "${hops[@]}"
    done
  done
}

srv6_plane_up() {  # PLANE
  local p=$1 h s hn ln sn
  for ((h = 0; h < HOSTS; h++)); do ip netns add "$(leaf_ns "$p" "$h")"; srv6_configure_router "$(leaf_ns "$p" "$h")"; done
  for ((s = 0; s < SPINES; s++)); do
    sn=$(spine_ns "$p" "$s")
    ip netns add "$sn"
    srv6_configure_router "$sn"
    # The uN SID's nominal device: a route via lo would turn into a reject route, and this
    # kernel has no dummy devices; an ifb is always up.
    ip -n "$sn" link add usid0 type ifb
    ip -n "$sn" link set usid0 up
    [ "$UN_MODE" = kernel ] || srv6_nft_un "$p" "$s"
  done
  for ((h = 0; h < HOSTS; h++)); do
    hn=$(host_ns "$h") ln=$(leaf_ns "$p" "$h")
    ip link add "$(nic "$h" "$p")" netns "$hn" type veth peer name host netns "$ln"
    configure_link_end "$hn" "$(nic "$h" "$p")"
    configure_link_end "$ln" host
    ip -n "$hn" -6 addr add "fd01:$p:$h::1/64" dev "$(nic "$h" "$p")" nodad
    ip -n "$hn" -6 addr add "$(srv6_locator "$h" "$p")/128" dev "$(nic "$h" "$p")" nodad
    ip -n "$ln" -6 addr add "fd01:$p:$h::2/64" dev host nodad
    for ((s = 0; s < SPINES; s++)); do
      sn=$(spine_ns "$p" "$s")
      ip link add "s$s" netns "$ln" type veth peer name "l$h" netns "$sn"
      configure_link_end "$ln" "s$s"
      configure_link_end "$sn" "l$h"
      ip -n "$ln" -6 addr add "fd02:$p:$h:$s::1/64" dev "s$s" nodad
      ip -n "$sn" -6 addr add "fd02:$p:$h:$s::2/64" dev "l$h" nodad
    done
  done
  for ((h = 0; h < HOSTS; h++)); do srv6_nft_ua "$p" "$h"; done
  srv6_routes "$p"
}

srv6_host_ns_setup() {  # NS: a host of the SRv6 fabric has IPv6 on
  ip netns exec "$1" sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
    net.ipv6.conf.all.keep_addr_on_down=1 net.ipv6.conf.default.keep_addr_on_down=1 >/dev/null
}

srv6_addrs_of() {  # HOST: its locators, for mrc perf --planes
  local h=$1 p out=""
  for ((p = 0; p < PLANES; p++)); do out+="${out:+,}$(srv6_locator "$h" "$p")"; done
  echo "$out"
}

# Ends of a spine fault: every link of spine s (with --leaf L, only its link to leaf L, the
# spine's end: the spine loses its route down to L, and nothing upstream notices).
srv6_fault_ends() {  # PLANE SPINE LEAF
  local p=$1 s=$2 leaf=$3 h
  for ((h = 0; h < HOSTS; h++)); do
    [ -z "$leaf" ] || [ "$leaf" = "$h" ] || continue
    echo "$(spine_ns "$p" "$s")|l$h"
    [ -n "$leaf" ] || echo "$(leaf_ns "$p" "$h")|s$s"
  done
}

srv6_cmd_fail() {  # PLANE up|down
  local p=$1 state=$2 end scope words
  check_plane "$p"
  { is_uint "$SEL_SPINE" && [ "$SEL_SPINE" -lt "$SPINES" ]; } || die "--spine $SEL_SPINE does not exist (spines are 0..$((SPINES - 1)))"
  [ -z "$SEL_LEAF" ] || { is_uint "$SEL_LEAF" && [ "$SEL_LEAF" -lt "$HOSTS" ]; } || die "--leaf $SEL_LEAF does not exist (leaves are 0..$((HOSTS - 1)))"
  while read -r end; do ip -n "${end%%|*}" link set dev "${end##*|}" "$state"; done < <(srv6_fault_ends "$p" "$SEL_SPINE" "$SEL_LEAF")
  scope="s$SEL_SPINE${SEL_LEAF:+l$SEL_LEAF}"
  words="plane $p spine $SEL_SPINE${SEL_LEAF:+ link to leaf $SEL_LEAF}"
  srv6_routes "$p"
  if [ "$state" = up ]; then
    record_fault fail "$p" "$scope" ""
    done_line repair "$p" up "$words: links up"
  else
    record_fault fail "$p" "$scope" down
    done_line fail "$p" down "$words: links down"
  fi
}

# Packets a router forwarded (its nftables counter) and, for a spine, through its uN SID.
srv6_counts() {  # NS -> "FORWARDED SID_PACKETS"
  local fwd sid
  fwd=$(ip netns exec "$1" nft list table inet mrctb_count 2>/dev/null | grep -o 'packets [0-9]*' | head -1 | awk '{print $2}')
  if [ "$UN_MODE" = kernel ]; then
    sid=$(ip -n "$1" -s -6 route show 2>/dev/null | awk '/seg6local/ {getline; for (i = 1; i <= NF; i++) if ($i == "packets") print $(i + 1)}' | head -1)
  else
    sid=$(ip netns exec "$1" nft list table ip6 mrctb_usid 2>/dev/null | grep -o 'packets [0-9]*' | head -1 | awk '{print $2}')
  fi
  echo "${fwd:-0} ${sid:-0}"
}

# Packets leaf NS sent up each uplink through its uA SID: "N0 N1 ..." (one per spine).
srv6_ua_counts() {  # NS
  ip netns exec "$1" nft list table ip6 mrctb_ua 2>/dev/null | grep -o 'packets [0-9]*' | awk '{printf "%s%s", sep, $2; sep=" "} END {print ""}'
}

srv6_status() {
  local p s h ns fwd sid link links ua spines_json=() leaves_json=() text=()
  for ((p = 0; p < PLANES; p++)); do
    text+=("plane $p  block fd00:$p::/32  paths (mrc perf --srv6-paths) $(srv6_paths) (uN at the spines) or $(srv6_ua_paths) (uA at the leaves)")
    for ((s = 0; s < SPINES; s++)); do
      ns=$(spine_ns "$p" "$s")
      read -r fwd sid <<<"$(srv6_counts "$ns")"
      links=""
      for ((h = 0; h < HOSTS; h++)); do
        link=$(link_state "$ns" "l$h")
        links+="${links:+ }l$h=$link"
      done
      text+=("$(printf '  spine %-2s %-14s uN fd00:%s:%s::/48  forwarded %-10s via SID %-10s %s' "$s" "$ns" "$p" "$(spine_usid "$s")" "$fwd" "$sid" "$links")")
      spines_json+=("{\"plane\": $p, \"spine\": $s, \"namespace\": \"$ns\", \"usid\": \"$(spine_usid "$s")\", \"sid\": \"fd00:$p:$(spine_usid "$s")::/48\", \"forwarded_packets\": $fwd, \"sid_packets\": $sid, \"links\": \"$links\"}")
    done
    for ((h = 0; h < HOSTS; h++)); do
      read -r -a ua <<<"$(srv6_ua_counts "$(leaf_ns "$p" "$h")")"
      links="" sid=""
      for ((s = 0; s < SPINES; s++)); do
        links+="${links:+ }$(ua_usid "$s") ${ua[$s]:-0}"
        sid+="${sid:+, }{\"spine\": $s, \"usid\": \"$(ua_usid "$s")\", \"sid_packets\": ${ua[$s]:-0}}"
      done
      text+=("$(printf '  leaf  %-2s %-14s uSID %s  host %s locator %s  uA via SID: %s' "$h" "$(leaf_ns "$p" "$h")" "$(leaf_usid "$h")" "$h" "$(srv6_locator "$h" "$p")" "$links")")
      leaves_json+=("{\"plane\": $p, \"leaf\": $h, \"namespace\": \"$(leaf_ns "$p" "$h")\", \"usid\": \"$(leaf_usid "$h")\", \"ua\": [$sid]}")
    done
  done
  if [ "$JSON" = 1 ]; then
    local hosts_json=()
    for ((h = 0; h < HOSTS; h++)); do hosts_json+=("{\"host\": $h, \"namespace\": \"$(host_ns "$h")\", \"addresses\": \"$(srv6_addrs_of "$h")\"}"); done
    echo "{\"prefix\": \"$PREFIX\", \"up\": true, \"routing\": \"srv6\", \"hosts\": $HOSTS, \"planes\": $PLANES, \"spines\": $SPINES, \"un\": \"$UN_MODE\", \"mtu\": $MTU, \"srv6_paths\": \"$(srv6_paths)\", \"srv6_ua_paths\": \"$(srv6_ua_paths)\","
    echo " \"host_list\": [$(IFS=,; echo "${hosts_json[*]}")],"
    echo " \"spine_list\": [$(IFS=,; echo "${spines_json[*]}")],"
    echo " \"leaf_list\": [$(IFS=,; echo "${leaves_json[*]}")],"
    echo " \"faults\": [$(faults_json)]}"
    return 0
  fi
  echo "testbed '$PREFIX': $HOSTS hosts x $PLANES planes, $(layout_words)"
  for ((h = 0; h < HOSTS; h++)); do echo "host $h  namespace $(host_ns "$h")  locators $(srv6_addrs_of "$h")"; done
  printf '%s\n' "${text[@]}"
  if [ -s "$STATE/faults" ]; then
    echo "applied (kind plane scope value):"
    sed 's/^/  /' "$STATE/faults"
  fi
}
