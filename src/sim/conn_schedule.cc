// ConnSchedule (see conn_schedule.h): dirty list, lazy min-heaps and per-plane bit sets. Stale
// heap entries (a connection re-read since) are dropped when they reach the top; the ready bit
// sets are scanned a word at a time, so finding the next sender costs n/64 words at worst.
#include "sim/conn_schedule.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "sim/baseline.h"

namespace mrc::sim {

void ConnSchedule::add() {
  const uint32_t index = count_++;
  dirty_flag_.push_back(0);
  deadline_.push_back(Instant::never());
  every_timer_.push_back(0);
  ready_at_.resize(static_cast<size_t>(count_) * planes_, Instant::never());
  for (auto& bits : ready_) bits.resize((count_ + 63) / 64, 0);
  touch(index);
}

void ConnSchedule::touch(uint32_t index) {
  if (dirty_flag_[index]) return;
  dirty_flag_[index] = 1;
  dirty_.push_back(index);
}

void ConnSchedule::push(Heap& heap, Entry e) {
  heap.push_back(e);
  std::push_heap(heap.begin(), heap.end(), std::greater<Entry>{});
}

ConnSchedule::Entry ConnSchedule::pop(Heap& heap) {
  std::pop_heap(heap.begin(), heap.end(), std::greater<Entry>{});
  const Entry e = heap.back();
  heap.pop_back();
  return e;
}

void ConnSchedule::set_ready(PlaneId plane, uint32_t index, bool ready) {
  uint64_t& word = ready_[plane.value][index / 64];
  const uint64_t bit = uint64_t{1} << (index % 64);
  word = ready ? (word | bit) : (word & ~bit);
}

void ConnSchedule::refresh(Instant now, const Conns& conns) {
  for (const uint32_t index : dirty_) {
    dirty_flag_[index] = 0;
    const BaselineConn& conn = *conns[index];
    const Instant deadline = conn.next_deadline(now);
    if (deadline != deadline_[index]) {
      deadline_[index] = deadline;
      if (!deadline.is_never()) push(deadlines_, Entry{deadline, index});
    }
    uint8_t& every = every_timer_[index];
    every = static_cast<uint8_t>((every & kListed) | (conn.wants_every_timer() ? kWants : 0));
    if (every == kWants) {
      every_timer_list_.push_back(index);
      every |= kListed;
    }
    for (uint32_t p = 0; p < planes_; ++p) {
      const PlaneId plane(static_cast<uint8_t>(p));
      const Instant at = conn.send_ready_at(now, plane);
      Instant& cached = ready_at_[static_cast<size_t>(index) * planes_ + p];
      const bool changed = at != cached;
      cached = at;
      set_ready(plane, index, !at.is_never() && at <= now);
      if (changed && !at.is_never() && at > now) push(paced_[p], Entry{at, index});
    }
  }
  dirty_.clear();
}

// Paced connections whose time has come join the ready set (if still paced until then).
void ConnSchedule::promote_paced(Instant now, PlaneId plane) {
  Heap& heap = paced_[plane.value];
  while (!heap.empty() && heap.front().at <= now) {
    const Entry e = pop(heap);
    if (ready_at_[static_cast<size_t>(e.index) * planes_ + plane.value] == e.at) set_ready(plane, e.index, true);
  }
}

void ConnSchedule::append_ready(PlaneId plane, uint32_t lo, uint32_t hi, std::vector<uint32_t>& out) const {
  const std::vector<uint64_t>& bits = ready_[plane.value];
  for (uint32_t w = lo / 64; w * 64 < hi; ++w) {
    uint64_t word = bits[w];
    if (w == lo / 64) word &= ~uint64_t{0} << (lo % 64);
    while (word != 0) {
      const uint32_t index = w * 64 + static_cast<uint32_t>(std::countr_zero(word));
      if (index >= hi) return;
      out.push_back(index);
      word &= word - 1;
    }
  }
}

void ConnSchedule::ready_from(Instant now, PlaneId plane, uint32_t from, std::vector<uint32_t>& out) {
  promote_paced(now, plane);
  if (count_ == 0) return;
  from %= count_;
  append_ready(plane, from, count_, out);
  append_ready(plane, 0, from, out);
}

Instant ConnSchedule::next_deadline() {
  while (!deadlines_.empty() && deadlines_.front().at != deadline_[deadlines_.front().index]) pop(deadlines_);
  return deadlines_.empty() ? Instant::never() : deadlines_.front().at;
}

void ConnSchedule::due(Instant now, std::vector<uint32_t>& out) {
  while (!deadlines_.empty() && deadlines_.front().at <= now) {
    const Entry e = pop(deadlines_);
    if (deadline_[e.index] != e.at) continue;
    deadline_[e.index] = Instant::never();  // re-read (and re-queued) after its on_timer
    out.push_back(e.index);
  }
  size_t kept = 0;
  for (const uint32_t index : every_timer_list_) {
    if (!(every_timer_[index] & kWants)) {
      every_timer_[index] = 0;
      continue;
    }
    every_timer_list_[kept++] = index;
    out.push_back(index);
  }
  every_timer_list_.resize(kept);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace mrc::sim
