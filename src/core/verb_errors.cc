// The engine's error enums as mrc::Error (include/mrc/verbs.hpp): each value keeps its name as
// the message and gets the Errc a caller branches on. The engine itself returns the enums.
#include "mrc/verbs.hpp"

namespace mrc {

Error to_error(PostError e) {
  switch (e) {
    case PostError::kQpState:
      return {Errc::kInvalidState, to_string(e)};
    case PostError::kQueueFull:
      return {Errc::kResourceExhausted, to_string(e)};
    case PostError::kTooManySge:
    case PostError::kBadLkey:
    case PostError::kLocalOutOfBounds:
    case PostError::kAddressOverflow:
      return {Errc::kInvalidArgument, to_string(e)};
  }
  return {Errc::kInvalidArgument, to_string(e)};
}

Error to_error(MrError e) {
  switch (e) {
    case MrError::kTableFull:
      return {Errc::kResourceExhausted, to_string(e)};
    case MrError::kUnknownKey:
      return {Errc::kNotFound, to_string(e)};
    case MrError::kAccessDenied:
      return {Errc::kPermission, to_string(e)};
    case MrError::kBadProtectionDomain:
    case MrError::kNullAddress:
    case MrError::kWrongProtectionDomain:
    case MrError::kOutOfBounds:
      return {Errc::kInvalidArgument, to_string(e)};
  }
  return {Errc::kInvalidArgument, to_string(e)};
}

Error to_error(QpError e) {
  switch (e) {
    case QpError::kBadTransition:
      return {Errc::kInvalidState, to_string(e)};
    case QpError::kUnknownQp:
      return {Errc::kNotFound, to_string(e)};
    case QpError::kTooManyQps:
      return {Errc::kResourceExhausted, to_string(e)};
    case QpError::kBadConfig:
    case QpError::kBadProtectionDomain:
    case QpError::kNoCompletionQueue:
      return {Errc::kInvalidArgument, to_string(e)};
  }
  return {Errc::kInvalidArgument, to_string(e)};
}

}  // namespace mrc
