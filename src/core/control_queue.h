// A bounded FIFO of control packets (SACK, NACK, endpoint requests and responses) waiting for
// a transmit opportunity on any usable plane. Overflow drops the new packet and is counted: the
// information in a lost SACK is repeated by the next one, and NACKs are an optimisation over
// the timers, so a full queue never stalls a QP.
#pragma once

#include <cstdint>
#include <vector>

#include "core/wire/packet.h"

namespace mrc {

struct ControlItem {
  wire::ControlPacket packet;
  // Preferred plane (e.g. a probe answer on the plane it came in on); -1 = any.
  int plane = -1;
};

class ControlQueue {
 public:
  explicit ControlQueue(uint32_t capacity) : ring_(capacity) {}
  bool push(const ControlItem& item) {
    if (count_ == ring_.size()) return false;
    ring_[(head_ + count_++) % ring_.size()] = item;
    return true;
  }
  bool empty() const { return count_ == 0; }
  const ControlItem& front() const { return ring_[head_]; }
  void pop() {
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  void clear() { head_ = count_ = 0; }
  size_t size() const { return count_; }

 private:
  std::vector<ControlItem> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace mrc
