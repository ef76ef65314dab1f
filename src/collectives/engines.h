// The three communication patterns every collective is built from, as non-blocking loops over
// the transport's message streams (internal to the collectives library):
//
//   ring     each rank sends a stream to the next rank and receives one from the previous.
//            Per chunk c there are `steps` items; item (0, c) is injected from local data,
//            receiving item (k, c) produces item (k+1, c) (reduce or copy, then forward), and
//            receiving the last step's item finishes chunk c. Streams are chunk-major: all
//            steps of chunk c, then chunk c+1; so a rank injects chunk c+1 while chunk c is
//            still travelling and every link carries up to `slots` chunks at once. Deadlock
//            freedom: a rank runs at most two items ahead of what it has received, and with at
//            least 4 slots per link the ring can never be full everywhere at once.
//   chain    rank 0 of the chain injects, middle ranks receive-and-forward, the last finishes
//            (broadcast from the root; reduce towards the root). Acyclic, so it cannot deadlock.
//   segments a uniform split of `count` elements into `parts` segments (the first count % parts
//            one element longer) and of each segment into chunks of a slot's size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "collectives/transport.h"

namespace mrc::coll::detail {

inline int wrap(int value, int ranks) {
  return ((value % ranks) + ranks) % ranks;
}

struct ByteRange {
  size_t offset = 0;  // bytes from the start of the buffer
  size_t bytes = 0;
};

struct Segments {
  size_t count = 0;  // elements in all
  int parts = 1;
  size_t element_bytes = 1;
  size_t chunk_elements = 1;  // elements per chunk (a slot's worth)

  size_t size(int part) const;    // elements
  size_t offset(int part) const;  // elements
  uint64_t chunks() const;        // chunks of the largest segment (at least 1)
  // Chunk c of segment `part`, in bytes from the start of the whole buffer (may be empty).
  ByteRange chunk(int part, uint64_t c) const;
};

// An item a job produced: `bytes` in the send slot it was given, or, with `lent` set, `bytes`
// at `lent` in caller memory lent to the transport under `lkey` (LentMemory).
struct Item {
  uint32_t bytes = 0;
  const uint8_t* lent = nullptr;
  uint32_t lkey = 0;
};

// A collective's buffers and their keys while they are lent to the transport.
struct LentBuffers {
  const uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
  uint32_t send_lkey = 0;
  uint32_t recv_lkey = 0;
  Item from_send(size_t offset, size_t bytes) const {
    return {static_cast<uint32_t>(bytes), send + offset, send_lkey};
  }
  Item from_recv(size_t offset, size_t bytes) const {
    return {static_cast<uint32_t>(bytes), recv + offset, recv_lkey};
  }
};

// Lends the first `send_bytes` of b.send and `recv_bytes` of b.recv (0: that buffer is not
// sent from) and fills in their keys.
Result<Ok, Error> lend(LentMemory& lent, LentBuffers& b, size_t send_bytes, size_t recv_bytes);

class RingJob {
 public:
  virtual ~RingJob() = default;
  virtual int steps() const = 0;
  virtual uint64_t chunks() const = 0;
  virtual size_t receive_bytes(int step, uint64_t chunk) const = 0;
  // Item (0, chunk), in `slot` or lent memory.
  virtual Item inject(uint64_t chunk, uint8_t* slot) = 0;
  // Item (step, chunk) arrived: produce item (step + 1, chunk), in `slot` or lent memory.
  virtual Item forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) = 0;
  // Item (steps - 1, chunk) arrived.
  virtual void finish(uint64_t chunk, std::span<const uint8_t> in) = 0;
  // The step whose arrival makes the job write over the memory its inject of the same chunk
  // was sent from (-1: none). run_ring holds that item back until the inject's write has
  // completed, since a retransmission reads the memory again.
  virtual int overwrites_inject_at() const { return -1; }
};

class ChainJob {
 public:
  virtual ~ChainJob() = default;
  virtual uint64_t chunks() const = 0;
  virtual size_t receive_bytes(uint64_t chunk) const = 0;
  virtual Item inject(uint64_t chunk, uint8_t* slot) = 0;
  virtual Item forward(uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) = 0;
  virtual void finish(uint64_t chunk, std::span<const uint8_t> in) = 0;
};

Result<Ok, Error> run_ring(Transport& transport, RingJob& job, int next, int previous);
// previous < 0: this rank starts the chain; next < 0: it ends it.
Result<Ok, Error> run_chain(Transport& transport, ChainJob& job, int previous, int next);

}  // namespace mrc::coll::detail
