// Recursive-doubling all-reduce (Thakur, Rabenseifner and Gropp, "Optimization of collective
// communication operations in MPICH", 2005), for small vectors, where the number of message
// latencies on the way decides the time rather than the bytes.
//
// With n a power of two, round k pairs rank r with r XOR 2^k: the two send each other their
// partial result and both reduce, so after log2(n) rounds every rank holds the whole reduction.
// That is log2(n) messages each way per rank, against the direct exchange's n-1 (one round)
// and the ring's 2(n-1) steps. Any other n: the ranks past the largest power of two p first
// hand their vector to rank r - p, which reduces it in and takes part in the rounds, and hand
// back the result at the end (two steps more for those pairs).
//
// Every combine puts the lower rank's operand first, so every rank computes the same expression
// in the same association (the rounds fix it) and all end bitwise identical, as the ring and the
// direct exchange do. A vector larger than one staging slot goes through the rounds a slot at a
// time. Messages between two ranks are one stream in order, and each round names one partner,
// so a rank's k-th message from a partner is always that round's.
#include <algorithm>
#include <cstring>

#include "collectives/communicator.h"
#include "collectives/engines.h"

namespace mrc::coll {

Result<Ok, Error> Communicator::send_copy(int peer, const uint8_t* data, size_t length) {
  for (;;) {
    if (uint8_t* slot = transport_->send_slot(peer); slot != nullptr) {
      std::memcpy(slot, data, length);
      return transport_->post(peer, static_cast<uint32_t>(length));
    }
    if (auto r = transport_->progress(true); !r.ok()) return r;
  }
}

Result<std::span<const uint8_t>, Error> Communicator::receive_exact(int peer, size_t length) {
  for (;;) {
    if (auto item = transport_->front(peer); item.has_value()) {
      if (item->size() != length) return Err{transport_->mismatch(peer, item->size(), length)};
      return *item;
    }
    if (auto r = transport_->progress(true); !r.ok()) return Err{r.error()};
  }
}

// One round with `peer`: our partial result out (unless `send_first` is false: a folded rank's
// vector only comes in), theirs in, and the two combined with the lower rank's first.
Result<Ok, Error> Communicator::exchange_step(int peer, uint8_t* acc, size_t elements,
                                              DataType type, ReduceOp op, bool send_first) {
  const size_t length = elements * size_of(type);
  if (send_first)
    if (auto sent = send_copy(peer, acc, length); !sent.ok()) return sent;
  auto theirs = receive_exact(peer, length);
  if (!theirs.ok()) return Err{theirs.error()};
  if (peer > rank_) {
    reduce_into(type, op, acc, theirs.value().data(), elements);
  } else {  // theirs op ours, in the scratch chunk, then back
    std::memcpy(scratch_.get(), theirs.value().data(), length);
    reduce_into(type, op, scratch_.get(), acc, elements);
    std::memcpy(acc, scratch_.get(), length);
  }
  transport_->release(peer);
  return Ok{};
}

// The rounds over `elements` elements at `acc` (at most one staging slot), which hold this
// rank's input and end holding the reduction.
Result<Ok, Error> Communicator::recursive_chunk(uint8_t* acc, size_t elements, DataType type,
                                                ReduceOp op) {
  const size_t length = elements * size_of(type);
  int pof2 = 1;
  while (pof2 * 2 <= ranks_) pof2 *= 2;
  const int extra = ranks_ - pof2;
  if (rank_ >= pof2) {  // folded: the vector to rank - p, the result back from it
    const int partner = rank_ - pof2;
    if (auto sent = send_copy(partner, acc, length); !sent.ok()) return sent;
    auto result = receive_exact(partner, length);
    if (!result.ok()) return Err{result.error()};
    std::memcpy(acc, result.value().data(), length);
    transport_->release(partner);
    return Ok{};
  }
  if (rank_ < extra)
    if (auto folded = exchange_step(rank_ + pof2, acc, elements, type, op, false); !folded.ok())
      return folded;
  for (int distance = 1; distance < pof2; distance <<= 1)
    if (auto round = exchange_step(rank_ ^ distance, acc, elements, type, op, true); !round.ok())
      return round;
  finalize_average(type, op, acc, elements, ranks_);
  if (rank_ < extra) return send_copy(rank_ + pof2, acc, length);
  return Ok{};
}

Result<Ok, Error> Communicator::all_reduce_recursive(const uint8_t* send, uint8_t* recv,
                                                     size_t count, DataType type, ReduceOp op) {
  const size_t element_bytes = size_of(type);
  if (send != recv) std::memmove(recv, send, count * element_bytes);  // recv accumulates
  const size_t chunk_elements = std::max<size_t>(1, options_.chunk_bytes / element_bytes);
  for (size_t first = 0; first < count; first += chunk_elements) {
    const size_t elements = std::min(chunk_elements, count - first);
    if (auto r = recursive_chunk(recv + first * element_bytes, elements, type, op); !r.ok())
      return r;
  }
  return Ok{};
}

}  // namespace mrc::coll
