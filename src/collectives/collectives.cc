// The collectives that are not rings:
//   - direct all-reduce (small messages): every rank writes its vector to every other rank in
//     one round and reduces the n vectors locally in rank order 0..n-1. One network latency
//     instead of the ring's 2(n-1), at (n-1)x the bytes; rank order makes every rank's result
//     bitwise identical (as the ring's is).
//   - broadcast: a pipelined chain root -> root+1 -> ... -> root-1, chunk by chunk, so for
//     large messages each link carries the message once and the time is that of one transfer
//     plus (n-1) chunk latencies.
//   - reduce: the mirror chain root+1 -> ... -> root, each rank adding its input to the
//     partial result as it passes through.
//   Both chains send what already lies in the caller's buffers from there (LentMemory):
//   broadcast the root's send buffer and each forwarder's receive buffer, reduce the first
//   rank's input.
//   - all-to-all: every pair exchanges its block directly, chunk by chunk, all peers at once;
//     chunk c from a peer is consumed only after this rank has sent its own chunk c to that
//     peer, which makes in-place use safe.
//   - barrier: a 0-byte message to every peer, then one from every peer, then the own
//     messages acknowledged.
//   - send/recv: one stream of chunks to or from one peer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/engines.h"

namespace mrc::coll {

namespace {

using detail::wrap;

uint64_t chunks_of(size_t bytes, size_t chunk_bytes) {
  return (bytes + chunk_bytes - 1) / chunk_bytes;
}

// The chain's unit of work: byte ranges of one buffer (chunk_bytes a multiple of the element).
struct ChainGeometry {
  size_t bytes = 0;
  size_t chunk_bytes = 1;
  uint64_t chunks() const { return chunks_of(bytes, chunk_bytes); }
  size_t offset(uint64_t c) const { return c * chunk_bytes; }
  size_t length(uint64_t c) const { return std::min(chunk_bytes, bytes - offset(c)); }
};

// The root sends from its send buffer; a forwarding rank copies each arriving chunk into its
// receive buffer and passes it on from there.
class BroadcastChain final : public detail::ChainJob {
 public:
  BroadcastChain(ChainGeometry g, const detail::LentBuffers& b) : g_(g), b_(b) {}
  uint64_t chunks() const override { return g_.chunks(); }
  size_t receive_bytes(uint64_t c) const override { return g_.length(c); }
  detail::Item inject(uint64_t c, uint8_t*) override {
    return b_.from_send(g_.offset(c), g_.length(c));
  }
  detail::Item forward(uint64_t c, std::span<const uint8_t> in, uint8_t*) override {
    std::memcpy(b_.recv + g_.offset(c), in.data(), in.size());
    return b_.from_recv(g_.offset(c), in.size());
  }
  void finish(uint64_t c, std::span<const uint8_t> in) override {
    std::memcpy(b_.recv + g_.offset(c), in.data(), in.size());
  }

 private:
  ChainGeometry g_;
  detail::LentBuffers b_;
};

// The chain's first rank sends its input from the send buffer; the partial sums go through
// the send slots.
class ReduceChain final : public detail::ChainJob {
 public:
  ReduceChain(ChainGeometry g, const detail::LentBuffers& b, DataType type, ReduceOp op, int ranks)
      : g_(g), b_(b), type_(type), op_(op), ranks_(ranks) {}
  uint64_t chunks() const override { return g_.chunks(); }
  size_t receive_bytes(uint64_t c) const override { return g_.length(c); }
  detail::Item inject(uint64_t c, uint8_t*) override {
    return b_.from_send(g_.offset(c), g_.length(c));
  }
  detail::Item forward(uint64_t c, std::span<const uint8_t> in, uint8_t* slot) override {
    reduce_pair(type_, op_, slot, b_.send + g_.offset(c), in.data(), in.size() / size_of(type_));
    return {static_cast<uint32_t>(in.size())};
  }
  void finish(uint64_t c, std::span<const uint8_t> in) override {
    uint8_t* out = b_.recv + g_.offset(c);
    const size_t elements = in.size() / size_of(type_);
    reduce_pair(type_, op_, out, b_.send + g_.offset(c), in.data(), elements);
    finalize_average(type_, op_, out, elements, ranks_);
  }

