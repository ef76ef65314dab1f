#!/usr/bin/env bash
# The sans-IO rule, checked on the built engine: libmrc_core.a (src/core and the util/ pieces
# built into it) may call no clock, no socket or file I/O, no thread creation, no sleep and no
# unseeded randomness. Its external symbols (used but not defined in the archive) are listed
# with nm (which reads LTO objects through the compiler's plugin) and matched against those
# calls. So that this test cannot pass by finding nothing, the same check must find the socket
# and clock calls of the datapath library, libmrc_io.a. Further libraries given after it (the wire
# formats, libmrc_wire.a) are held to the engine's rule too.
#   sans_io_test.sh NM CORE_LIB IO_LIB [NO_IO_LIB...]
set -euo pipefail
NM=$1 CORE=$2 IO=$3
shift 3
forbidden='^(clock_gettime|clock_getres|gettimeofday|time|clock|socket|socketpair|bind|connect|listen|accept4?|send|sendto|sendmsg|sendmmsg|recv|recvfrom|recvmsg|recvmmsg|read|write|open|open64|openat|close|ioctl|fcntl|poll|ppoll|select|epoll_.*|io_uring_.*|rand|srand|random|srandom|rand_r|drand48|lrand48|getrandom|getentropy|arc4random|pthread_create|fork|usleep|nanosleep|sleep|sched_yield)$|std::chrono::_V2::(steady|system|high_resolution)_clock::now|std::random_device|std::thread::|std::this_thread::'

externals() {  # the symbols LIB uses but does not define, demangled
  local defined used
  defined=$("$NM" --defined-only "$1" 2>/dev/null | awk 'NF >= 3 { print $NF }' | sort -u)
  used=$("$NM" --undefined-only "$1" 2>/dev/null | awk '{ print $NF }' | sort -u)
  comm -23 <(echo "$used") <(echo "$defined") | c++filt
}

io_hits=$(externals "$IO" | grep -E "$forbidden" || true)
for must in socket clock_gettime; do
  if ! grep -qx "$must" <<<"$io_hits"; then
    echo "sans_io_test: the check did not find '$must' in $IO, where the datapath calls it: nm ($NM) reads nothing useful" >&2
    exit 1
  fi
done
for lib in "$CORE" "$@"; do
  hits=$(externals "$lib" | grep -E "$forbidden" || true)
  if [ -n "$hits" ]; then
    echo "sans_io_test: $lib calls what only src/io may call:" >&2
    echo "$hits" | sed 's/^/  /' >&2
    exit 1
  fi
  echo "sans_io_test: $lib calls no clock, socket, file I/O, thread or unseeded randomness ($(externals "$lib" | wc -l) external symbols checked)"
done
