// Point-to-point messages that are in flight together: any number of sends and receives, to and
// from any peers, queued in the order they were issued and moved forward side by side.
//
// Why: a send larger than the staging slots (slots x chunk_bytes) completes only while the peer
// drains it. Two ranks that each send first and receive second (a ring exchange, torch's
// isend/irecv, batch_isend_irecv) wait for each other forever if each send must finish before
// the receive starts. Here a send and a receive that are both queued advance together, so any
// order of sends and receives completes as long as every message has its match.
//
// Order: messages to one peer go in queue order (one stream per peer), and so do receives from
// one peer; a receive takes the next message of its peer's stream, which must have its length
// (a different length is a mismatch error, as in every collective). A send is complete once
// its last chunk is in a staging slot (the caller's buffer is free again); a receive once its
// last chunk is copied out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "collectives/transport.h"

namespace mrc::coll {

class PointToPoint {
 public:
  using Ticket = uint64_t;

  explicit PointToPoint(Transport& transport)
      : transport_(transport), sends_(transport.ranks()), receives_(transport.ranks()) {}

  // Queues a message; `data` must stay valid (and, for a receive, untouched) until its ticket is
  // returned by step(). `peer` must be another rank.
  Ticket add_send(const void* data, size_t bytes, int peer);
  Ticket add_receive(void* data, size_t bytes, int peer);

  // Moves every queued message as far as the transport allows without waiting. Appends the
  // tickets that completed to `done`, and returns whether anything moved.
  Result<bool, Error> step(std::vector<Ticket>& done);
  bool idle() const { return pending_ == 0; }
  // Forgets every queued message (after a failure, before their buffers go away).
  void abandon();

 private:
  struct Message {
    Ticket ticket;
    uint8_t* data;  // const for a send
    size_t bytes;
    uint64_t chunks;     // at least 1: an empty message is one 0-byte chunk
    uint64_t moved = 0;  // chunks posted or copied out
  };
  Result<bool, Error> step_sends(int peer, std::vector<Ticket>& done);
  Result<bool, Error> step_receives(int peer, std::vector<Ticket>& done);
  Message make(const void* data, size_t bytes);
  std::pair<size_t, size_t> next_chunk(const Message& m) const;
  void chunk_moved(std::deque<Message>& queue, std::vector<Ticket>& done);

  Transport& transport_;
  std::vector<std::deque<Message>> sends_;     // per peer, in issue order
  std::vector<std::deque<Message>> receives_;  // per peer, in issue order
  Ticket next_ticket_ = 0;
  size_t pending_ = 0;
};

}  // namespace mrc::coll