 private:
  ChainGeometry g_;
  detail::LentBuffers b_;
  DataType type_;
  ReduceOp op_;
  int ranks_;
};

// Lends `buffers` as given, then runs a Job(geometry, buffers, args...) at chain position
// `position` (0: it starts the chain; ranks-1: it ends it); returns once every write from the
// buffers has completed.
template <typename Job, typename... Args>
Result<Ok, Error> run_lent_chain(Transport& transport, int position, ChainGeometry geometry,
                                 detail::LentBuffers buffers, size_t send_bytes, size_t recv_bytes,
                                 Args... args) {
  LentMemory lent(transport);
  auto lent_ok = detail::lend(lent, buffers, send_bytes, recv_bytes);
  if (!lent_ok.ok()) return lent_ok;
  Job job(geometry, buffers, args...);
  const int rank = transport.rank(), ranks = transport.ranks();
  return lent.finish(detail::run_chain(transport, job, position == 0 ? -1 : wrap(rank - 1, ranks),
                                       position == ranks - 1 ? -1 : wrap(rank + 1, ranks)));
}

}  // namespace

Result<Ok, Error> Communicator::all_reduce_direct(const uint8_t* send, uint8_t* recv, size_t count,
                                                  DataType type, ReduceOp op) {
  const size_t element_bytes = size_of(type);
  const size_t chunk_bytes = options_.chunk_bytes / element_bytes * element_bytes;
  const size_t bytes = count * element_bytes;
  const uint64_t chunks = chunks_of(bytes, chunk_bytes);
  std::vector<uint64_t> sent(static_cast<size_t>(ranks_), 0);
  sent[rank_] = chunks;
  for (uint64_t reduced = 0; reduced < chunks;) {
    bool moved = false;
    for (int p = 0; p < ranks_; ++p) {
      for (uint8_t* slot; sent[p] < chunks && (slot = transport_->send_slot(p)) != nullptr;
           ++sent[p]) {
        const size_t offset = sent[p] * chunk_bytes;
        const size_t length = std::min(chunk_bytes, bytes - offset);
        std::memcpy(slot, send + offset, length);
        auto r = transport_->post(p, static_cast<uint32_t>(length));
        if (!r.ok()) return r;
        moved = true;
      }
    }
    bool ready = true;
    for (int p = 0; p < ranks_; ++p)
      ready = ready && sent[p] > reduced && (p == rank_ || transport_->front(p).has_value());
    if (ready) {
      auto r = direct_round(send, recv, count, type, op, reduced++);
      if (!r.ok()) return r;
      moved = true;
    }
    auto r = transport_->progress(!moved);
    if (!r.ok()) return r;
  }
  return Ok{};
}

Result<Ok, Error> Communicator::direct_round(const uint8_t* send, uint8_t* recv, size_t count,
                                             DataType type, ReduceOp op, uint64_t chunk) {
  const size_t element_bytes = size_of(type);
  const size_t chunk_elements = options_.chunk_bytes / element_bytes;
  const size_t first = chunk * chunk_elements;
  const size_t elements = std::min(chunk_elements, count - first);
  const size_t length = elements * element_bytes;
  for (int p = 0; p < ranks_; ++p) {
    if (p != rank_ && transport_->front(p)->size() != length)
      return Err{transport_->mismatch(p, transport_->front(p)->size(), length)};
  }
  // Our own input goes to scratch first: in place, `recv` overwrites it.
  std::memcpy(scratch_.get(), send + first * element_bytes, length);
  uint8_t* target = recv + first * element_bytes;
  for (int p = 0; p < ranks_; ++p) {
    const uint8_t* data = p == rank_ ? scratch_.get() : transport_->front(p)->data();
    if (p == 0) {
      std::memcpy(target, data, length);
    } else {
      reduce_into(type, op, target, data, elements);
    }
  }
  finalize_average(type, op, target, elements, ranks_);
  for (int p = 0; p < ranks_; ++p)
    if (p != rank_) transport_->release(p);
  return Ok{};
}

Result<Ok, Error> Communicator::broadcast(const void* send, void* recv, size_t count, DataType type,
                                          int root) {
  transport_->begin("broadcast");
  if (failed()) return Err{failure()};
  auto valid = check_root(root);
  if (!valid.ok()) return valid;
  const size_t bytes = count * size_of(type);
  if (rank_ == root && send != recv && bytes > 0) std::memmove(recv, send, bytes);
  if (bytes == 0 || ranks_ == 1) return Ok{};
  const int position = wrap(rank_ - root, ranks_);
  // The root sends from `send`, a forwarding rank from `recv`, the chain's end nothing.
  return run_lent_chain<BroadcastChain>(
      *transport_, position, {bytes, options_.chunk_bytes},
      {static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv)}, position == 0 ? bytes : 0,
      position == 0 || position == ranks_ - 1 ? 0 : bytes);
}

Result<Ok, Error> Communicator::reduce(const void* send, void* recv, size_t count, DataType type,
                                       ReduceOp op, int root) {
  transport_->begin("reduce");
  if (failed()) return Err{failure()};
  auto valid = check_root(root);
  if (!valid.ok()) return valid;
  const size_t bytes = count * size_of(type);
  if (bytes == 0) return Ok{};
  if (ranks_ == 1) {
    if (send != recv) std::memmove(recv, send, bytes);
    return Ok{};
  }
  const size_t chunk_bytes = options_.chunk_bytes / size_of(type) * size_of(type);
  const int position = wrap(rank_ - root - 1, ranks_);
  // Only the chain's first rank sends from its own memory (its input).
  return run_lent_chain<ReduceChain>(
      *transport_, position, {bytes, chunk_bytes},
      {static_cast<const uint8_t*>(send), static_cast<uint8_t*>(recv)}, position == 0 ? bytes : 0,
      0, type, op, ranks_);
}

