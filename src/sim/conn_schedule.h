// Which baseline connections of a host have work, without looking at all of them: the host's
// earliest connection deadline and, per plane, the connections that may send now, in the same
// round-robin order a scan over every connection would visit them.
//
// A connection's state changes only when the host touches it (a packet for it, a transmit
// opportunity it was asked about, a timer, a post), so the host marks it dirty then and the
// schedule re-reads its deadline and per-plane readiness once, before the next question. A
// connection paced until a later time waits in a per-plane heap and becomes ready when the
// clock passes that time. With tens of thousands of queue pairs per host this makes a packet
// event O(log n) instead of O(n) virtual calls (BENCHMARKS.md, "Simulator speed").
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/types.h"

namespace mrc::sim {

class BaselineConn;

class ConnSchedule {
 public:
  using Conns = std::vector<std::unique_ptr<BaselineConn>>;

  explicit ConnSchedule(uint32_t planes) : planes_(planes), ready_(planes), paced_(planes) {}

  // A connection was added (index = previous count) or its state may have changed.
  void add();
  void touch(uint32_t index);

  // Re-reads every touched connection; call before the questions below.
  void refresh(Instant now, const Conns& conns);

  // The connections that may send on `plane` at `now`, in round-robin order from `from`
  // (wrapping), appended to `out`.
  void ready_from(Instant now, PlaneId plane, uint32_t from, std::vector<uint32_t>& out);

  // The earliest deadline of any connection (never if none).
  Instant next_deadline();

  // The connections whose on_timer must run at `now`: deadline due, or wanting every timer;
  // in index order, as a scan over all connections would call them.
  void due(Instant now, std::vector<uint32_t>& out);

 private:
  struct Entry {
    Instant at;
    uint32_t index;
    bool operator>(const Entry& o) const { return at != o.at ? at > o.at : index > o.index; }
  };
  static constexpr uint8_t kWants = 1, kListed = 2;
  using Heap = std::vector<Entry>;  // a min-heap under Entry::operator>
  static void push(Heap& heap, Entry e);
  static Entry pop(Heap& heap);
  void set_ready(PlaneId plane, uint32_t index, bool ready);
  void promote_paced(Instant now, PlaneId plane);
  void append_ready(PlaneId plane, uint32_t lo, uint32_t hi, std::vector<uint32_t>& out) const;

  uint32_t planes_;
  uint32_t count_ = 0;
  std::vector<uint8_t> dirty_flag_;
  std::vector<uint32_t> dirty_;
  std::vector<Instant> deadline_;                // per connection, as last read
  Heap deadlines_;                               // lazy: entries not matching deadline_ are stale
  std::vector<uint8_t> every_timer_;             // per connection: 1 wants every timer, 2 listed
  std::vector<uint32_t> every_timer_list_;       // the listed ones; may no longer want it
  std::vector<std::vector<uint64_t>> ready_;     // per plane: bit set of ready connections
  std::vector<Instant> ready_at_;                // [index * planes + plane], as last read
  std::vector<Heap> paced_;                      // per plane: (ready time, index), lazy
};

}  // namespace mrc::sim
