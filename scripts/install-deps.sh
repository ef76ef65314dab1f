#!/usr/bin/env bash
# Installs everything mrc needs to build and test on Debian 12, from Debian's archive only.
set -euo pipefail
packages=(build-essential cmake ninja-build ccache pkg-config
          libgtest-dev libgmock-dev libbenchmark-dev
          libtomlplusplus-dev nlohmann-json3-dev libcli11-dev
          libibverbs-dev                                             # libibverbs-dev: lib_mrc.so (OCP API)
          perftest                                                   # ib_write_bw, ib_write_lat over mrc (Ocp.PerftestOverMrc)
          iproute2 nftables iptables ethtool libnetfilter-queue-dev  # namespace testbed
          libxdp-dev libbpf-dev python3-scapy                        # AF_XDP backend; RoCEv2 ICRC check
          libssl-dev openssl                                         # secure mode: AES-GCM, HKDF; key files
          tshark                                                     # the Wireshark dissector's test
          libfabric-dev libfabric-bin                                # libfabric provider (libmrc-fi.so), fi_info, fi_pingpong
          openmpi-bin libopenmpi-dev python3-mpi4py                  # MPI over the provider (tests/fabric)
          python3-torch libtorch-dev pybind11-dev python3-pytest)    # torch backend (python/)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "mrc: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
