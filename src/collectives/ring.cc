// Ring collectives: all-reduce, reduce-scatter and all-gather, each pipelined in chunks.
//
// Ring all-reduce (the bandwidth-optimal algorithm of Patarasuk and Yuan, as in NCCL and
// Horovod): the vector is cut into `ranks` segments. In the reduce-scatter half (n-1 steps) rank
// r sends segment r-k at step k and receives segment r-k-1, which it reduces with its own
// input and forwards; after n-1 steps it holds segment r+1 fully reduced. In the all-gather
// half (n-1 more steps) the reduced segments travel once more around the ring and are copied
// out. Each rank sends and receives 2(n-1)/n of the vector, the minimum, and every segment is
// reduced at exactly one rank, so all ranks end with bitwise identical results. Each segment is
// cut into chunks of one staging slot; the steps of chunk c+1 overlap those of chunk c.
//
// Bytes that already lie in the caller's buffers are sent from there (the buffers are lent to
// the transport for the call), not copied into a staging slot first: the inputs a rank injects,
// the segments it finishes reducing (written into the output and sent from it) and the
// all-gather's segments. Only partial sums travel through the send slots. Arriving items are
// still read from the receive slots.
//
// In-place use is safe because, for every chunk, a rank reads its input of a segment (inject
// or reduce) at an earlier step than it writes the output of that segment, and the one output
// written over memory an inject was sent from waits until that write has completed.
#include <algorithm>
#include <cstring>

#include "collectives/communicator.h"
#include "collectives/engines.h"

namespace mrc::coll {

namespace {

using detail::ByteRange;
using detail::Item;
using detail::LentBuffers;
using detail::Segments;
using detail::wrap;

Segments make_segments(size_t count, int parts, DataType type, uint32_t chunk_bytes) {
  Segments s;
  s.count = count;
  s.parts = parts;
  s.element_bytes = size_of(type);
  s.chunk_elements = std::max<size_t>(1, chunk_bytes / s.element_bytes);
  return s;
}

// A ring whose step k sends segment (rank - k + send_shift) and receives segment
// (rank - k + send_shift - 1); the collectives differ in what they do with the bytes.
class SegmentRing : public detail::RingJob {
 public:
  SegmentRing(const Segments& segments, int rank, int steps, int send_shift)
      : segments_(segments), rank_(rank), steps_(steps), send_shift_(send_shift) {}
  int steps() const override { return steps_; }
  uint64_t chunks() const override { return segments_.chunks(); }
  size_t receive_bytes(int step, uint64_t chunk) const override {
    return segments_.chunk(receive_segment(step), chunk).bytes;
  }

 protected:
  int send_segment(int step) const { return wrap(rank_ - step + send_shift_, segments_.parts); }
  int receive_segment(int step) const {
    return wrap(rank_ - step + send_shift_ - 1, segments_.parts);
  }
  ByteRange range(int segment, uint64_t chunk) const { return segments_.chunk(segment, chunk); }

  Segments segments_;
  int rank_;
  int steps_;
  int send_shift_;
};

Item from_send_range(const LentBuffers& b, const ByteRange& r) {
  return b.from_send(r.offset, r.bytes);
}
Item from_recv_range(const LentBuffers& b, const ByteRange& r) {
  return b.from_recv(r.offset, r.bytes);
}

// Where the bytes go: the inject sends straight from the send buffer; the partial sums of the
// reduce-scatter half go through the send slot (they are not the result); the last reduction
// of a segment is written into the receive buffer and sent from there, and so is every
// segment of the all-gather half.
class AllReduceRing final : public SegmentRing {
 public:
  AllReduceRing(const Segments& s, int rank, const LentBuffers& b, DataType type, ReduceOp op)
      : SegmentRing(s, rank, 2 * (s.parts - 1), 0), b_(b), type_(type), op_(op) {}

  Item inject(uint64_t chunk, uint8_t*) override {
    return from_send_range(b_, range(send_segment(0), chunk));
  }
  Item forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) override {
    const ByteRange r = range(receive_segment(step), chunk);
    const int reduce_steps = segments_.parts - 1;
    if (step >= reduce_steps) {
      std::memcpy(b_.recv + r.offset, in.data(), r.bytes);
      return from_recv_range(b_, r);
    }
    const size_t elements = r.bytes / segments_.element_bytes;
    if (step < reduce_steps - 1) {
      reduce_pair(type_, op_, slot, b_.send + r.offset, in.data(), elements);
      return {static_cast<uint32_t>(r.bytes)};
    }
    // Fully reduced here: keep it and start the all-gather.
    reduce_pair(type_, op_, b_.recv + r.offset, b_.send + r.offset, in.data(), elements);
    finalize_average(type_, op_, b_.recv + r.offset, elements, segments_.parts);
    return from_recv_range(b_, r);
  }
  void finish(uint64_t chunk, std::span<const uint8_t> in) override {
    const ByteRange r = range(receive_segment(steps_ - 1), chunk);
    std::memcpy(b_.recv + r.offset, in.data(), r.bytes);
  }
  // In place, this rank's own segment (its inject) comes back reduced at the first step of
  // the all-gather half.
  int overwrites_inject_at() const override {
    return b_.send == b_.recv ? segments_.parts - 1 : -1;
  }

 private:
  LentBuffers b_;
  DataType type_;
  ReduceOp op_;
};

// Reduce-scatter: segment r ends at rank r, so step k sends segment r-k-1. The inject is sent
// from the send buffer, the partial sums from the send slot.
class ReduceScatterRing final : public SegmentRing {
 public:
  ReduceScatterRing(const Segments& s, int rank, const LentBuffers& b, DataType type, ReduceOp op)
      : SegmentRing(s, rank, s.parts - 1, -1), b_(b), type_(type), op_(op) {}

