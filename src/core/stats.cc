// RTT statistics (min/avg/max and the RFC 6298 smoothed RTT and variation) and names.
#include "mrc/stats.hpp"

#include <algorithm>
#include <cstdlib>

namespace mrc {

void RttStats::add(int64_t rtt_ns) {
  if (samples == 0) {
    min_ns = max_ns = smoothed_ns = rtt_ns;
    variation_ns = rtt_ns / 2;
  } else {
    min_ns = std::min(min_ns, rtt_ns);
    max_ns = std::max(max_ns, rtt_ns);
    variation_ns = (3 * variation_ns + std::llabs(smoothed_ns - rtt_ns)) / 4;
    smoothed_ns = (7 * smoothed_ns + rtt_ns) / 8;
  }
  sum_ns += rtt_ns;
  ++samples;
}

const char* to_string(SecurityDrop d) {
  switch (d) {
    case SecurityDrop::kPlainToSecure:
      return "plain_to_secure";
    case SecurityDrop::kSecureToPlain:
      return "secure_to_plain";
    case SecurityDrop::kTrimmed:
      return "trimmed";
    case SecurityDrop::kTruncated:
      return "truncated";
    case SecurityDrop::kOldKey:
      return "old_key";
    case SecurityDrop::kReplay:
      return "replay";
    case SecurityDrop::kBadTag:
      return "bad_tag";
    case SecurityDrop::kNoKey:
      return "no_key";
    case SecurityDrop::kCount:
      break;
  }
  return "?";
}

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::kDecode:
      return "decode";
    case DropReason::kUnknownQp:
      return "unknown_qp";
    case DropReason::kQpState:
      return "qp_state";
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kOutOfWindow:
      return "out_of_window";
    case DropReason::kBadKey:
      return "bad_key";
    case DropReason::kOutOfBounds:
      return "out_of_bounds";
    case DropReason::kAccessDenied:
      return "access_denied";
    case DropReason::kBadLength:
      return "bad_length";
    case DropReason::kWimmOverflow:
      return "wimm_overflow";
    case DropReason::kBadAck:
      return "bad_ack";
    case DropReason::kUnknownEv:
      return "unknown_ev";
    case DropReason::kCount:
      break;
  }
  return "?";
}

}  // namespace mrc
