#!/usr/bin/env bash
# What `cmake --install` puts in a prefix works for a program outside the tree:
# - OCP's API: every OCP header compiles on its own in C and in C++; a C program builds with
#   `pkg-config mrc-ocp`, links lib_mrc.so and runs (it asks the library for its API version);
# - the native C++ API: a program builds with `pkg-config mrc` against include/mrc and
#   libmrc.so, and moves 1 MiB between two contexts over loopback, verified;
# - a CMake project builds both against the installed package (find_package(mrc), targets
#   mrc::ocp and mrc::mrc) and runs them.
# Usage: install_test.sh BUILD_DIR
set -u
BUILD=$1
fail() { echo "FAIL: $*"; exit 1; }
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$BUILD" --prefix "$prefix" > "$prefix/install.log" 2>&1 || { cat "$prefix/install.log"; fail "cmake --install"; }
libdir=$(dirname "$(find "$prefix" -name lib_mrc.so | head -1)")
[ -f "$libdir/lib_mrc.so" ] || fail "no lib_mrc.so installed"
[ -f "$libdir/libmrc.so" ] || fail "no libmrc.so installed"
[ -f "$prefix/include/mrc/mrc.hpp" ] || fail "no include/mrc/mrc.hpp installed"
for tool in mrc mrcctl; do [ -x "$prefix/bin/$tool" ] || fail "no $tool installed in bin"; done
[ -f "$prefix/share/mrc/wireshark/mrc.lua" ] || fail "no dissector installed"
inc=$prefix/include/mrc-ocp
for h in mrc.h mrc_ctl.h mrc_api_ver.h mrc_ctl_api_ver.h; do
  echo "#include <$h>" | cc -x c -std=c11 -Wall -Werror -fsyntax-only -I"$inc" - || fail "$h alone in C"
  echo "#include <$h>" | c++ -x c++ -std=c++17 -Wall -Werror -fsyntax-only -I"$inc" - || fail "$h alone in C++"
done
cat > "$prefix/version.c" <<'C'
#include <mrc.h>
#include <stdio.h>
int main(void) {
  uint32_t current = 0, oldest = 0;
  mrc_query_version(&current, &oldest, NULL, NULL);
  printf("mrc API version %u (oldest supported %u)\n", current, oldest);
  return current == 0;
}
C
cat > "$prefix/native.cc" <<'CC'
// Two contexts on two loopback planes; a 1 MiB write with immediate from one to the other.
#include <mrc/mrc.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
std::unique_ptr<mrc::Context> open_context(uint16_t& port) {
  for (;; port += 7) {  // another program may hold a port: take the next
    mrc::ContextOptions o{.planes = {"127.0.0.1", "127.0.0.2"}};
    o.port = port;
    o.ev_port_base = static_cast<uint16_t>(port + 1);
    auto ctx = mrc::Context::open(o);
    if (ctx.ok()) return std::move(ctx.value());
    std::fprintf(stderr, "port %u: %s: %s\n", port, mrc::to_string(ctx.error().code), ctx.error().message.c_str());
    if (ctx.error().code != mrc::Errc::kAddressInUse || port > 60000) return nullptr;
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (mrc::Context::open({}).error().code != mrc::Errc::kInvalidArgument) return 1;
  uint16_t port = static_cast<uint16_t>(argc > 1 ? std::atoi(argv[1]) : 40000);
  auto a = open_context(port);
  port = static_cast<uint16_t>(port + 1 + mrc::ev_source_ports(2));
  auto b = open_context(port);
  if (!a || !b) return 1;
  std::vector<uint8_t> src(1 << 20), dst(1 << 20, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  const uint32_t pa = a->alloc_pd(), pb = b->alloc_pd();
  const auto smr = a->register_memory(pa, src.data(), src.size(), mrc::kAccessLocalWrite).value();
  const auto dmr = b->register_memory(pb, dst.data(), dst.size(), mrc::kAccessRemoteWrite).value();
  mrc::Cq* ca = a->create_cq(16);
  mrc::Cq* cb = b->create_cq(16);
  mrc::Qp* qa = a->create_qp(pa, ca, ca).value();
  mrc::Qp* qb = b->create_qp(pb, cb, cb).value();
  if (!qa->connect(mrc::ConnectionInfo::parse(qb->local_info().to_string()).value()).ok() ||
      !qb->connect(qa->local_info()).ok() || !qb->post_recv(1).ok())
    return 1;
  const mrc::Sge sge{smr.address, static_cast<uint32_t>(src.size()), smr.lkey};
  if (!qa->post_write_imm(2, std::span(&sge, 1), dmr.address, dmr.rkey, 42).ok()) return 1;
  mrc::Completion wc[2];
  size_t got = 0;
  for (int i = 0; i < 600 && got == 0; ++i) got = cb->wait(wc, 50);  // up to 30 s
  if (got != 1 || wc[0].status != mrc::WcStatus::kSuccess || wc[0].immediate != 42) {
    std::fprintf(stderr, "no completion for the write (%zu)\n", got);
    return 1;
  }
  if (std::memcmp(src.data(), dst.data(), src.size()) != 0) return 1;
  std::printf("native API: 1 MiB written over %d planes, verified (%s)\n", a->planes(),
              mrc::to_string(wc[0].status));
  return 0;
}
CC
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
cc "$prefix/version.c" -o "$prefix/version" $(pkg-config --cflags --libs mrc-ocp) || fail "build with pkg-config mrc-ocp"
LD_LIBRARY_PATH=$libdir "$prefix/version" || fail "the pkg-config program did not run"
# shellcheck disable=SC2046
c++ "$prefix/native.cc" -o "$prefix/native" -Wall -Werror $(pkg-config --cflags --libs mrc) || fail "build with pkg-config mrc"
port=$((41000 + RANDOM % 8000))
LD_LIBRARY_PATH=$libdir "$prefix/native" $port || fail "the native pkg-config program did not run"
mkdir -p "$prefix/consumer"
cat > "$prefix/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C CXX)
find_package(mrc 0.1 REQUIRED CONFIG)
add_executable(version ../version.c)
target_link_libraries(version PRIVATE mrc::ocp)
add_executable(native ../native.cc)
target_link_libraries(native PRIVATE mrc::mrc)
CM
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" > "$prefix/cmake.log" 2>&1 &&
  cmake --build "$prefix/consumer/build" >> "$prefix/cmake.log" 2>&1 || { tail -20 "$prefix/cmake.log"; fail "CMake consumer of find_package(mrc)"; }
LD_LIBRARY_PATH=$libdir "$prefix/consumer/build/version" || fail "the CMake consumer did not run"
port=$((41000 + RANDOM % 8000))
"$prefix/consumer/build/native" $port || fail "the native CMake consumer did not run"
echo "ok: installed headers, pkg-config and CMake package work outside the tree"
