// A minimal two-endpoint harness for engine tests: endpoints A and B joined plane by plane by
// ideal links with a fixed one-way delay, driven in virtual time. A `filter` hook can drop,
// mark or rewrite datagrams in flight, a `hold` hook delay one. The real fault simulator is in
// src/sim; this exists so core tests do not depend on it.
#pragma once

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "core/endpoint.h"

namespace mrc::test {

struct InFlight {
  Instant arrive;
  int to;  // 0 = A, 1 = B
  std::vector<uint8_t> bytes;
  RxMeta meta;
};

// A QP configuration small enough for fast tests: 16 EVs, 512-PSN windows, 262 us ACK timeout.
inline QpConfig small_config() {
  QpConfig c;
  c.ev_count = 16;
  c.ev_min_active = 4;
  c.mpr = 4;
  c.mpr_dest = 4;
  c.timeout = 8;
  return c;
}

// Return false to drop. May modify bytes and meta.
using Filter =
    std::function<bool(int from, std::vector<uint8_t>& bytes, RxMeta& meta, const TxMeta& tx)>;
// Extra one-way delay for one datagram (a slow path or a queue it waited in).
using Delay =
    std::function<Duration(int from, const std::vector<uint8_t>& bytes, const TxMeta& tx)>;

struct Side {
  std::unique_ptr<Endpoint> endpoint;
  uint32_t pd = 0;
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  QueuePair* qp = nullptr;
  std::vector<uint8_t> source;
  std::vector<uint8_t> target;
  MemoryRegionInfo source_mr;
  MemoryRegionInfo target_mr;
};

class Pair {
 public:
  Pair(int planes, const QpConfig& config, size_t buffer_bytes, uint64_t seed = 1,
       Duration delay = Duration{2000}, bool icrc_offload = false,
       RegionKind regions = RegionKind::kMemory)
      : planes_(planes), delay_(delay) {
    for (int i = 0; i < 2; ++i) {
      Side& s = side[i];
      s.endpoint =
          std::make_unique<Endpoint>(EndpointConfig{planes, 64, 64, seed + i, icrc_offload});
      s.pd = s.endpoint->memory().alloc_pd();
      s.send_cq = s.endpoint->create_cq(4096);
      s.recv_cq = s.endpoint->create_cq(4096);
      // One configuration for both ends: in secure mode it holds the connection's two
      // secrets as A sees them, so B sends under A's receive secret.
      QpConfig own = config;
      if (i == 1) std::swap(own.security.send_secret, own.security.receive_secret);
      s.qp = s.endpoint->create_qp(own, s.pd, s.send_cq, s.recv_cq).value();
      s.source.resize(buffer_bytes);
      s.target.assign(buffer_bytes, 0);
      for (size_t k = 0; k < buffer_bytes; ++k)
        s.source[k] = static_cast<uint8_t>(k * 7 + static_cast<size_t>(i) * 13 + 1);
      const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
      s.source_mr = s.endpoint->memory()
                        .register_region(s.pd, s.source.data(), buffer_bytes, access, regions)
                        .value();
      s.target_mr = s.endpoint->memory()
                        .register_region(s.pd, s.target.data(), buffer_bytes, access, regions)
                        .value();
    }
    for (int i = 0; i < 2; ++i) {
      Side& s = side[i];
      Side& o = side[1 - i];
      (void)s.qp->to_init();
      (void)s.qp->to_rtr(
          RtrAttributes{o.qp->qpn(), Psn(1000u * (1 - i) + 77), static_cast<uint32_t>(1 - i)});
      (void)s.qp->to_rts(RtsAttributes{Psn(1000u * i + 77)});
    }
  }

  Result<Ok, PostError> write(int from, uint64_t offset, uint64_t length, uint64_t wr_id,
                              bool imm = false, uint32_t immediate = 0) {
    Side& s = side[from];
    Side& o = side[1 - from];
    Sge sge{s.source_mr.address + offset, static_cast<uint32_t>(length), s.source_mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = imm ? SendOpcode::kWriteWithImm : SendOpcode::kWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = o.target_mr.address + offset;
    wr.rkey = o.target_mr.rkey;
    wr.immediate = immediate;
    return s.qp->post_send(wr);
  }

  // Runs until nothing is in flight, nothing wants to send and no deadline is before `until`.
  void run(Instant until) {
    while (now_ < until) {
      pump();
      Instant next = until;
      if (!queue_.empty()) next = std::min(next, queue_.begin()->first.first);
      for (auto& s : side) next = std::min(next, s.endpoint->next_deadline());
      if (queue_.empty() && next >= until) {
        bool busy = false;
        for (auto& s : side) busy |= s.endpoint->wants_to_send(now_);
        if (!busy) {
          now_ = until;
          break;
        }
      }
      now_ = std::max(now_, next);
      deliver_due();
      for (auto& s : side)
        if (s.endpoint->next_deadline() <= now_) s.endpoint->handle_timeout(now_);
    }
  }

  void pump() {
    for (int i = 0; i < 2; ++i) {
      for (int p = 0; p < planes_; ++p) {
        for (int burst = 0; burst < 64; ++burst) {
          TxMeta tx;
          std::vector<uint8_t> buf(wire::kMaxDatagramBytes);
          const size_t n =
              side[i].endpoint->poll_transmit(now_, PlaneId(static_cast<uint8_t>(p)), buf, tx);
          if (n == 0) break;
          buf.resize(n);
          RxMeta rx{tx.plane, tx.ev, false, false, static_cast<uint32_t>(i)};
          ++sent_;
          if (filter && !filter(i, buf, rx, tx)) continue;
          const Duration extra = hold ? hold(i, buf, tx) : Duration{0};
          const Instant arrive =
              now_ + delay_ + extra + Duration{static_cast<int64_t>(serial_++ % 7)};
          queue_.emplace(std::make_pair(arrive, serial_),
                         InFlight{arrive, 1 - i, std::move(buf), rx});
        }
      }
    }
  }

  void deliver_due() {
    while (!queue_.empty() && queue_.begin()->first.first <= now_) {
      InFlight f = std::move(queue_.begin()->second);
      queue_.erase(queue_.begin());
      side[f.to].endpoint->handle_datagram(now_, f.bytes, f.meta);
    }
  }

  std::vector<Completion> drain(int i, bool recv) {
    std::vector<Completion> out(4096);
    CompletionQueue* cq = recv ? side[i].recv_cq : side[i].send_cq;
    out.resize(cq->poll(out));
    return out;
  }

  Instant now() const { return now_; }
  uint64_t sent() const { return sent_; }
  Side side[2];
  Filter filter;
  Delay hold;

 private:
  int planes_;
  Duration delay_;
  Instant now_{0};
  uint64_t serial_ = 0;
  uint64_t sent_ = 0;
  std::map<std::pair<Instant, uint64_t>, InFlight> queue_;
};

}  // namespace mrc::test
