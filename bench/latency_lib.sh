# shellcheck shell=bash
# Sourced by bench/latency.sh and bench/latency_tails.sh: what both do the same way. Needs say()
# and die() (each script's own prefix on its messages).

# install_deps FILE: apt-get the Debian packages FILE lists (one per line, '#' comments) that are
# not installed; without root, names the missing ones and stops.
install_deps() {
  local file=$1 p deps missing=()
  mapfile -t deps < <(grep -v '^[[:space:]]*\(#\|$\)' "$file" | awk '{print $1}')
  for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]} ($file): install them (apt-get) or run as root"
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# reap PID: ends a server that outlived its client (a failed run; sockperf's servers always do),
# so the next one finds its ports free and no idle server shares the cores with later runs. PID
# is the subshell of a backgrounded `in_ns ... timeout ...`: its child (timeout, which passes
# SIGTERM on) goes first.
reap() {
  pkill -TERM -P "$1" 2>/dev/null || true
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# sockperf_client LABEL TXT CMD...: runs a sockperf client command, its output to TXT, retrying
# while the server is not listening yet (a refused connection), at most 5 times.
sockperf_client() {
  local label=$1 txt=$2 tries=0
  shift 2
  until "$@" > "$txt" 2>&1; do
    tries=$((tries + 1))
    [ $tries -lt 5 ] || { say "$label failed: $(tail -1 "$txt")"; return 0; }
    sleep 0.5
  done
}
