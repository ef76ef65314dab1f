// Incast detection: see incast_detector.h. One ring of the last kRecent trims; a new trim
// looks back `window` for a trim of another QP.
#include "core/incast_detector.h"

namespace mrc {

void IncastDetector::note_trim(Instant now, uint32_t qp, Duration window) {
  bool other = false;
  for (const Trim& t : recent_) {
    if (t.qp != qp && t.qp != UINT32_MAX && now - t.at <= window) other = true;
  }
  recent_[next_] = Trim{now, qp};
  next_ = (next_ + 1) % kRecent;
  if (other) incast_until_ = now + window;
}

}  // namespace mrc
