// `mrc run [--devices FILE] [--lib PATH] [--no-sysfs] -- CMD [ARGS...]`: runs a program as if
// mrc's software devices were RDMA devices of the kernel. The program gets
//   - lib_mrc.so preloaded (LD_PRELOAD), so its plain verbs calls see mrc0, mrc1, ...;
//   - the device configuration (--devices FILE: MRC_CONFIG, with MRC_DEVICES unset; else the
//     environment's MRC_DEVICES / MRC_CONFIG / /etc/mrc/devices.conf, as lib_mrc.so reads it);
//   - the sysfs view a kernel RDMA device has, in a private mount namespace (as root, or in a
//     user namespace of the caller's uid otherwise): /sys/class/infiniband/<dev>/ with
//     node_type, device (a link to .bus/e000:<index>:00.0, a directory named like a PCI
//     function: what consumers realpath() as the device's bus path),
//     ports/<p>/link_layer ("Ethernet"), ports/<p>/gid_attrs/types/<i> ("IB/RoCE v1" at even
//     indices, "RoCE v2" at odd), gid_attrs/ndevs/<i> ("lo") and gids/<i> (the GIDs
//     ibv_query_gid gives). Entries of real devices stay.
// Without root or user namespaces the sysfs view cannot be made: mrc run says so and stops,
// unless --no-sysfs (preload and configuration only).
// Exit status: the program's (mrc run execs it); 1 when it cannot be set up, 2 usage, 127 when
// the program cannot be run.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace mrc::tools {

struct RunOptions {
  std::string devices;  // --devices FILE
  std::string lib;      // --lib PATH (default: lib_mrc.so beside this mrc)
  bool no_sysfs = false;
  std::vector<std::string> command;
};

void add_run_options(CLI::App& app, RunOptions& options);
int run_run(const RunOptions& options);

}  // namespace mrc::tools
