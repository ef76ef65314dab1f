#!/usr/bin/env bash
# Builds the MRC NCCL plugin (microsoft/mrc-nccl-plugin) from a source tree you give against this
# repository's OCP headers and lib_mrc.so, then drives it with net_harness (NCCL's ncclNet_v8
# calls, host memory, no NCCL or GPU needed) between two processes on two mrc devices under
# `mrc run`, and prints the result. Nothing of the plugin is kept in this repository.
#
#   scripts/check-nccl-plugin.sh [options] PLUGIN_SOURCE_DIR [-- NET_HARNESS_OPTIONS...]
#
#   --build DIR   mrc's build directory (default build/release): src/mrc, lib/lib_mrc.so and
#                 tests/nccl/net_harness must be built there
#   --keep        keep the work directory (the plugin's build, the stand-in nccl.h, devices files)
#   --help
# After `--`: options for net_harness (`net_harness --help`), such as --sizes, --json, --verbose.
# The plugin's own settings (NCCL_IB_*, NCCL_MRC_*) pass through the environment.
#
# The plugin is built with its Makefile, in a copy of the tree, with three differences from a
# vendor stack build (docs/NCCL.md): a stand-in nccl.h with the few NCCL types it takes,
# -Dmrc_attr=mrc_device_attr (its name for OCP's struct), and HAVE_DECL_MLX5DV_REG_DMABUF_MR=0,
# HAVE_DECL_MLX5DV_GET_DATA_DIRECT_SYSFS_PATH=0 (mrc devices have neither). It links
# -libverbs -l:lib_mrc.so. Each harness rank is a process owning one device (rank 0 mrc0, rank 1
# mrc1; a device's data path belongs to one process), each with a devices file naming its device
# and the other's planes as a peer; `mrc run` gives both the sysfs view of both devices.
# Loopback 127.0.6.1-4, UDP ports 59601-59999; the plugin's set-up socket on `lo`
# (NCCL_SOCKET_IFNAME, unless set). The script's own lines go to stderr, the harness's report to
# stdout (with `-- --json`, one JSON object). Exit status: net_harness's (0: every byte verified).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$repo/build/release
keep=0
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --keep) keep=1; shift ;;
    --help|-h) usage; exit 0 ;;
    --) break ;;
    -*) echo "check-nccl-plugin: unknown option $1 (--help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "check-nccl-plugin: give the plugin's source directory (--help)" >&2; exit 2; }
src=$1
shift
[ "${1:-}" = "--" ] && shift
[ -f "$src/Makefile" ] && [ -f "$src/src/net_mrc_plugin.c" ] ||
  { echo "check-nccl-plugin: $src is not a source tree of microsoft/mrc-nccl-plugin (no Makefile and src/net_mrc_plugin.c)" >&2; exit 2; }
mrc=$build/src/mrc
lib=$build/lib
harness=$build/tests/nccl/net_harness
for f in "$mrc" "$lib/lib_mrc.so" "$harness"; do
  [ -e "$f" ] || {
    echo "check-nccl-plugin: $f is missing: build mrc first (cmake --preset release && cmake --build --preset release)" >&2
    exit 2
  }
done
for h in infiniband/verbs.h infiniband/mlx5dv.h; do
  [ -f "/usr/include/$h" ] || { echo "check-nccl-plugin: no /usr/include/$h (apt install libibverbs-dev)" >&2; exit 2; }
done
command -v make > /dev/null && command -v "${CC:-cc}" > /dev/null ||
  { echo "check-nccl-plugin: make and a C compiler are needed (apt install build-essential)" >&2; exit 2; }

work=$(mktemp -d /tmp/check-nccl-plugin.XXXXXX)
if [ "$keep" = 1 ]; then echo "check-nccl-plugin: work directory $work (kept)" >&2; else trap 'rm -rf "$work"' EXIT; fi
cp -r "$src" "$work/plugin"
rm -f "$work"/plugin/src/*.o "$work"/plugin/*.so
version=$(awk '/define MRC_NCCL_PLUGIN_VERSION_(MAJOR|MINOR|PATCH)/ { v = v (v == "" ? "" : ".") $3 }
               END { if (v != "") print "version " v }' "$src/include/version.h" 2> /dev/null)
commit=$(git -C "$src" rev-parse --short HEAD 2> /dev/null) && version="$version${version:+, }commit $commit"

# The stand-in nccl.h: NCCL's result codes (values as NCCL's), and the two enums the plugin's
# collective-network declarations name (never used by the net plugin's calls).
mkdir -p "$work/nccl"
cat > "$work/nccl/nccl.h" <<'EOF'
/* Stand-in for NCCL's nccl.h, written by mrc's scripts/check-nccl-plugin.sh. */
#ifndef NCCL_H_
#define NCCL_H_
typedef enum {
  ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
  ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;
typedef enum { ncclInt8 = 0, ncclNumTypes = 12 } ncclDataType_t;
typedef enum { ncclSum = 0, ncclNumOps = 5 } ncclRedOp_t;
#endif
EOF

echo "check-nccl-plugin: building the plugin ($src${version:+, $version}) against $repo/include/ocp and $lib/lib_mrc.so" >&2
if ! make -C "$work/plugin" -j2 \
  CPPFLAGS="-Iinclude -I$work/nccl -I$repo/include/ocp -Dmrc_attr=mrc_device_attr -DHAVE_DECL_MLX5DV_REG_DMABUF_MR=0 -DHAVE_DECL_MLX5DV_GET_DATA_DIRECT_SYSFS_PATH=0" \
  LDFLAGS="-shared -L$lib -Wl,-rpath,$lib" LDLIBS="-libverbs -l:lib_mrc.so -ldl -lpthread" \
  > "$work/build.log" 2>&1; then
  cat "$work/build.log"
  echo "check-nccl-plugin: FAILED: the plugin did not build (above)"
  exit 1
fi
so=$work/plugin/libnccl-net-mrc.so
[ -f "$so" ] || { cat "$work/build.log"; echo "check-nccl-plugin: FAILED: no $so after make"; exit 1; }

cat > "$work/all.conf" <<'CONF'
mrc0 planes=127.0.6.1,127.0.6.2 port=59601 ev-ports=59700
mrc1 planes=127.0.6.3,127.0.6.4 port=59601 ev-ports=59800
CONF
cat > "$work/rank0.conf" <<'CONF'
mrc0 planes=127.0.6.1,127.0.6.2 port=59601 ev-ports=59700
peer planes=127.0.6.3,127.0.6.4 port=59601
CONF
cat > "$work/rank1.conf" <<'CONF'
mrc1 planes=127.0.6.3,127.0.6.4 port=59601 ev-ports=59800
peer planes=127.0.6.1,127.0.6.2 port=59601
CONF
chmod 755 "$work"
chmod 644 "$work"/*.conf
echo "check-nccl-plugin: net_harness over $so under mrc run (rank 0 on mrc0, rank 1 on mrc1)" >&2
MRC_CTL_SOCKET=off NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
  "$mrc" run --devices "$work/all.conf" -- "$harness" "$so" --dev0 0 --dev1 0 \
  --env0 "MRC_CONFIG=$work/rank0.conf" --env1 "MRC_CONFIG=$work/rank1.conf" "$@"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "check-nccl-plugin: PASSED: the MRC NCCL plugin${version:+ ($version)} moved and verified every message over lib_mrc.so" >&2
else
  echo "check-nccl-plugin: FAILED (net_harness exit status $rc; its lines above say where)" >&2
fi
exit "$rc"
