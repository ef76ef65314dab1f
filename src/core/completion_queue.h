// Completion queues: bounded rings of work completions, shaped like verbs' ibv_wc so the OCP
// API layer can translate one to one. A push into a full queue fails; the engine treats that as
// a CQ overrun (an error on the QP), never as a silent loss.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mrc/types.hpp"
#include "mrc/verbs.hpp"
#include "util/bounded_fifo.h"

namespace mrc {

// Told when a push makes a queue non-empty (in verbs terms, a completion channel's event), so a
// poller of many queues can visit only those that hold something; `tag` is the one the queue
// was given (which queue it is, in the poller's terms).
class CompletionNotifier {
 public:
  virtual void on_nonempty(uint32_t tag) = 0;

 protected:
  ~CompletionNotifier() = default;
};

// A bounded ring of completions with an optional notifier (a plain pointer and tag rather than
// a std::function, so that a push costs no indirect allocation).
class CompletionQueue {
 public:
  explicit CompletionQueue(uint32_t capacity);

  bool push(const Completion& c);
  // Moves up to out.size() completions into `out`; returns how many.
  size_t poll(std::span<Completion> out);
  size_t size() const { return ring_.size(); }
  uint32_t capacity() const { return static_cast<uint32_t>(ring_.capacity()); }
  uint64_t overruns() const { return overruns_; }
  // `notifier` (null: none) hears of every push that makes the queue non-empty.
  void set_notifier(CompletionNotifier* notifier, uint32_t tag) {
    notifier_ = notifier;
    tag_ = tag;
  }

 private:
  BoundedFifo<Completion> ring_;
  CompletionNotifier* notifier_ = nullptr;
  uint32_t tag_ = 0;
  uint64_t overruns_ = 0;
};

}  // namespace mrc