  Item inject(uint64_t chunk, uint8_t*) override {
    return from_send_range(b_, range(send_segment(0), chunk));
  }
  Item forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) override {
    const ByteRange r = range(receive_segment(step), chunk);
    reduce_pair(type_, op_, slot, b_.send + r.offset, in.data(), r.bytes / segments_.element_bytes);
    return {static_cast<uint32_t>(r.bytes)};
  }
  void finish(uint64_t chunk, std::span<const uint8_t> in) override {
    const ByteRange r = range(rank_, chunk);
    uint8_t* out = b_.recv + (r.offset - segments_.offset(rank_) * segments_.element_bytes);
    const size_t elements = r.bytes / segments_.element_bytes;
    reduce_pair(type_, op_, out, b_.send + r.offset, in.data(), elements);
    finalize_average(type_, op_, out, elements, segments_.parts);
  }

 private:
  LentBuffers b_;
  DataType type_;
  ReduceOp op_;
};

// All-gather: every item is sent from the receive buffer, where this rank's own block already
// lies (all_gather copies it there first) and each arriving block is copied.
class AllGatherRing final : public SegmentRing {
 public:
  AllGatherRing(const Segments& s, int rank, const LentBuffers& b)
      : SegmentRing(s, rank, s.parts - 1, 0), b_(b) {}

  Item inject(uint64_t chunk, uint8_t*) override {
    return from_recv_range(b_, range(rank_, chunk));
  }
  Item forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t*) override {
    const ByteRange r = range(receive_segment(step), chunk);
    std::memcpy(b_.recv + r.offset, in.data(), r.bytes);
    return from_recv_range(b_, r);
  }
  void finish(uint64_t chunk, std::span<const uint8_t> in) override {
    const ByteRange r = range(receive_segment(steps_ - 1), chunk);
    std::memcpy(b_.recv + r.offset, in.data(), r.bytes);
  }

 private:
  LentBuffers b_;
};

// Lends the collective's buffers to the transport and runs the ring over them; returns once
// every write from them has completed.
template <typename Job, typename... Args>
Result<Ok, Error> run_lent_ring(Transport& transport, const Segments& segments, int rank,
                                LentBuffers buffers, size_t send_bytes, size_t recv_bytes,
                                Args... args) {
  LentMemory lent(transport);
  auto lent_ok = detail::lend(lent, buffers, send_bytes, recv_bytes);
  if (!lent_ok.ok()) return lent_ok;
  Job job(segments, rank, buffers, args...);
  const int ranks = transport.ranks();
  return lent.finish(
      detail::run_ring(transport, job, wrap(rank + 1, ranks), wrap(rank - 1, ranks)));
}

}  // namespace

Result<Ok, Error> Communicator::all_reduce(const void* send, void* recv, size_t count,
                                           DataType type, ReduceOp op,
                                           AllReduceAlgorithm algorithm) {
  transport_->begin("all_reduce");
  if (failed()) return Err{failure()};
  const size_t bytes = count * size_of(type);
  if (count == 0) return Ok{};
  if (ranks_ == 1) {
    if (send != recv) std::memmove(recv, send, bytes);
    return Ok{};
  }
  if (algorithm == AllReduceAlgorithm::kRecursiveDoubling ||
      (algorithm == AllReduceAlgorithm::kAuto && bytes <= options_.small_max_bytes))
    return all_reduce_recursive(static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv),
                                count, type, op);
  if (algorithm == AllReduceAlgorithm::kDirect)
    return all_reduce_direct(static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv), count,
                             type, op);
  const Segments segments = make_segments(count, ranks_, type, options_.chunk_bytes);
  const LentBuffers buffers{static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv)};
  return run_lent_ring<AllReduceRing>(*transport_, segments, rank_, buffers, bytes, bytes, type,
                                      op);
}

Result<Ok, Error> Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count,
                                               DataType type, ReduceOp op) {
  transport_->begin("reduce_scatter");
  if (failed()) return Err{failure()};
  if (recv_count == 0) return Ok{};
  if (ranks_ == 1) {
    if (send != recv) std::memmove(recv, send, recv_count * size_of(type));
    return Ok{};
  }
  const Segments segments =
      make_segments(recv_count * static_cast<size_t>(ranks_), ranks_, type, options_.chunk_bytes);
  const LentBuffers buffers{static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv)};
  const size_t recv_bytes = recv_count * size_of(type);
  return run_lent_ring<ReduceScatterRing>(*transport_, segments, rank_, buffers,
                                          recv_bytes * static_cast<size_t>(ranks_), 0, type, op);
}

Result<Ok, Error> Communicator::all_gather(const void* send, void* recv, size_t send_count,
                                           DataType type) {
  transport_->begin("all_gather");
  if (failed()) return Err{failure()};
  if (send_count == 0) return Ok{};
  const size_t block_bytes = send_count * size_of(type);
  uint8_t* own = static_cast<uint8_t*>(recv) + static_cast<size_t>(rank_) * block_bytes;
  if (own != send) std::memmove(own, send, block_bytes);
  if (ranks_ == 1) return Ok{};
  const Segments segments =
      make_segments(send_count * static_cast<size_t>(ranks_), ranks_, type, options_.chunk_bytes);
  const LentBuffers buffers{static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv)};
  return run_lent_ring<AllGatherRing>(*transport_, segments, rank_, buffers, 0,
                                      block_bytes * static_cast<size_t>(ranks_));
}

}  // namespace mrc::coll
