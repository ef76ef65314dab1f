// Who holds a local UDP port, for the message of a bind that found it in use: the socket bound
// to the address (or to the wildcard address) and port is looked up in /proc/net/udp, and the
// process holding it among /proc/<pid>/fd. Only processes whose descriptors this one may read
// (the same user, or any as root) are found; the answer is a description for people, never a
// basis for a decision.
#pragma once

#include <sys/types.h>

#include <string>

#include "io/socket_address.h"

namespace mrc::io {

// "process 1234 (mrc_bw)": the pid and /proc/<pid>/comm, "process 1234" without it, "this
// process" for our own pid.
std::string describe_process(pid_t pid);

// The pid of the process holding a UDP socket bound to `a` (or to 0.0.0.0 on its port), 0 if
// none is found.
pid_t udp_port_holder(const PlaneAddress& a);

}  // namespace mrc::io
