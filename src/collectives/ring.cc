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
// In-place use is safe because, for every chunk, a rank reads its input of a segment (inject
// or reduce) at an earlier step than it writes the output of that segment.
#include <algorithm>
#include <cstring>

#include "collectives/communicator.h"
#include "collectives/engines.h"

namespace mrc::coll {

namespace {

using detail::ByteRange;
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

class AllReduceRing final : public SegmentRing {
 public:
  AllReduceRing(const Segments& s, int rank, const uint8_t* send, uint8_t* recv, DataType type,
                ReduceOp op)
      : SegmentRing(s, rank, 2 * (s.parts - 1), 0),
        send_(send),
        recv_(recv),
        type_(type),
        op_(op) {}

  uint32_t inject(uint64_t chunk, uint8_t* slot) override {
    const ByteRange r = range(send_segment(0), chunk);
    std::memcpy(slot, send_ + r.offset, r.bytes);
    return static_cast<uint32_t>(r.bytes);
  }
  uint32_t forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) override {
    const ByteRange r = range(receive_segment(step), chunk);
    const int reduce_steps = segments_.parts - 1;
    if (step < reduce_steps) {
      const size_t elements = r.bytes / segments_.element_bytes;
      reduce_pair(type_, op_, slot, send_ + r.offset, in.data(), elements);
      if (step == reduce_steps - 1) {  // fully reduced here: keep it and start the all-gather
        finalize_average(type_, op_, slot, elements, segments_.parts);
        std::memcpy(recv_ + r.offset, slot, r.bytes);
      }
    } else {
      std::memcpy(recv_ + r.offset, in.data(), r.bytes);
      std::memcpy(slot, in.data(), r.bytes);
    }
    return static_cast<uint32_t>(r.bytes);
  }
  void finish(uint64_t chunk, std::span<const uint8_t> in) override {
    const ByteRange r = range(receive_segment(steps_ - 1), chunk);
    std::memcpy(recv_ + r.offset, in.data(), r.bytes);
  }

 private:
  const uint8_t* send_;
  uint8_t* recv_;
  DataType type_;
  ReduceOp op_;
};

// Reduce-scatter: segment r ends at rank r, so step k sends segment r-k-1.
class ReduceScatterRing final : public SegmentRing {
 public:
  ReduceScatterRing(const Segments& s, int rank, const uint8_t* send, uint8_t* recv, DataType type,
                    ReduceOp op)
      : SegmentRing(s, rank, s.parts - 1, -1), send_(send), recv_(recv), type_(type), op_(op) {}

  uint32_t inject(uint64_t chunk, uint8_t* slot) override {
    const ByteRange r = range(send_segment(0), chunk);
    std::memcpy(slot, send_ + r.offset, r.bytes);
    return static_cast<uint32_t>(r.bytes);
  }
  uint32_t forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) override {
    const ByteRange r = range(receive_segment(step), chunk);
    reduce_pair(type_, op_, slot, send_ + r.offset, in.data(), r.bytes / segments_.element_bytes);
    return static_cast<uint32_t>(r.bytes);
  }
  void finish(uint64_t chunk, std::span<const uint8_t> in) override {
    const ByteRange r = range(rank_, chunk);
    uint8_t* out = recv_ + (r.offset - segments_.offset(rank_) * segments_.element_bytes);
    const size_t elements = r.bytes / segments_.element_bytes;
    reduce_pair(type_, op_, out, send_ + r.offset, in.data(), elements);
    finalize_average(type_, op_, out, elements, segments_.parts);
  }

 private:
  const uint8_t* send_;
  uint8_t* recv_;
  DataType type_;
  ReduceOp op_;
};

class AllGatherRing final : public SegmentRing {
 public:
  AllGatherRing(const Segments& s, int rank, const uint8_t* send, uint8_t* recv)
      : SegmentRing(s, rank, s.parts - 1, 0), send_(send), recv_(recv) {}

  uint32_t inject(uint64_t chunk, uint8_t* slot) override {
    const ByteRange r = range(rank_, chunk);
    std::memcpy(slot, send_ + (r.offset - segments_.offset(rank_) * segments_.element_bytes),
                r.bytes);
    return static_cast<uint32_t>(r.bytes);
  }
  uint32_t forward(int step, uint64_t chunk, std::span<const uint8_t> in, uint8_t* slot) override {
    const ByteRange r = range(receive_segment(step), chunk);
    std::memcpy(recv_ + r.offset, in.data(), r.bytes);
    std::memcpy(slot, in.data(), r.bytes);
    return static_cast<uint32_t>(r.bytes);
  }
  void finish(uint64_t chunk, std::span<const uint8_t> in) override {
    const ByteRange r = range(receive_segment(steps_ - 1), chunk);
    std::memcpy(recv_ + r.offset, in.data(), r.bytes);
  }

 private:
  const uint8_t* send_;
  uint8_t* recv_;
};

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
  if (algorithm == AllReduceAlgorithm::kDirect ||
      (algorithm == AllReduceAlgorithm::kAuto && bytes <= options_.direct_max_bytes))
    return all_reduce_direct(static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv), count,
                             type, op);
  const Segments segments = make_segments(count, ranks_, type, options_.chunk_bytes);
  AllReduceRing job(segments, rank_, static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv),
                    type, op);
  return detail::run_ring(*transport_, job, wrap(rank_ + 1, ranks_), wrap(rank_ - 1, ranks_));
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
  ReduceScatterRing job(segments, rank_, static_cast<const uint8_t*>(send),
                        static_cast<uint8_t*>(recv), type, op);
  return detail::run_ring(*transport_, job, wrap(rank_ + 1, ranks_), wrap(rank_ - 1, ranks_));
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
  AllGatherRing job(segments, rank_, static_cast<const uint8_t*>(send),
                    static_cast<uint8_t*>(recv));
  return detail::run_ring(*transport_, job, wrap(rank_ + 1, ranks_), wrap(rank_ - 1, ranks_));
}

}  // namespace mrc::coll
