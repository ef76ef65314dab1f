// AIMD baseline and the controller factory.
#include "core/cc/aimd.h"

#include <algorithm>

#include "core/cc/nscc.h"
#include "mrc/assert.hpp"

namespace mrc {

Aimd::Aimd(uint64_t initial, uint64_t min_bytes, uint64_t max_bytes, uint32_t mtu)
    : window_bytes_(static_cast<double>(initial)),
      min_bytes_(static_cast<double>(min_bytes)),
      max_bytes_(static_cast<double>(max_bytes)),
      mtu_bytes_(mtu) {
  MRC_ASSERT(min_bytes > 0 && min_bytes <= max_bytes && initial > 0 && mtu > 0);
  // The window lives in [min, max] from the start, as NSCC's does (QpConfig::validate does not
  // bound the initial window).
  window_bytes_ = std::clamp(window_bytes_, min_bytes_, max_bytes_);
}

void Aimd::on_ack(const AckSample& s) {
  if (s.rtt.ns > 0) srtt_ns_ = srtt_ns_ == 0 ? s.rtt.ns : (7 * srtt_ns_ + s.rtt.ns) / 8;
  if (s.ecn) {
    decrease(s.now);
    return;
  }
  window_bytes_ += mtu_bytes_ * static_cast<double>(s.acked_bytes) / window_bytes_;
  window_bytes_ = std::min(window_bytes_, max_bytes_);
  // The window stays finite and in [min, max]: a NaN or zero would stop the QP.
  MRC_ASSERT(window_bytes_ >= min_bytes_ && window_bytes_ <= max_bytes_);
}

void Aimd::decrease(Instant now) {
  if (now - last_decrease_ < Duration{srtt_ns_}) return;
  window_bytes_ = std::max(window_bytes_ / 2, min_bytes_);
  last_decrease_ = now;
  MRC_ASSERT(window_bytes_ >= min_bytes_ && window_bytes_ <= max_bytes_);
}

void Aimd::on_timeout(Instant now) {
  window_bytes_ = min_bytes_;
  last_decrease_ = now;
  MRC_ASSERT(window_bytes_ > 0);
}

std::unique_ptr<CongestionController> make_congestion_controller(const QpConfig& config) {
  switch (config.cc) {
    case CcAlgorithm::kNscc:
      return std::make_unique<Nscc>(config.nscc, config.mtu_bytes);
    case CcAlgorithm::kAimd:
      return std::make_unique<Aimd>(config.nscc.initial_window_bytes, config.nscc.min_window_bytes,
                                    config.nscc.max_window_bytes, config.mtu_bytes);
    case CcAlgorithm::kFixed:
      return std::make_unique<FixedWindow>(config.fixed_window_bytes);
  }
  return nullptr;
}

}  // namespace mrc
