// errno and mrc::Errc both ways (see errno_map.h).
#include "util/errno_map.h"

#include <cerrno>
#include <cstring>

namespace mrc {

Errc errc_of_errno(int errno_value) {
  switch (errno_value) {
    case EINVAL:
    case ERANGE:
    case ENAMETOOLONG:
      return Errc::kInvalidArgument;
    case EADDRINUSE:
      return Errc::kAddressInUse;
    case ENOENT:
    case ENODEV:
    case ENXIO:
    case EADDRNOTAVAIL:
    case ESRCH:
      return Errc::kNotFound;
    case EPERM:
    case EACCES:
      return Errc::kPermission;
    case EOPNOTSUPP:
    case ENOSYS:
    case EAFNOSUPPORT:
    case EPROTONOSUPPORT:
      return Errc::kUnsupported;
    case ENOMEM:
    case ENOBUFS:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
      return Errc::kResourceExhausted;
    case ETIMEDOUT:
      return Errc::kTimedOut;
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH:
      return Errc::kPeerFailed;
    case EBUSY:
    case EEXIST:
      return Errc::kInvalidState;
    default:
      return Errc::kIo;
  }
}

Error system_error(const std::string& what, int errno_value) {
  return Error{errc_of_errno(errno_value), what + ": " + std::strerror(errno_value)};
}

int to_errno(Errc code) {
  switch (code) {
    case Errc::kInvalidArgument:
    case Errc::kInvalidState:
      return EINVAL;
    case Errc::kNotFound:
      return ENODEV;
    case Errc::kAddressInUse:
      return EBUSY;  // verbs: the device (its port) is busy
    case Errc::kPermission:
      return EPERM;
    case Errc::kUnsupported:
      return EOPNOTSUPP;
    case Errc::kResourceExhausted:
      return ENOMEM;
    case Errc::kTimedOut:
      return ETIMEDOUT;
    case Errc::kPeerFailed:
      return ECONNRESET;
    case Errc::kIo:
      return EIO;
  }
  return EIO;
}

}  // namespace mrc
