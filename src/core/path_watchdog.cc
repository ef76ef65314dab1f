// The watchdog around a path policy (path_watchdog.h).
#include "core/path_watchdog.h"

#include <algorithm>

namespace mrc {

// An epoch starts at an acknowledgement and ends at the first one at least an epoch length
// later; the bytes of the acknowledgement that starts it belong to the epoch before.
void PathWatchdog::on_delivered(uint64_t bytes, Instant now, Duration rtt) {
  inner_->on_delivered(bytes, now, rtt);
  if (!started_) {
    started_ = true;
    epoch_start_ = now;
    return;
  }
  epoch_bytes_ += bytes;
  const int64_t length_ns =
      std::max<int64_t>(int64_t{config_.epoch_rtts} * rtt.ns, config_.min_epoch_ns);
  const int64_t elapsed_ns = (now - epoch_start_).ns;
  if (elapsed_ns < length_ns) return;
  end_epoch(static_cast<double>(epoch_bytes_) / static_cast<double>(elapsed_ns));
  epoch_start_ = now;
  epoch_bytes_ = 0;
}

void PathWatchdog::end_epoch(double bytes_per_ns) {
  if (mode_ == Mode::kRules) {
    if (--rules_epochs_left_ > 0) return;
    baseline_bytes_per_ns_ = bytes_per_ns;
    mode_ = Mode::kPolicy;
    policy_epochs_ = 0;
    bad_ = 0;
    return;
  }
  bad_ = bytes_per_ns < (1 - config_.fall) * baseline_bytes_per_ns_ ? bad_ + 1 : 0;
  if (bad_ >= config_.bad_epochs) {
    ++reverts_;
    mode_ = Mode::kRules;
    rules_epochs_left_ =
        static_cast<uint16_t>(config_.revert_epochs + prng_.below(config_.revert_epochs + 1u));
    return;
  }
  if (++policy_epochs_ >= config_.recalibrate_every) {
    mode_ = Mode::kRules;
    rules_epochs_left_ = 1;
  }
}

}  // namespace mrc
