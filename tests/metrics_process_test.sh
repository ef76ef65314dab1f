#!/usr/bin/env bash
# `mrc perf --metrics-port` as a user runs it: a server and a client over 4 loopback planes, the
# client's /metrics scraped during the run (twice: the counters must grow), the server's too, a
# 404 elsewhere, and a clear error when the port is taken. Usage: metrics_process_test.sh PATH_TO_MRC
set -u
MRC=$1
fail() { echo "FAIL: $*"; exit 1; }
oob=$((20100 + RANDOM % 900))
mport=$((21000 + RANDOM % 900))
sport=$((mport + 1))

get() {  # PORT PATH: the HTTP response (bash's /dev/tcp, so no curl needed)
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  cat <&3
  exec 3<&-
}
value() {  # TEXT SERIES: the sample's value, or nothing. "qpn=*" matches any QPN (they are random).
  echo "$1" | awk -v s="$2" '{ n = $1; sub(/qpn="[0-9]+"/, "qpn=*", n) } n == s { print $2; exit }'
}

"$MRC" perf --server --oob-port $oob --port 4881 --ev-port-base 55000 --metrics-port $sport > /tmp/mrc-metrics-srv.$$ 2>&1 &
srv=$!
sleep 0.3
"$MRC" perf --client 127.0.0.1 --oob-port $oob --port 4882 --ev-port-base 55500 --duration 3 --metrics-port $mport \
  > /tmp/mrc-metrics-cli.$$ 2>&1 &
cli=$!
cleanup() { kill $cli $srv 2>/dev/null; rm -f /tmp/mrc-metrics-srv.$$ /tmp/mrc-metrics-cli.$$; }
trap cleanup EXIT

series='mrc_qp_data_sent_bytes_total{role="client",qpn=*}'
first=""
for _ in $(seq 1 30); do  # until the transfer has started (at most 3 s)
  sleep 0.1
  m1=$(get $mport /metrics 2>/dev/null) || continue
  first=$(value "$m1" "$series")
  [ -n "$first" ] && [ "$first" != 0 ] && break
done
[ -n "$first" ] && [ "$first" != 0 ] || fail "no data bytes in the client's metrics: $(echo "$m1" | head -5)"
echo "$m1" | grep -q '^HTTP/1.1 200' || fail "status: $(echo "$m1" | head -1)"
echo "$m1" | grep -q '^Content-Type: text/plain; version=0.0.4' || fail "content type"
for family in mrc_plane_udp_sent_bytes_total mrc_qp_cwnd_bytes mrc_qp_rtt_smoothed_seconds mrc_ev_data_packets_sent_total mrc_qp_nacks_received_total; do
  echo "$m1" | grep -q "^# TYPE $family " || fail "family $family missing"
done
sleep 0.6
m2=$(get $mport /metrics) || fail "second scrape"
second=$(value "$m2" "$series")
awk -v a="$first" -v b="$second" 'BEGIN { exit !(b > a) }' || fail "counter did not grow: $first then $second"
s=$(get $sport /metrics) || fail "server scrape"
placed=$(value "$s" 'mrc_qp_placed_bytes_total{role="server",qpn=*}')
[ -n "$placed" ] && [ "$placed" != 0 ] || fail "server placed no bytes: $(echo "$s" | grep placed)"
get $mport / | grep -q '^HTTP/1.1 404' || fail "/ is not 404"
out=$("$MRC" perf --client 127.0.0.1 --metrics-port $mport --port 4883 --ev-port-base 56000 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "127.0.0.1:$mport: Address already in use" || fail "port in use: rc=$rc $out"
wait $cli || { cat /tmp/mrc-metrics-cli.$$; fail "client exit status"; }
wait $srv || { cat /tmp/mrc-metrics-srv.$$; fail "server exit status"; }
echo "client data bytes $first then $second; server placed $placed"
echo "all metrics process tests passed"
