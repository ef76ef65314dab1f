#!/usr/bin/env bash
# mrcctl from another process: a program owns mrc0 and mrc1 (mrc_ctl_events --serve, traffic
# from mrc0 to mrc1, mrc0 dropping 2% of its packets) and mrcctl shows and changes its state over
# the control socket. Checks: socket cleanup and permissions, every show command with and
# without --json, port down/up, EV deny/allow, EV probes, `watch` seeing ASSUMED_BAD, clear
# errors, a server that survives malformed requests, and mrc_ctl_* C calls from a third
# process (mrc_ctl_remote, a controller-only context). No timing thresholds.
set -euo pipefail
mrcctl="$1"
owner="$2"
remote="$3"  # mrc_ctl_* calls from a process that does not own the device
export XDG_RUNTIME_DIR=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/owner_lib.sh"
unset MRC_CTL_SOCKET
export MRC_CTL_DIR="$XDG_RUNTIME_DIR/mrc"  # root would use /run/mrc otherwise
export MRC_DEVICES="mrc0 planes=127.0.1.11,127.0.1.12,127.0.1.13 port=36001 ev-ports=36100 drop=0.05;mrc1 planes=127.0.1.14,127.0.1.15,127.0.1.16 port=36001 ev-ports=36500 busy-poll-us=300"
dir="$MRC_CTL_DIR"
out="$XDG_RUNTIME_DIR/out"
fifo="$XDG_RUNTIME_DIR/stdin"
expect_exit() {  # expect_exit CODE PATTERN -- command...
  local code="$1" pattern="$2"; shift 3
  set +e; "$@" >"$out" 2>&1; local rc=$?; set -e
  [ "$rc" -eq "$code" ] || fail "$* exited $rc, expected $code"
  grep -q -- "$pattern" "$out" || fail "$* did not say '$pattern'"
}
shows() {  # shows PATTERN -- command...: the command succeeds and its output matches
  local pattern="$1"; shift 2
  "$@" >"$out" 2>&1 || fail "$* exited $?"
  grep -Eq -- "$pattern" "$out" || fail "$* did not show '$pattern'"
}
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# Before any owner: a stale socket (its process died) and no socket at all.
mkdir -m 700 "$dir"
python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind('$dir/mrc0.sock')"
expect_exit 3 "stale socket" -- "$mrcctl" port show mrc0
expect_exit 3 "no process serves it (no socket" -- "$mrcctl" port show mrc1
expect_exit 3 "no such device 'mrc9'" -- "$mrcctl" port show mrc9
expect_exit 2 "usage" -- "$mrcctl" port
shows "mrcctl \[-j\|--json\] OBJECT COMMAND" -- "$mrcctl" --help

# The owner: it replaces the stale socket.
start_owner
[ "$(stat -c %a "$dir/mrc0.sock")" = 600 ] || fail "socket mode $(stat -c %a "$dir/mrc0.sock")"
[ "$(stat -c %a "$dir")" = 700 ] || fail "directory mode"

"$mrcctl" dev >"$out"
grep -q "^mrc0  pid $pid" "$out" || fail "dev lists mrc0 served by $pid"
grep -q "^mrc1  pid $pid" "$out" || fail "dev lists mrc1"
[ "$("$mrcctl" --json dev show mrc0 | json 'd[0]["planes"][2]["address"]')" = 127.0.1.13 ] || fail "dev --json"
# busy-poll-us= reaches the opened device: shown for mrc1, absent (0) for mrc0.
grep -q "^  busy polling 300 us after work" "$out" || fail "dev shows mrc1's busy polling"
[ "$(grep -c "busy polling" "$out")" = 1 ] || fail "dev shows busy polling for mrc1 only"
[ "$("$mrcctl" --json dev show mrc1 | json 'd[0]["busy_poll_us"]')" = 300 ] || fail "busy_poll_us 300"
[ "$("$mrcctl" --json dev show mrc0 | json 'd[0]["busy_poll_us"]')" = 0 ] || fail "busy_poll_us 0"

# Ports: admin down and up again.
"$mrcctl" port set mrc0 2 down
shows "port 2  127.0.1.12:36001  admin down" -- "$mrcctl" port show mrc0
[ "$("$mrcctl" -j port show mrc0 | json 'd["planes"][1]["admin"]')" = down ] || fail "port --json"
"$mrcctl" port set mrc0 2 up
shows "port 2  127.0.1.12:36001  admin up" -- "$mrcctl" port show mrc0
expect_exit 1 "no port 9" -- "$mrcctl" port set mrc0 9 down

# Profiles.
shows "^profile 0  online" -- "$mrcctl" ev profile show mrc0
[ "$("$mrcctl" --json ev profile show mrc0 | json 'd["profiles"][0]["id"]')" = 0 ] || fail "ev profile --json"
# CC profile 0: the default every QP has, ONLINE, NSCC with the datapath's parameters.
shows "^profile 0  online   uet-1.0-nscc .*target_delay_ns 50000" -- "$mrcctl" cc show mrc0
[ "$("$mrcctl" --json cc show mrc0 | json 'd["profiles"][0]["id"], len(d["profiles"])')" = "0 1" ] || fail "cc --json"

