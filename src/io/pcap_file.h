// Capture files on disk: the writer of what a datapath sends and receives (UdpHost::set_capture,
// `mrc perf --pcap`), and the opening of a capture for reading (`mrc decode`). The formats, the
// records written and the reader of pcap and pcapng, are wire/pcap.h's; this file does the file
// I/O. The writer stops writing at a byte budget and says so, so a capture of a long run stays
// bounded.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "io/socket_address.h"
#include "mrc/error.hpp"
#include "wire/pcap.h"

namespace mrc::io {

// One UDP datagram's addresses as a capture holds them (source and destination of one family).
struct UdpAddresses {
  SocketAddress source;
  SocketAddress destination;
  uint8_t tos = 0;
};

class PcapWriter {
 public:
  // Creates (truncates) `path`; at most `max_bytes` of records are written.
  static Result<std::unique_ptr<PcapWriter>, Error> open(const std::string& path,
                                                         uint64_t max_bytes);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Appends one datagram at `unix_ns` (nanoseconds since the Unix epoch). False once the
  // budget is spent (the datagram is not written) or after a write error. Any thread. What is
  // written reaches the file at least every 100 ms of capture time (the first datagram at once),
  // and all of it when the writer closes.
  bool write(uint64_t unix_ns, const UdpAddresses& addresses, std::span<const uint8_t> datagram);
  uint64_t records() const;
  uint64_t dropped() const;  // datagrams not written: past the budget, or after a write error
  bool full() const { return dropped() > 0; }

 private:
  PcapWriter(std::FILE* file, uint64_t max_bytes) : file_(file), max_bytes_(max_bytes) {}
  mutable std::mutex mutex_;  // the engine threads of a device group share one capture
  std::FILE* file_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t records_ = 0;
  uint64_t dropped_ = 0;
  uint16_t ip_id_ = 0;
  static constexpr uint64_t kFlushIntervalNs = 100'000'000;
  uint64_t flushed_ns_ = 0;  // capture time of the last flush (0: none yet, so the first flushes)
};

// Reads the capture file at `path` (pcap or pcapng) for wire::PcapReader.
Result<std::unique_ptr<wire::PcapReader>, Error> open_pcap(const std::string& path);

}  // namespace mrc::io
