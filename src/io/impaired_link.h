// The datagram impairments (mrc/datapath.hpp Impairment: drop, delay, reorder) as a decorator
// around any plane's link (backend.h), off by default, so faults can be shown without root and
// the datapath itself has no code for them. Each datagram added is, in turn:
//   - dropped with probability `drop` (counted as the plane's impairment drops);
//   - else held for `delay`, plus a uniform [0, reorder_delay] with probability `reorder`, and
//     sent when the host releases it (release(), at or after its time; lost if the plane is
//     down then);
//   - else passed on at once.
// The links of a host share one random sequence (ImpairmentDraws, seeded by Impairment::seed),
// drawn in the order the host adds datagrams across its planes: the same seed, the same
// decisions. Held datagrams are copies, released in order of time (then of holding).
#pragma once

#include <memory>
#include <queue>
#include <vector>

#include "io/backend.h"
#include "mrc/datapath.hpp"
#include "util/prng.h"

namespace mrc::io {

// The random draws of a host's impairments, shared by its planes' links.
struct ImpairmentDraws {
  explicit ImpairmentDraws(const Impairment& i) : impairment(i), prng(i.seed) {}
  Impairment impairment;
  Prng prng;
  uint64_t held = 0;  // datagrams held so far, across planes: the tie-break of equal times
};

// Whether `i` does anything to datagrams (the plane schedule and flaps are the host's).
bool impairs_datagrams(const Impairment& i);

class ImpairedLink final : public LinkDecorator {
 public:
  ImpairedLink(std::unique_ptr<PlaneLink> inner, std::shared_ptr<ImpairmentDraws> draws)
      : LinkDecorator(std::move(inner)), draws_(std::move(draws)) {}

  std::span<uint8_t> space() override { return written_at_ = inner().space(); }
  // REQUIRES: the datagram was written at space().
  void add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
           TxOutcome& out) override;
  Instant next_release() const override;
  bool release(Instant now, bool send, TxOutcome& out) override;
  void add_counters(UdpPlaneStats& stats) const override;

 private:
  struct Held {
    Instant release;
    uint64_t sequence;
    uint16_t source_port;
    SocketAddress to;
    std::vector<uint8_t> bytes;
    bool operator>(const Held& o) const {
      return release != o.release ? release > o.release : sequence > o.sequence;
    }
  };
  // Sends a released datagram through the wrapped link at once.
  void send_held(const Held& h, Instant now, TxOutcome& out);

  std::shared_ptr<ImpairmentDraws> draws_;
  std::span<uint8_t> written_at_;  // where the last space() pointed
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held_;
  uint64_t drops_ = 0;
};

}  // namespace mrc::io