Result<Ok, Error> Communicator::all_to_all(const void* send_buffer, void* recv_buffer,
                                           size_t count_per_rank, DataType type) {
  transport_->begin("all_to_all");
  if (failed()) return Err{failure()};
  const auto* send = static_cast<const uint8_t*>(send_buffer);
  auto* recv = static_cast<uint8_t*>(recv_buffer);
  const size_t block = count_per_rank * size_of(type);
  if (block == 0) return Ok{};
  const size_t own = static_cast<size_t>(rank_) * block;
  if (send != recv) std::memmove(recv + own, send + own, block);
  const ChainGeometry g{block, options_.chunk_bytes};
  const uint64_t chunks = g.chunks();
  std::vector<uint64_t> sent(static_cast<size_t>(ranks_), chunks), got(sent);
  for (int p = 0; p < ranks_; ++p)
    if (p != rank_) sent[p] = got[p] = 0;
  for (uint64_t remaining = 2 * chunks * static_cast<uint64_t>(ranks_ - 1); remaining > 0;) {
    bool moved = false;
    for (int p = 0; p < ranks_; ++p) {
      const size_t base = static_cast<size_t>(p) * block;
      for (uint8_t* slot; sent[p] < chunks && (slot = transport_->send_slot(p)) != nullptr;
           ++sent[p], --remaining) {
        std::memcpy(slot, send + base + g.offset(sent[p]), g.length(sent[p]));
        auto r = transport_->post(p, static_cast<uint32_t>(g.length(sent[p])));
        if (!r.ok()) return r;
        moved = true;
      }
      for (; got[p] < sent[p] && transport_->front(p); ++got[p], --remaining) {
        auto in = transport_->front(p);
        if (in->size() != g.length(got[p]))
          return Err{transport_->mismatch(p, in->size(), g.length(got[p]))};
        std::memcpy(recv + base + g.offset(got[p]), in->data(), in->size());
        transport_->release(p);
        moved = true;
      }
    }
    auto r = transport_->progress(!moved);
    if (!r.ok()) return r;
  }
  return Ok{};
}

Result<Ok, Error> Communicator::barrier() {
  transport_->begin("barrier");
  if (failed()) return Err{failure()};
  std::vector<uint8_t> sent(static_cast<size_t>(ranks_), 0), got(sent);
  sent[rank_] = got[rank_] = 1;
  for (int remaining = 2 * (ranks_ - 1); remaining > 0;) {
    bool moved = false;
    for (int p = 0; p < ranks_; ++p) {
      if (!sent[p] && transport_->send_slot(p) != nullptr) {
        auto r = transport_->post(p, 0);
        if (!r.ok()) return r;
        sent[p] = 1;
        --remaining;
        moved = true;
      }
      if (!got[p] && transport_->front(p)) {
        if (transport_->front(p)->size() != 0)
          return Err{transport_->mismatch(p, transport_->front(p)->size(), 0)};
        transport_->release(p);
        got[p] = 1;
        --remaining;
        moved = true;
      }
    }
    auto r = transport_->progress(!moved);
    if (!r.ok()) return r;
  }
  // Every barrier message this rank sent has been acknowledged when the barrier returns, so a
  // rank may exit right after it without leaving a peer waiting for its message. (Its peers
  // acknowledge at once: a barrier message is one packet that requests an ACK, answered by the
  // engine before the application sees it.)
  return transport_->settle_data();
}

Result<Ok, Error> Communicator::check_peer(const char* call, int peer) const {
  if (failed()) return Err{failure()};
  if (peer < 0 || peer >= ranks_ || peer == rank_)
    return fail(Errc::kInvalidArgument,
                std::string(call) + ": peer " + std::to_string(peer) + " is not another rank");
  return Ok{};
}

Result<Ok, Error> Communicator::finish_point_to_point() {
  std::vector<PointToPoint::Ticket> done;
  while (!p2p_->idle()) {
    auto moved = p2p_->step(done);
    if (!moved.ok()) return Err{moved.error()};
    auto r = transport_->progress(!moved.value());
    if (!r.ok()) return r;
  }
  return Ok{};
}

Result<Ok, Error> Communicator::send(const void* data, size_t count, DataType type, int peer) {
  transport_->begin("send");
  auto checked = check_peer("send", peer);
  if (!checked.ok()) return checked;
  p2p_->add_send(data, count * size_of(type), peer);
  return finish_point_to_point();
}

Result<Ok, Error> Communicator::recv(void* data, size_t count, DataType type, int peer) {
  transport_->begin("recv");
  auto checked = check_peer("recv", peer);
  if (!checked.ok()) return checked;
  p2p_->add_receive(data, count * size_of(type), peer);
  return finish_point_to_point();
}

}  // namespace mrc::coll
