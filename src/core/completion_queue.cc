// Completion queue ring: fixed capacity chosen at creation, FIFO order preserved.
#include "core/completion_queue.h"

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
    if (was_empty && notifier_ != nullptr) notifier_->on_nonempty(tag_);
    return true;
  }
  ++overruns_;
  return false;
}

size_t CompletionQueue::poll(std::span<Completion> out) {
  size_t n = 0;
  for (; n < out.size() && !ring_.empty(); ring_.pop()) out[n++] = ring_.front();
  return n;
}

}  // namespace mrc
