// Completion queue ring: fixed capacity chosen at creation, FIFO order preserved.
#include "core/completion_queue.h"

#include "mrc/assert.hpp"

namespace mrc {

const char* to_string(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess:
      return "success";
    case WcStatus::kLocalLengthError:
      return "local length error";
    case WcStatus::kLocalProtectionError:
      return "local protection error";
    case WcStatus::kWrFlushError:
      return "work request flushed";
    case WcStatus::kRemoteAccessError:
      return "remote access error";
    case WcStatus::kRemoteOperationError:
      return "remote operation error";
    case WcStatus::kRetryExceeded:
      return "transport retry counter exceeded";
    case WcStatus::kGeneralError:
      return "general error";
  }
  return "unknown";
}

CompletionQueue::CompletionQueue(uint32_t capacity) : ring_(capacity) {}

bool CompletionQueue::push(const Completion& c) {
  const bool was_empty = ring_.empty();
  if (ring_.push(c)) {
    MRC_ASSERT(ring_.size() <= capacity() && !ring_.empty());
    if (was_empty && notifier_ != nullptr) notifier_->on_nonempty(tag_);
    return true;
  }
  // Only a full queue refuses a completion (counted as an overrun, never lost silently).
  MRC_ASSERT(ring_.size() == capacity());
  ++overruns_;
  return false;
}

size_t CompletionQueue::poll(std::span<Completion> out) {
  size_t n = 0;
  const size_t before = ring_.size();
  for (; n < out.size() && !ring_.empty(); ring_.pop()) out[n++] = ring_.front();
  // Taken from the front, in order: what is left is what was not taken.
  MRC_ASSERT(n <= out.size() && ring_.size() == before - n);
  return n;
}

}  // namespace mrc
