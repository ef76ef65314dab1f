// Completion queue ring: fixed capacity chosen at creation, FIFO order preserved.
#include "core/completion_queue.h"

#include "util/assert.h"

namespace mrc {

const char* to_string(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess: return "success";
    case WcStatus::kLocalLengthError: return "local length error";
    case WcStatus::kLocalProtectionError: return "local protection error";
    case WcStatus::kWrFlushError: return "work request flushed";
    case WcStatus::kRemoteAccessError: return "remote access error";
    case WcStatus::kRemoteOperationError: return "remote operation error";
    case WcStatus::kRetryExceeded: return "transport retry counter exceeded";
    case WcStatus::kGeneralError: return "general error";
  }
  return "unknown";
}

CompletionQueue::CompletionQueue(uint32_t capacity) : ring_(capacity) {
  MRC_ASSERT(capacity > 0);
}

bool CompletionQueue::push(const Completion& c) {
  if (count_ == ring_.size()) {
    ++overruns_;
    return false;
  }
  ring_[(head_ + count_) % ring_.size()] = c;
  ++count_;
  return true;
}

size_t CompletionQueue::poll(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && count_ > 0) {
    out[n++] = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  return n;
}

}  // namespace mrc