# EV states, deny and allow one EV (the third EV of the first QP: on port 1... or any).
"$mrcctl" --json ev show mrc0 >"$out"
qpn=$(json 'd["qps"][0]["qpn"]' <"$out")
ev=$(json 'd["qps"][0]["evs"][2]["ev"]' <"$out")
port=$(json 'd["qps"][0]["evs"][2]["port"]' <"$out")
shows "^qp $qpn  profile 0  RTS" -- "$mrcctl" ev show mrc0 qp "$qpn"
"$mrcctl" ev deny mrc0 "$ev" "$port"
shows "ev +$ev port $port  denied" -- "$mrcctl" ev show mrc0
shows "denied $ev/$port" -- "$mrcctl" ev profile show mrc0
"$mrcctl" ev allow mrc0 "$ev" "$port"
shows "ev +$ev port $port  (good|skip|assumed_bad)" -- "$mrcctl" ev show mrc0
expect_exit 1 "no EV profile 42" -- "$mrcctl" ev deny mrc0 "$ev" "$port" profile 42
expect_exit 1 "EINVAL" -- "$mrcctl" ev deny mrc0 1 1  # source port 1 is no EV of mrc0

# EV probes (mrc0 drops 2%: a probe may go unanswered, so ask for several).
"$mrcctl" ev probe mrc0 "$ev" "$port" count 8 timeout 2000 >"$out"
grep -Eq "^8 sent, [1-8] answered" "$out" || fail "probe answered"
grep -q "rtt" "$out" || fail "probe prints an RTT"
[ "$("$mrcctl" -j ev probe mrc0 "$ev" "$port" count 4 | json 'd["sent"]')" = 4 ] || fail "probe --json"
expect_exit 1 "is not an EV of any connected QP" -- "$mrcctl" ev probe mrc0 1 1
# Connectionless: to mrc1's address on plane 2, on an EV (source port) no QP of mrc0 uses.
"$mrcctl" ev probe mrc0 36250 2 to 127.0.1.15 count 8 timeout 2000 >"$out"
grep -Eq "^8 sent, [1-8] answered" "$out" || fail "connectionless probe answered"
expect_exit 1 "not an IPv4 or IPv6 address" -- "$mrcctl" ev probe mrc0 36250 2 to nowhere

# mrc_ctl_* C calls from a third process: a controller-only context on mrc0 (mrc1 is opened
# too, for its GIDs, also controller-only).
"$remote" mrc0 mrc1 36100 >"$out" 2>&1 || fail "mrc_ctl_remote"
grep -q "act on the owner's engine" "$out" || fail "mrc_ctl_remote did not finish"
# Its data path was refused twice (ibv_alloc_pd, mrc_create_cq): the owner is named once.
[ "$(grep -c "^mrc: device mrc0 is owned by process $pid " "$out")" -eq 1 ] || fail "the owner is not named exactly once"
"$mrcctl" ev profile show mrc0 >"$out"
grep -q "profile 21  online   mode explicit  count 2" "$out" || fail "the remote process's profile is the owner's"

# watch sees an EV go ASSUMED_BAD (the owner keeps sending; mrc0 drops packets).
(set +o pipefail; timeout 120 "$mrcctl" watch mrc0 | grep -m1 "assumed_bad" >"$out") || true
grep -Eq "^qp [0-9]+  profile 0  ev [0-9]+ port [0-9]  assumed_bad" "$out" || fail "watch saw no ASSUMED_BAD"
timeout 120 "$mrcctl" --json watch mrc0 count 1 >"$out" || fail "watch --json count 1"
[ "$(json 'd["event"]' <"$out")" = ev ] || fail "watch --json line"

# Malformed requests are answered with errors and the server goes on.
python3 - "$dir/mrc0.sock" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
for bad in ["not json", "[1,2]", '{"op": 7}', '{"op": "port-set", "port": "x", "admin": "up"}', '{"op": "nope"}',
            '{"op": "ev-set", "ev": -1, "port": 1, "state": "denied"}', '{"op": "probe", "ev": 1, "port": 1, "count": 1000}',
            '{"op": "call", "fn": "nope"}', '{"op": "call", "fn": "modify_ev_profile", "attr": "zz"}',
            '{"op": "call", "fn": "query_ev_profile", "attr": "00"}', '{"op": "call", "fn": "ep_batch", "n": 99999}']:
    f.write(bad + "\n"); f.flush()
    r = json.loads(f.readline()); assert r["ok"] is False and r["errno"] > 0, (bad, r)
f.write('{"op": "device"}\n'); f.flush(); assert json.loads(f.readline())["ok"] is True
f.write("x" * (1 << 20 | 1) + "\n"); f.flush(); r = json.loads(f.readline()); assert r["error"] == "E2BIG", r
PY
"$mrcctl" port show mrc0 >/dev/null || fail "server alive after malformed requests"

# The owner ends: its sockets go, and mrcctl says nobody serves the device.
exec 3>&-
wait "$pid" || fail "owner failed: $(cat "$XDG_RUNTIME_DIR/owner.log")"
pid=""
[ ! -e "$dir/mrc0.sock" ] || fail "socket left behind"
expect_exit 3 "no process serves it" -- "$mrcctl" ev show mrc0
echo "mrcctl_test: show, set, deny/allow, probe and watch from another process"
