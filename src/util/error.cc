// The names of mrc::Error's codes (include/mrc/error.hpp).
#include "mrc/error.hpp"

namespace mrc {

const char* to_string(Errc code) {
  switch (code) {
    case Errc::kInvalidArgument:
      return "invalid argument";
    case Errc::kInvalidState:
      return "invalid state";
    case Errc::kNotFound:
      return "not found";
    case Errc::kAddressInUse:
      return "address in use";
    case Errc::kPermission:
      return "permission denied";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kResourceExhausted:
      return "resource exhausted";
    case Errc::kTimedOut:
      return "timed out";
    case Errc::kPeerFailed:
      return "peer failed";
    case Errc::kIo:
      return "i/o error";
  }
  return "unknown error";
}

}  // namespace mrc
