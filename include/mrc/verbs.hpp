// The verbs-shaped vocabulary of mrc's APIs: scatter/gather elements and send work requests,
// work completions, memory-region keys and access rights, queue-pair states, and the errors of
// posting, registering and changing state. The engine (src/core) and the native API
// (mrc/mrc.hpp) share these definitions.
#pragma once

#include <cstdint>

#include "mrc/error.hpp"
#include "mrc/types.hpp"

namespace mrc {

struct Sge {
  uint64_t address = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

enum class SendOpcode : uint8_t { kWrite, kWriteWithImm };

struct SendWr {
  uint64_t wr_id = 0;
  SendOpcode opcode = SendOpcode::kWrite;
  const Sge* sg_list = nullptr;
  uint32_t num_sge = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t immediate = 0;
  bool signaled = true;
};

enum class PostError : uint8_t {
  kQpState,           // the QP is not in a state that accepts this post
  kQueueFull,         // the send or receive queue is full
  kTooManySge,        // num_sge exceeds the QP's max_sge
  kBadLkey,           // a gather element names no registered region of this PD
  kLocalOutOfBounds,  // a gather element lies outside its region
  kAddressOverflow,   // remote_addr + length wraps around 2^64
};
const char* to_string(PostError e);

enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocalLengthError,
  kLocalProtectionError,
  kWrFlushError,
  kRemoteAccessError,
  kRemoteOperationError,
  kRetryExceeded,
  kGeneralError,
};
const char* to_string(WcStatus s);

enum class WcOpcode : uint8_t { kRdmaWrite, kRecvRdmaWithImm };

struct Completion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kRdmaWrite;
  bool has_immediate = false;
  Qpn qpn{0};
  uint32_t byte_len = 0;
  uint32_t immediate = 0;
};

enum Access : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,  // accepted for verbs compatibility; MRC has no READ
};

struct MemoryRegionInfo {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint64_t address = 0;  // virtual address of the first byte (the pointer value, as in verbs)
  uint64_t length = 0;
};

enum class MrError : uint8_t {
  kTableFull,
  kBadProtectionDomain,
  kNullAddress,
  kUnknownKey,
  kWrongProtectionDomain,
  kAccessDenied,
  kOutOfBounds,
};
const char* to_string(MrError e);

enum class QpState : uint8_t { kReset, kInit, kRtr, kRts, kError };
const char* to_string(QpState s);

enum class QpError : uint8_t {
  kBadTransition,  // the requested state change is not allowed from the current state
  kBadConfig,      // configuration invalid (see QueuePair::config_error())
  kUnknownQp,
  kTooManyQps,
  kBadProtectionDomain,
  kNoCompletionQueue,
};
const char* to_string(QpError e);

// The engine's errors as the API's one error type: the enum's name as the message, with the
// code a caller can branch on (a full queue is kResourceExhausted, a bad key kInvalidArgument).
Error to_error(PostError e);
Error to_error(MrError e);
Error to_error(QpError e);

}  // namespace mrc
