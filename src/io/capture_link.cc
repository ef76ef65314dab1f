// Captures of sent datagrams as a link decorator (capture_link.h).
#include "io/capture_link.h"

#include <ctime>

#include "wire/roce_frame.h"

namespace mrc::io {
namespace {

// Wall-clock time for capture records (the engine's clock is monotonic and starts at zero).
uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void CaptureLink::add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
                      TxOutcome& out) {
  if (capture_ != nullptr && length <= written_at_.size()) {
    SocketAddress source = local_;
    source.set_port(source_port);
    capture_->write(realtime_ns(), UdpAddresses{source, to, wire::kMrcTos},
                    inner().as_sent(source_port, to, written_at_.first(length)));
  }
  inner().add(source_port, to, length, now, out);
}

}  // namespace mrc::io
