// Drop, delay and reorder as a decorator around a plane's link (impaired_link.h).
#include "io/impaired_link.h"

#include <cstring>

namespace mrc::io {

bool impairs_datagrams(const Impairment& i) {
  return i.drop > 0 || i.delay.ns > 0 || i.reorder > 0;
}

void ImpairedLink::add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
                       TxOutcome& out) {
  const Impairment& imp = draws_->impairment;
  Prng& prng = draws_->prng;
  if (imp.drop > 0 && prng.chance(imp.drop)) {
    ++drops_;  // left at space(): the next datagram overwrites it
    return;
  }
  Duration hold = imp.delay;
  if (imp.reorder > 0 && prng.chance(imp.reorder))
    hold =
        hold +
        Duration{static_cast<int64_t>(prng.below(static_cast<uint64_t>(imp.reorder_delay.ns) + 1))};
  if (hold.ns <= 0 || length > written_at_.size()) {
    inner().add(source_port, to, length, now, out);
    return;
  }
  const std::span<const uint8_t> bytes = written_at_.first(length);
  held_.push(Held{now + hold, draws_->held++, source_port, to,
                  std::vector<uint8_t>(bytes.begin(), bytes.end())});
}

Instant ImpairedLink::next_release() const {
  return held_.empty() ? Instant::never() : held_.top().release;
}

bool ImpairedLink::release(Instant now, bool send, TxOutcome& out) {
  bool any = false;
  while (!held_.empty() && held_.top().release <= now) {
    if (send) send_held(held_.top(), now, out);
    held_.pop();
    any = true;
  }
  return any;
}

// Copied into the link's space and sent at once; lost, as a datagram the kernel refused, if
// the link has no room for it now.
void ImpairedLink::send_held(const Held& h, Instant now, TxOutcome& out) {
  const std::span<uint8_t> space = inner().space();
  if (space.size() < h.bytes.size()) {
    ++out.errors;
    return;
  }
  std::memcpy(space.data(), h.bytes.data(), h.bytes.size());
  inner().add(h.source_port, h.to, h.bytes.size(), now, out);
  inner().flush(now, out);
}

void ImpairedLink::add_counters(UdpPlaneStats& stats) const {
  LinkDecorator::add_counters(stats);
  stats.impairment_drops += drops_;
}

}  // namespace mrc::io
