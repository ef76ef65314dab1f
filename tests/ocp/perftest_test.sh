#!/usr/bin/env bash
# perftest over mrc devices, unchanged, under `mrc run`: ib_write_bw (WRITEs, unsignalled but
# for every CQ-moderation's) and ib_write_lat (signalled WRITEs, the peer spinning on its
# buffer) between two
# processes on mrc0 and mrc1, each must finish and print its results; ib_read_bw, whose READs
# MRC does not have, must be refused with a message naming what MRC moves. Skipped (exit 77)
# where perftest is not installed (apt install perftest) or `mrc run` cannot give a program the
# mrc devices' sysfs view (neither root nor user namespaces).
# Loopback 127.0.4.1-4, UDP ports 41001-41800, TCP ports 40031 and 41901 (metrics).
#   perftest_test.sh <mrc>
set -uo pipefail
mrc="$1"
if ! command -v ib_write_bw > /dev/null || ! command -v ib_write_lat > /dev/null; then
  echo "perftest_test: SKIP: ib_write_bw/ib_write_lat not found (apt install perftest)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset MRC_DEVICES MRC_CONFIG
export MRC_CTL_SOCKET=off
cat > "$dir/devices.conf" <<'CONF'
mrc0 planes=127.0.4.1,127.0.4.2 port=41001 ev-ports=41100
mrc1 planes=127.0.4.3,127.0.4.4 port=41001 ev-ports=41500
CONF
chmod 644 "$dir/devices.conf"
if ! "$mrc" run --devices "$dir/devices.conf" -- true 2> "$dir/err"; then
  echo "perftest_test: SKIP: mrc run cannot run here: $(cat "$dir/err")"
  exit 77
fi

# pair NAME TOOL ARGS...: the server on mrc0 and the client on mrc1; both must succeed.
pair() {
  local name=$1 tool=$2
  shift 2
  timeout 60 "$mrc" run --devices "$dir/devices.conf" -- "$tool" -d mrc0 -p 40031 -F "$@" \
    > "$dir/$name.server" 2>&1 &
  local server=$!
  sleep 1
  timeout 60 "$mrc" run --devices "$dir/devices.conf" -- "$tool" -d mrc1 -p 40031 -F "$@" \
    127.0.0.1 > "$dir/$name.client" 2>&1
  local rc=$?
  wait "$server"
  local src=$?
  [ "$rc" -eq 0 ] && [ "$src" -eq 0 ] ||
    { cat "$dir/$name.server" "$dir/$name.client"; fail "$name: client $rc, server $src"; }
}

pair write_bw ib_write_bw -s 65536 -n 200
grep -Eq "^ +65536 +200 +[0-9.]+ +[0-9.]+" "$dir/write_bw.client" ||
  { cat "$dir/write_bw.client"; fail "ib_write_bw printed no result line"; }
pair write_lat ib_write_lat -s 64 -n 200
grep -Eq "^ +64 +200 +[0-9.]+" "$dir/write_lat.client" ||
  { cat "$dir/write_lat.client"; fail "ib_write_lat printed no result line"; }

# RDMA READ: refused at the first post, and said so.
timeout 30 "$mrc" run --devices "$dir/devices.conf" -- ib_read_bw -d mrc0 -p 40031 -F -n 10 \
  > "$dir/read.server" 2>&1 &
server=$!
sleep 1
timeout 30 "$mrc" run --devices "$dir/devices.conf" -- ib_read_bw -d mrc1 -p 40031 -F -n 10 \
  127.0.0.1 > "$dir/read.client" 2>&1 && fail "ib_read_bw succeeded over mrc"
wait "$server"
grep -q "RDMA READ is not supported on mrc devices (MRC moves RDMA WRITE" "$dir/read.client" ||
  { cat "$dir/read.client"; fail "ib_read_bw was not told why"; }
# metrics-port= (a host setting every front door shares): the device serves its Prometheus
# metrics while a program has it open, each series labelled with the device.
sed 's/^mrc0 .*/& metrics-port=41901/' "$dir/devices.conf" > "$dir/metrics.conf"
timeout 60 "$mrc" run --devices "$dir/metrics.conf" -- ib_write_bw -d mrc0 -p 40031 -F -n 200 \
  > "$dir/metrics.server" 2>&1 &
server=$!
scrape=""
for _ in $(seq 50); do
  sleep 0.2
  scrape=$(exec 3<>/dev/tcp/127.0.0.1/41901 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3) 2> /dev/null
  [ -n "$scrape" ] && break
done
timeout 60 "$mrc" run --devices "$dir/metrics.conf" -- ib_write_bw -d mrc1 -p 40031 -F -n 200 \
  127.0.0.1 > "$dir/metrics.client" 2>&1 || { cat "$dir/metrics.client"; fail "ib_write_bw with metrics"; }
wait "$server" || { cat "$dir/metrics.server"; fail "ib_write_bw's server with metrics"; }
grep -q 'mrc_plane_up{device="mrc0",plane="1"} 1' <<< "$scrape" ||
  { echo "$scrape" | head -20; fail "no metrics of mrc0 at metrics-port=41901"; }
grep -q "mrc: device mrc0: Prometheus metrics at http://127.0.0.1:41901/metrics" "$dir/metrics.server" ||
  { cat "$dir/metrics.server"; fail "the device did not say where its metrics are"; }

echo "perftest_test: ib_write_bw and ib_write_lat ran over mrc; ib_read_bw was refused; mrc0 served its metrics"
