#!/usr/bin/env bash
# Secure mode on the OCP device (secure= and key-file= in MRC_DEVICES; keys agreed in-band at
# RTR, secure/inband_keys.h): data arrives intact in both modes, in one process and across two; a
# key or a mode that differs fails both ends within the agreement's timeout, each naming the
# other; a configuration without a usable key file is refused at open, naming what to fix.
# With mrcctl, also what `mrcctl dev` shows of a device whose agreement is failing.
#   secure_process_test.sh <mrc_bw> <mrc_integrity> [<mrcctl>]
set -euo pipefail
bw="$1"
integrity="$2"
mrcctl="${3:-}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"; kill $(jobs -p) 2>/dev/null || true' EXIT
key() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1"; chmod 600 "$1"; }
key "$dir/k1"
key "$dir/k2"
d0="mrc0 planes=127.0.0.75,127.0.0.76 port=33201 ev-ports=33300"
d1="mrc1 planes=127.0.0.77,127.0.0.78 port=33201 ev-ports=33700"
fail() { echo "secure_process_test: $*"; for f in "$dir"/*.out; do echo "== $f"; cat "$f"; done; exit 1; }

# 1. One process, two devices, encrypted: every byte verified in place, immediates in order.
MRC_DEVICES="$d0 secure=encrypt key-file=$dir/k1;$d1 secure=encrypt key-file=$dir/k1" \
  timeout 60 "$integrity" mrc0 mrc1 500 >"$dir/integrity.out" 2>&1 || fail "encrypted integrity run failed"

# 2. Two processes, authenticated: a bandwidth sweep completes.
s=" secure=auth key-file=$dir/k1"
MRC_DEVICES="$d0$s;$d1$s" timeout 60 "$bw" -d mrc0 -p 40021 >"$dir/auth-server.out" 2>&1 &
server=$!
MRC_DEVICES="$d0$s;$d1$s" timeout 60 "$bw" -d mrc1 -p 40021 -m 1 -s 65536 -n 50 127.0.0.1 \
  >"$dir/auth-client.out" 2>&1 || fail "authenticated client failed"
wait $server || fail "authenticated server failed"
grep -q "mrc_bw: done" "$dir/auth-client.out" || fail "authenticated sweep did not finish"

# 3. Mismatches, run side by side (each fails within the 10 s agreement timeout):
#    different key files; a secure client and a plain server.
run_pair() {  # <name> <port> <server devices> <client devices>
  mkdir -p "$dir/ctl-$1"
  MRC_CTL_DIR="$dir/ctl-$1" MRC_DEVICES="$3" timeout 60 "$bw" -d mrc0 -p "$2" >"$dir/$1-server.out" 2>&1 &
  MRC_DEVICES="$4" timeout 60 "$bw" -d mrc1 -p "$2" -m 1 -s 4096 -n 10 127.0.0.1 \
    >"$dir/$1-client.out" 2>&1 &
}
# (A process only opens its own device; the other entry tells it the peer's planes.)
e0="mrc0 planes=127.0.0.79,127.0.0.80 port=33401 ev-ports=33500"
e1="mrc1 planes=127.0.0.81,127.0.0.82 port=33401 ev-ports=33900"
run_pair keys 40022 "$d0 secure=encrypt key-file=$dir/k1;$d1" "$d0;$d1 secure=encrypt key-file=$dir/k2"
run_pair modes 40023 "$e0;$e1" "$e0;$e1 secure=auth key-file=$dir/k1"
if [ -n "$mrcctl" ]; then  # the server of the key mismatch, while its QP waits for keys
  sleep 2
  MRC_CTL_DIR="$dir/ctl-keys" MRC_DEVICES="$d0 secure=encrypt key-file=$dir/k1;$d1" \
    "$mrcctl" --json dev show mrc0 >"$dir/dev.out" 2>&1 || fail "mrcctl dev show mrc0"
  /usr/bin/python3 - "$dir/dev.out" <<'PY' || fail "mrcctl dev does not show the waiting agreement"
import json, sys
d = json.load(open(sys.argv[1]))[0]
k = d["key_offers"]
ok = d["secure"] == "encrypt" and d["qps_awaiting_keys"] == 1 and k["sent"] > 0 and k["refused"] > 0
sys.exit(0 if ok else f"mrcctl dev: {d}")
PY
fi
for job in $(jobs -p); do
  if wait "$job"; then fail "a mismatched pair completed"; fi
done
grep -q "pre-shared keys differ.*the peer at 127.0.0.77" "$dir/keys-server.out" ||
  fail "the server does not name the key mismatch and its peer"
grep -q "pre-shared keys differ.*the peer at 127.0.0.75" "$dir/keys-client.out" ||
  fail "the client does not name the key mismatch and its peer"
# (The plain end names the address its first KEY OFFER came from: the client offers on both of
# its planes, so either may arrive first.)
grep -q "the peer at 127.0.0.8[12] (queue pair [0-9]*) is in secure mode auth, this end is not" \
  "$dir/modes-server.out" || fail "the plain server does not name the secure peer"
grep -q "no key offer from the peer at 127.0.0.79 .*secure mode auth" "$dir/modes-client.out" ||
  fail "the secure client does not say the peer never offered keys"

# 4. Configuration errors, at open.
expect_refused() {  # <devices> <text>
  if MRC_DEVICES="$1" "$integrity" mrc0 mrc1 1 >"$dir/config.out" 2>&1; then
    fail "'$1' was accepted"
  fi
  grep -q -- "$2" "$dir/config.out" || fail "'$1': no '$2' in the error"
}
expect_refused "$d0 secure=encrypt;$d1" "secure=encrypt needs key-file=PATH"
expect_refused "$d0 secure=aes key-file=$dir/k1;$d1" "secure=aes is not off, auth or encrypt"
expect_refused "$d0 secure=auth key-file=$dir/none;$d1" "key-file=$dir/none"
chmod 644 "$dir/k2"
expect_refused "$d0 secure=auth key-file=$dir/k2;$d1 secure=auth key-file=$dir/k2" "chmod 600"
echo "secure_process_test: both modes carried data; key, mode and configuration errors named"
