// The watchdog around a path policy (PathWatchdogConfig, the PLB pattern): a policy that makes
// a connection slower than the rules would is handed back to the rules for a while.
//
// Time is cut into epochs of max(epoch_rtts x smoothed RTT, min_epoch_ns), counted from
// acknowledgements; an epoch's goodput is the payload newly acknowledged in it over its length.
// The rules run the first epoch, whose goodput becomes the baseline; then the policy runs. A
// policy epoch whose goodput is below (1 - fall) x the baseline is bad; after bad_epochs bad
// ones in a row the rules take over for a random revert_epochs..2 x revert_epochs epochs (the
// random length keeps the watchdogs of many connections from switching in step), and the last
// of those epochs is the new baseline. Every recalibrate_every policy epochs the rules run one
// epoch, so the baseline follows the load. While the rules run the policy still sees every
// feedback (its state stays current) but its choices and verdicts are not used.
//
// Goodput also falls for reasons no path policy causes (a connection that runs out of data,
// more connections on the same links); a watchdog that reverts then costs only the policy's
// gain for a few epochs, never correctness: the rules are always safe.
#pragma once

#include <cstdint>
#include <memory>

#include "core/path_policy.h"
#include "util/prng.h"

namespace mrc {

class PathWatchdog final : public PathPolicy {
 public:
  PathWatchdog(const PathWatchdogConfig& config, std::unique_ptr<PathPolicy> inner, uint64_t seed)
      : config_(config), inner_(std::move(inner)), prng_(seed) {}

  uint16_t choose(const EvSet& evs, PlaneId plane, uint16_t candidate, uint16_t avoid) override {
    return policy_on() ? inner_->choose(evs, plane, candidate, avoid) : candidate;
  }
  bool skips_on_marks() const override { return !policy_on() || inner_->skips_on_marks(); }
  Verdict judge_loss(const EvSet& evs, uint16_t slot, PlaneId plane) override {
    const Verdict verdict = inner_->judge_loss(evs, slot, plane);  // the policy still observes
    return policy_on() ? verdict : Verdict::kStrike;
  }
  void on_clean_ack(uint16_t slot, PlaneId plane, Instant now) override {
    inner_->on_clean_ack(slot, plane, now);
  }
  void on_mark(uint16_t slot, PlaneId plane) override { inner_->on_mark(slot, plane); }
  void on_timeout(Instant now, Duration rtt) override { inner_->on_timeout(now, rtt); }
  void on_rtt(uint16_t slot, PlaneId plane, Duration rtt) override {
    inner_->on_rtt(slot, plane, rtt);
  }
  void on_retired(uint16_t slot, PlaneId plane) override { inner_->on_retired(slot, plane); }
  void on_delivered(uint64_t bytes, Instant now, Duration rtt) override;
  size_t state_bytes() const override { return sizeof(*this) + inner_->state_bytes(); }

  bool policy_on() const { return mode_ == Mode::kPolicy; }
  uint32_t reverts() const { return reverts_; }
  const PathPolicy& inner() const { return *inner_; }

 private:
  enum class Mode : uint8_t { kRules, kPolicy };
  void end_epoch(double bytes_per_ns);

  PathWatchdogConfig config_;
  std::unique_ptr<PathPolicy> inner_;
  Prng prng_;
  Mode mode_ = Mode::kRules;
  bool started_ = false;
  Instant epoch_start_{0};
  uint64_t epoch_bytes_ = 0;
  double baseline_bytes_per_ns_ = 0;
  uint16_t rules_epochs_left_ = 1;  // the first epoch calibrates
  uint16_t policy_epochs_ = 0;
  uint8_t bad_ = 0;
  uint32_t reverts_ = 0;
};

}  // namespace mrc
