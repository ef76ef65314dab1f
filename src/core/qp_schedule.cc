// QpSchedule (see qp_schedule.h): a dirty list, two position-indexed time heaps (at most one
// entry per QP, so memory is bounded by the QP count) and a candidate bit set, scanned a word at
// a time: finding the next candidate costs n/64 words at worst.
#include "core/qp_schedule.h"

#include <algorithm>
#include <bit>

#include "core/queue_pair.h"

namespace mrc {

void QpSchedule::add() {
  const uint32_t index = count_++;
  dirty_flag_.push_back(0);
  deadlines_.resize(count_);
  wakes_.resize(count_);
  ready_.resize((count_ + 63) / 64, 0);
  touch(index);
}

void QpSchedule::set_ready(uint32_t index, bool ready) {
  uint64_t& word = ready_[index / 64];
  const uint64_t bit = uint64_t{1} << (index % 64);
  if (((word & bit) != 0) == ready) return;
  word ^= bit;
  ready_count_ = ready ? ready_count_ + 1 : ready_count_ - 1;
}

void QpSchedule::refresh_dirty(const Qps& qps) {
  for (const uint32_t index : dirty_) {
    dirty_flag_[index] = 0;
    const QueuePair* qp = qps[index].get();
    deadlines_.set(index, qp != nullptr ? qp->next_deadline() : Instant::never());
    const Instant ready = qp != nullptr ? qp->send_ready_at() : Instant::never();
    set_ready(index, ready == kReadyNow);
    wakes_.set(index, ready == kReadyNow ? Instant::never() : ready);
  }
  dirty_.clear();
  deadline_top_ = top_at(deadlines_);
  wake_top_ = top_at(wakes_);
}

void QpSchedule::promote(Instant now) {
  while (wake_top_ <= now && !wakes_.empty()) {
    const uint32_t index = wakes_.top();
    wakes_.set(index, Instant::never());  // queued again when the QP is next re-read
    set_ready(index, true);
    wake_top_ = top_at(wakes_);
  }
}

uint32_t QpSchedule::next_ready(uint32_t from, uint32_t to) const {
  if (from >= to || ready_count_ == 0) return to;
  uint32_t w = from / 64;
  uint64_t word = ready_[w] & (~uint64_t{0} << (from % 64));
  while (word == 0) {
    if (++w * 64 >= to) return to;
    word = ready_[w];
  }
  return std::min(to, w * 64 + static_cast<uint32_t>(std::countr_zero(word)));
}

void QpSchedule::due(Instant now, std::vector<uint32_t>& out) {
  while (!deadlines_.empty() && deadlines_.top_at() <= now) {
    const uint32_t index = deadlines_.top();
    deadlines_.set(index, Instant::never());  // re-read (and re-queued) after its on_timer
    touch(index);
    out.push_back(index);
  }
  deadline_top_ = top_at(deadlines_);
  std::sort(out.begin(), out.end());
}

}  // namespace mrc
