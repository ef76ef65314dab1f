#!/usr/bin/env bash
# Builds MPICH with device ch4:ofi against Debian's libfabric, from Debian 12's own MPICH source
# package, so that MPICH programs can run over the mrc libfabric provider (FI_PROVIDER=mrc).
# Debian's packaged MPICH is built for ch4:ucx and cannot load a libfabric provider at all.
#
#   sudo scripts/build-mpich-ofi.sh [PREFIX]      # default /opt/mpich-ofi; about 7 min on 2 cores
#
# Then `ctest -R Fabric.MpichSuite` runs tests/fabric/mpi_suite.c under it (MRC_MPICH_PREFIX
# names another PREFIX), and docs/LIBFABRIC.md shows how to run programs.
set -euo pipefail
prefix=${1:-/opt/mpich-ofi}
work=${MRC_MPICH_WORK:-/var/tmp/mpich-ofi-build}
[ "$(id -u)" -eq 0 ] || { echo "build-mpich-ofi: run as root (apt and $prefix)"; exit 2; }
if [ -x "$prefix/bin/mpichversion" ] && "$prefix/bin/mpichversion" | grep -q "ch4:ofi"; then
  echo "build-mpich-ofi: $prefix already holds an MPICH of device ch4:ofi"
  exit 0
fi

# Debian's source of the MPICH it ships (the deb-src line is added for bookworm if missing).
if ! apt-get source --help > /dev/null 2>&1 || ! apt-cache showsrc mpich > /dev/null 2>&1; then
  cat > /etc/apt/sources.list.d/mrc-debsrc.sources << 'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential libfabric-dev \
  libhwloc-dev pkg-config > /dev/null
mkdir -p "$work"
cd "$work"
ls mpich_*.orig.tar.* > /dev/null 2>&1 || apt-get source -qq --download-only mpich
src=$(ls -d mpich-*/ 2> /dev/null | head -1 || true)
if [ -z "$src" ]; then
  tar xf mpich_*.orig.tar.*
  src=$(ls -d mpich-*/ | head -1)
fi

# Debian's libfabric.pc lists the static library's dependencies (psm, psm2, rdmacm, ibverbs,
# efa), which MPICH's configure adds to every link though libfabric.so needs none of them and
# Debian installs none: a copy without them goes first on the pkg-config path.
mkdir -p pc
sed 's/^Libs.private:.*/Libs.private:/' /usr/lib/x86_64-linux-gnu/pkgconfig/libfabric.pc > pc/libfabric.pc
export PKG_CONFIG_PATH=$work/pc
cd "$src"
echo "build-mpich-ofi: configuring $src (ch4:ofi, C only) for $prefix"
./configure --prefix="$prefix" --with-device=ch4:ofi --with-libfabric=/usr --disable-fortran \
  --disable-cxx --with-datatype-engine=dataloop --enable-fast=O2 --with-pm=hydra --disable-doc \
  > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
if grep -q -- "-lpsm2" Makefile; then  # pkg-config was not asked after all: drop them here
  sed -i 's/ -lpsm_infinipath -lpsm2 -lrdmacm -libverbs -lefa//g' Makefile src/env/mpicc* \
    src/packaging/pkgconfig/mpich.pc
fi
echo "build-mpich-ofi: building (log: $work/make.log)"
make -j"$(nproc)" > "$work/make.log" 2>&1 || { tail -20 "$work/make.log"; exit 1; }
make install > "$work/install.log" 2>&1 || { tail -20 "$work/install.log"; exit 1; }
"$prefix/bin/mpichversion" | head -3
echo "build-mpich-ofi: done; run programs with FI_PROVIDER=mrc FI_PROVIDER_PATH=<libmrc-fi.so's directory> $prefix/bin/mpiexec ..."
