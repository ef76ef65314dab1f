// Receiver-side incast detection, for the SACK's rcv_cwnd_pen (MRC carries the field; how it is
// used is not public, so these semantics are ours).
//
// A trimmed data packet means a queue on its path overflowed. When packets of two or more of
// this endpoint's QPs are trimmed within a short window, the overflowing queue is most likely
// the one their paths share: the last hop into this host, an incast. A trim on a fabric path,
// where sprayed packets of unrelated flows collide, reaches each flow's own receiver, which
// sees one QP trimmed. MRC deploys no ECN on the last hop, so without this NSCC has no
// multiplicative decrease there; while an incast is seen, the endpoint's SACKs carry a
// penalty and the senders take their trims as a rate signal (Nscc::on_trim).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mrc/types.hpp"

namespace mrc {

class IncastDetector {
 public:
  static constexpr size_t kRecent = 16;  // trims remembered (a bounded ring)

  // A data packet of QP `qp` (any id unique within the endpoint) arrived trimmed at `now`.
  void note_trim(Instant now, uint32_t qp, Duration window);
  // Whether trims of two or more QPs fell within `window` of each other, up to `window` ago.
  bool incast(Instant now) const { return now < incast_until_; }

 private:
  struct Trim {
    Instant at{INT64_MIN / 2};
    uint32_t qp = UINT32_MAX;
  };
  std::array<Trim, kRecent> recent_{};
  size_t next_ = 0;
  Instant incast_until_{INT64_MIN / 2};
};

}  // namespace mrc
