// errno and mrc::Errc, both ways, in one table: the datapath and the stores turn a failed
// system call's errno into an Errc (system_error), and the OCP boundary turns an Error's code
// back into the errno its C API reports (to_errno). Nothing else in mrc reports errno.
#pragma once

#include <string>

#include "mrc/error.hpp"

namespace mrc {

// The code for a system call's errno value (EADDRINUSE -> kAddressInUse, EPERM ->
// kPermission, ...; kIo for values with no closer code).
Errc errc_of_errno(int errno_value);

// An Error for a failed system call: "<what>: <strerror>", coded by errc_of_errno.
Error system_error(const std::string& what, int errno_value);

// The errno value the OCP API reports for `code`.
int to_errno(Errc code);

}  // namespace mrc
