// Prefetch hints: a small table of addresses an endpoint's next event will likely read first,
// which the engine keeps filled in passing (each entry written where that state is touched
// anyway) for a datapath that knows when that event comes and can start loading them before
// it. The simulator does (sim/event_queue.h, "Prefetch"): at a thousand hosts every event's
// data has left the cache since the host's last one. A table per endpoint, given with
// Endpoint::set_prefetch_hints; without one nothing is written. Hints only: any entry may be
// stale or null, and reading them changes nothing.
#pragma once

#include <array>
#include <cstddef>

#include "util/prefetch.h"

namespace mrc {

struct alignas(64) PrefetchHints {
  // What each entry names. One table per endpoint: its QPs overwrite each other's entries, the
  // last writer winning (a table per QP was measured slower: a host's event then prefetched
  // both of a ring host's QPs, twice the lines, most of them for the QP it does not touch).
  static constexpr size_t kEvSlotPlanes = 4;  // planes whose next EV slot is hinted (a run
                                              //   with more gets no slot hints for the rest)
  static constexpr size_t kEvSlot = 0;       // + plane: the EV slot the plane's next packet
                                             //   looks at first
  static constexpr size_t kEvSet = 4;        // that EV set (its rotations)
  static constexpr size_t kRotation = 5;     // its rotation entries at the cursor
  static constexpr size_t kReceiveWord = 6;  // the receive-window word the next packet tests
  static constexpr size_t kSendRecord = 7;   // the send-window record the next new packet writes
  static constexpr size_t kWorkRequest = 8;  // the send-queue slot the next post writes
  static constexpr size_t kResponder = 9;    // + 0..2: the lines of the responder that took the
                                             //   last data packet, after its first
  static constexpr size_t kLastOnEv = 12;    // + plane: the requester's record of the last
                                             //   packet on that EV slot (Requester::ev_last_)
  static constexpr size_t kSize = 16;

  std::array<const void*, kSize> at{};

  static constexpr size_t kUsed = 16;  // the entries above (every one; none left null by design)

  // Prefetches every entry that names something. A prefetch never faults, but null entries (the
  // planes a run does not have) are skipped: that measured 6-10 % faster at 1024 hosts than
  // prefetching address 0 (BENCHMARKS.md, "Session 11"; presumably a page walk each time).
  void prefetch() const {
    for (size_t i = 0; i < kUsed; ++i)
      if (at[i] != nullptr) mrc::prefetch(at[i]);
  }
};

}  // namespace mrc
