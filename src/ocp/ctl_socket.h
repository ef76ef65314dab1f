// The control socket of an mrc device: where it lives and the limits of its protocol. Shared by
// lib_mrc.so (which serves it, ctl_server.h) and mrcctl (which talks to it).
//
// A process that opens a device serves it on a unix stream socket <dir>/<device>.sock, <dir>
// being, first found: $MRC_CTL_DIR; /run/mrc when running as root; $XDG_RUNTIME_DIR/mrc;
// /tmp/mrc-<uid>. The directory is created 0700 and must belong to the user; the socket is
// 0600, and the server also refuses peers of another uid (root excepted). The protocol is JSON
// lines: one request object per line ({"op": ...}), one response object per line
// ({"ok": true, ...} or {"ok": false, "errno": N, "error": "EINVAL", "message": ...}); after
// {"op": "watch"} the server sends one line per EV state change until the client leaves.
#pragma once

#include <cstddef>
#include <string>

namespace mrc::ocp {

inline constexpr size_t kCtlRequestMax = 1 << 20;   // bytes in one request line
inline constexpr size_t kCtlResponseMax = 4 << 20;  // bytes in one response line
inline constexpr int kCtlMaxClients = 8;            // connections served at once

std::string ctl_socket_dir();
std::string ctl_socket_path(const std::string& device);
// Creates `dir` (0700) if missing and checks it is ours and closed to others: "" or the problem.
std::string ctl_prepare_dir(const std::string& dir);
// A connected socket, or -1 with errno: ENOENT (no socket: nobody serves the device),
// ECONNREFUSED (a stale socket), EACCES (permission), ENAMETOOLONG.
int ctl_connect(const std::string& path);

}  // namespace mrc::ocp
