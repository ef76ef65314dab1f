// Ring and chain pipelines over the transport (see engines.h for the patterns and why they
// cannot deadlock). Each loop does every step it can without waiting, and only when nothing
// moved blocks in Transport::progress(), whose deadline turns a stall into an error.
#include "collectives/engines.h"

#include <algorithm>
#include <vector>

namespace mrc::coll::detail {

size_t Segments::size(int part) const {
  const size_t base = count / static_cast<size_t>(parts);
  return base + (static_cast<size_t>(part) < count % static_cast<size_t>(parts) ? 1 : 0);
}

size_t Segments::offset(int part) const {
  const size_t p = static_cast<size_t>(part);
  return p * (count / static_cast<size_t>(parts)) + std::min(p, count % static_cast<size_t>(parts));
}

uint64_t Segments::chunks() const {
  const size_t largest = size(0);
  return std::max<uint64_t>(1, (largest + chunk_elements - 1) / chunk_elements);
}

ByteRange Segments::chunk(int part, uint64_t c) const {
  const size_t length = size(part);
  const size_t begin = std::min<size_t>(c * chunk_elements, length);
  const size_t end = std::min<size_t>((c + 1) * chunk_elements, length);
  return {(offset(part) + begin) * element_bytes, (end - begin) * element_bytes};
}

namespace {

struct Cursor {
  uint64_t chunk = 0;
  int step = 0;
  void advance(int steps) {
    if (++step == steps) {
      step = 0;
      ++chunk;
    }
  }
};

}  // namespace

namespace {

Result<Ok, Error> post_item(Transport& transport, int peer, const Item& item) {
  return item.lent != nullptr ? transport.post_from(peer, item.lent, item.bytes, item.lkey)
                              : transport.post(peer, item.bytes);
}

}  // namespace

Result<Ok, Error> lend(LentMemory& lent, LentBuffers& b, size_t send_bytes, size_t recv_bytes) {
  if (send_bytes > 0) {
    auto key = lent.lend(b.send, send_bytes);
    if (!key.ok()) return Err{key.error()};
    b.send_lkey = key.value();
  }
  if (recv_bytes > 0) {
    auto key = lent.lend(b.recv, recv_bytes);
    if (!key.ok()) return Err{key.error()};
    b.recv_lkey = key.value();
  }
  return Ok{};
}

Result<Ok, Error> run_ring(Transport& transport, RingJob& job, int next, int previous) {
  const int steps = job.steps();
  const uint64_t chunks = job.chunks();
  MRC_ASSERT(steps >= 1 && next != transport.rank() && previous != transport.rank());
  const int overwrite_step = job.overwrites_inject_at();
  std::vector<uint64_t> injected(overwrite_step >= 0 ? chunks : 0);  // chunk -> its message
  Cursor sending, receiving;
  while (sending.chunk < chunks || receiving.chunk < chunks) {
    bool moved = false;
    while (sending.chunk < chunks && sending.step == 0) {  // inject from local data
      uint8_t* slot = transport.send_slot(next);
      if (slot == nullptr) break;
      if (!injected.empty()) injected[sending.chunk] = transport.sent(next);
      auto r = post_item(transport, next, job.inject(sending.chunk, slot));
      if (!r.ok()) return r;
      sending.advance(steps);
      moved = true;
    }
    while (receiving.chunk < chunks) {
      auto in = transport.front(previous);
      if (!in) break;
      const size_t expected = job.receive_bytes(receiving.step, receiving.chunk);
      if (in->size() != expected) return Err{transport.mismatch(previous, in->size(), expected)};
      if (receiving.step == overwrite_step &&
          !transport.write_done(next, injected[receiving.chunk]))
        break;
      if (receiving.step == steps - 1) {
        job.finish(receiving.chunk, *in);
      } else {
        // The item this produces must be the next one in the send stream.
        if (sending.chunk != receiving.chunk || sending.step != receiving.step + 1) break;
        uint8_t* slot = transport.send_slot(next);
        if (slot == nullptr) break;
        auto r =
            post_item(transport, next, job.forward(receiving.step, receiving.chunk, *in, slot));
        if (!r.ok()) return r;
        sending.advance(steps);
      }
      transport.release(previous);
      receiving.advance(steps);
      moved = true;
    }
    auto r = transport.progress(!moved);
    if (!r.ok()) return r;
  }
  return Ok{};
}

Result<Ok, Error> run_chain(Transport& transport, ChainJob& job, int previous, int next) {
  const uint64_t chunks = job.chunks();
  uint64_t done = 0;  // chunks injected, forwarded or finished
  while (done < chunks) {
    bool moved = false;
    while (done < chunks) {
      uint8_t* slot = next >= 0 ? transport.send_slot(next) : nullptr;
      if (previous < 0) {  // the start of the chain
        if (slot == nullptr) break;
        auto r = post_item(transport, next, job.inject(done, slot));
        if (!r.ok()) return r;
      } else {
        auto in = transport.front(previous);
        if (!in || (next >= 0 && slot == nullptr)) break;
        const size_t expected = job.receive_bytes(done);
        if (in->size() != expected) return Err{transport.mismatch(previous, in->size(), expected)};
        if (next >= 0) {
          auto r = post_item(transport, next, job.forward(done, *in, slot));
          if (!r.ok()) return r;
        } else {
          job.finish(done, *in);
        }
        transport.release(previous);
      }
      ++done;
      moved = true;
    }
    auto r = transport.progress(!moved);
    if (!r.ok()) return r;
  }
  return Ok{};
}

}  // namespace mrc::coll::detail
