// QpSchedule (see qp_schedule.h): dirty list, lazy min-heaps and a candidate bit set. Stale heap
// entries (a QP re-read since) are dropped when they reach the top, and a heap holding more
// than twice the QPs is rebuilt from the per-QP values, so memory stays bounded. The bit set is
// scanned a word at a time: finding the next candidate costs n/64 words at worst.
#include "core/qp_schedule.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "core/queue_pair.h"

namespace mrc {

void QpSchedule::add() {
  const uint32_t index = count_++;
  dirty_flag_.push_back(0);
  deadline_.push_back(Instant::never());
  wake_at_.push_back(Instant::never());
  ready_.resize((count_ + 63) / 64, 0);
  touch(index);
}

void QpSchedule::push(Heap& heap, Entry e) {
  heap.push_back(e);
  std::push_heap(heap.begin(), heap.end(), std::greater<Entry>{});
}

QpSchedule::Entry QpSchedule::pop(Heap& heap) {
  std::pop_heap(heap.begin(), heap.end(), std::greater<Entry>{});
  const Entry e = heap.back();
  heap.pop_back();
  return e;
}

// Rebuilds `heap` with one entry per QP whose current value is a time.
void QpSchedule::compact(Heap& heap, const std::vector<Instant>& current) {
  heap.clear();
  for (uint32_t i = 0; i < current.size(); ++i)
    if (!current[i].is_never()) heap.push_back(Entry{current[i], i});
  std::make_heap(heap.begin(), heap.end(), std::greater<Entry>{});
}

void QpSchedule::set_ready(uint32_t index, bool ready) {
  uint64_t& word = ready_[index / 64];
  const uint64_t bit = uint64_t{1} << (index % 64);
  word = ready ? (word | bit) : (word & ~bit);
}

void QpSchedule::refresh(const Qps& qps) {
  for (const uint32_t index : dirty_) {
    dirty_flag_[index] = 0;
    const QueuePair* qp = qps[index].get();
    const Instant deadline = qp != nullptr ? qp->next_deadline() : Instant::never();
    if (deadline != deadline_[index]) {
      deadline_[index] = deadline;
      if (!deadline.is_never()) push(deadlines_, Entry{deadline, index});
    }
    const Instant ready = qp != nullptr ? qp->send_ready_at() : Instant::never();
    set_ready(index, ready == kReadyNow);
    if (ready == kReadyNow || ready.is_never()) {
      wake_at_[index] = Instant::never();
    } else if (wake_at_[index] != ready) {
      wake_at_[index] = ready;
      push(wakes_, Entry{ready, index});
    }
  }
  dirty_.clear();
  const size_t limit = 2 * static_cast<size_t>(count_) + 64;
  if (deadlines_.size() > limit) compact(deadlines_, deadline_);
  if (wakes_.size() > limit) compact(wakes_, wake_at_);
}

void QpSchedule::promote(Instant now) {
  while (!wakes_.empty() && wakes_.front().at <= now) {
    const Entry e = pop(wakes_);
    if (wake_at_[e.index] != e.at) continue;
    wake_at_[e.index] = Instant::never();  // re-queued when the QP is next re-read
    set_ready(e.index, true);
  }
}

uint32_t QpSchedule::next_ready(uint32_t from, uint32_t to) const {
  if (from >= to) return to;
  uint32_t w = from / 64;
  uint64_t word = ready_[w] & (~uint64_t{0} << (from % 64));
  while (word == 0) {
    if (++w * 64 >= to) return to;
    word = ready_[w];
  }
  return std::min(to, w * 64 + static_cast<uint32_t>(std::countr_zero(word)));
}

Instant QpSchedule::next_deadline() {
  while (!deadlines_.empty() && deadlines_.front().at != deadline_[deadlines_.front().index])
    pop(deadlines_);
  return deadlines_.empty() ? Instant::never() : deadlines_.front().at;
}

void QpSchedule::due(Instant now, std::vector<uint32_t>& out) {
  while (!deadlines_.empty() && deadlines_.front().at <= now) {
    const Entry e = pop(deadlines_);
    if (deadline_[e.index] != e.at) continue;
    deadline_[e.index] = Instant::never();  // re-read (and re-queued) after its on_timer
    touch(e.index);
    out.push_back(e.index);
  }
  std::sort(out.begin(), out.end());
}

}  // namespace mrc
