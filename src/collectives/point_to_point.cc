// Point-to-point messages moved side by side (see point_to_point.h).
#include "collectives/point_to_point.h"

#include <algorithm>
#include <cstring>

namespace mrc::coll {

PointToPoint::Message PointToPoint::make(const void* data, size_t bytes) {
  const size_t chunk = transport_.chunk_bytes();
  const uint64_t chunks = std::max<uint64_t>(1, (bytes + chunk - 1) / chunk);
  ++pending_;
  return Message{next_ticket_++, static_cast<uint8_t*>(const_cast<void*>(data)), bytes, chunks};
}

PointToPoint::Ticket PointToPoint::add_send(const void* data, size_t bytes, int peer) {
  sends_[peer].push_back(make(data, bytes));
  return sends_[peer].back().ticket;
}

PointToPoint::Ticket PointToPoint::add_receive(void* data, size_t bytes, int peer) {
  receives_[peer].push_back(make(data, bytes));
  return receives_[peer].back().ticket;
}

// The front message's next chunk: where it starts in the message, and its length.
std::pair<size_t, size_t> PointToPoint::next_chunk(const Message& m) const {
  const size_t chunk = transport_.chunk_bytes();
  const size_t offset = m.moved * chunk;
  return {offset, std::min(chunk, m.bytes - std::min(m.bytes, offset))};
}

// One more chunk of the queue's front message has moved; a message whose last chunk has is done.
void PointToPoint::chunk_moved(std::deque<Message>& queue, std::vector<Ticket>& done) {
  Message& m = queue.front();
  if (++m.moved < m.chunks) return;
  done.push_back(m.ticket);
  --pending_;
  queue.pop_front();
}

Result<bool, Error> PointToPoint::step_sends(int peer, std::vector<Ticket>& done) {
  bool moved = false;
  auto& queue = sends_[peer];
  while (!queue.empty()) {
    uint8_t* slot = transport_.send_slot(peer);
    if (slot == nullptr) break;
    const auto [offset, length] = next_chunk(queue.front());
    if (length > 0) std::memcpy(slot, queue.front().data + offset, length);
    auto r = transport_.post(peer, static_cast<uint32_t>(length));
    if (!r.ok()) return Err{r.error()};
    moved = true;
    chunk_moved(queue, done);
  }
  return moved;
}

Result<bool, Error> PointToPoint::step_receives(int peer, std::vector<Ticket>& done) {
  bool moved = false;
  auto& queue = receives_[peer];
  while (!queue.empty()) {
    auto in = transport_.front(peer);
    if (!in) break;
    const auto [offset, expected] = next_chunk(queue.front());
    if (in->size() != expected) return Err{transport_.mismatch(peer, in->size(), expected)};
    if (!in->empty()) std::memcpy(queue.front().data + offset, in->data(), in->size());
    transport_.release(peer);
    moved = true;
    chunk_moved(queue, done);
  }
  return moved;
}

void PointToPoint::abandon() {
  for (auto& queue : sends_) queue.clear();
  for (auto& queue : receives_) queue.clear();
  pending_ = 0;
}

Result<bool, Error> PointToPoint::step(std::vector<Ticket>& done) {
  if (transport_.failed()) return Err{transport_.failure()};
  bool moved = false;
  for (int peer = 0; peer < transport_.ranks(); ++peer) {
    if (peer == transport_.rank()) continue;
    auto sent = step_sends(peer, done);
    if (!sent.ok()) return sent;
    auto received = step_receives(peer, done);
    if (!received.ok()) return received;
    moved = moved || sent.value() || received.value();
  }
  return moved;
}

}  // namespace mrc::coll
