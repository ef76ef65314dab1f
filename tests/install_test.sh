#!/usr/bin/env bash
# What `cmake --install` puts in a prefix works for a program outside the tree:
# - OCP's API: every OCP header compiles on its own in C and in C++; a C program builds with
#   `pkg-config mrc-ocp`, links lib_mrc.so and runs (it asks the library for its API version);
# - the native C++ API: its example (examples/native_write.cc, docs/NATIVE-API.md) builds with
#   `pkg-config mrc` against include/mrc and libmrc.so, and moves 1 MiB between two contexts
#   over loopback, verified;
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
cp "$(dirname "$0")/../examples/native_write.cc" "$prefix/native.cc"  # docs/NATIVE-API.md
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
