// Work requests as the engine sees them, after the API layer has validated them: a send
// (RDMA WRITE or WRITE-with-immediate) with its gather list resolved to pointers, and a
// receive (which only supplies a wr_id: MRC receives are consumed by WRITE-with-immediate
// completions, the data itself lands at the RETH address).
#pragma once

#include <array>
#include <cstdint>

#include "core/types.h"

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

}  // namespace mrc
