// Packet capture files, both ways: a writer of what a datapath sends and receives, and a reader
// of the captures other tools write, down to each UDP datagram.
//
// The writer makes a classic pcap file (nanosecond timestamps, link type RAW: each record an
// IPv4 or IPv6 packet), so tcpdump, tshark and `mrc decode` read it. A datagram is written with the
// IPv4 and UDP headers it had or would have had on the wire (addresses, ports and TOS from the
// datapath; checksums: IPv4 computed, UDP zero, as RoCEv2 NICs send; with IPv6, the final
// destination: an SRv6 plane's container is rewritten on the way). It stops writing at a
// byte budget and says so, so a capture of a long run stays bounded.
//
// The reader takes classic pcap (either byte order, micro- or nanosecond stamps) and pcapng
// (section, interface and enhanced/simple packet blocks; per-interface link type and time
// resolution), with link types Ethernet (VLAN tags skipped), Linux cooked v1 and v2, BSD
// loopback and raw IPv4/IPv6. It finds each record's UDP datagram over IPv4 (no fragments) or
// IPv6 (UDP as the first next header). A capture is input like any other: every length is
// checked before it is used, and a malformed record is skipped with a reason, never read past.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "io/socket_address.h"
#include "mrc/error.hpp"

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
  // budget is spent (the datagram is not written) or after a write error. Any thread.
  bool write(uint64_t unix_ns, const UdpAddresses& addresses, std::span<const uint8_t> datagram);
  uint64_t records() const;
  uint64_t dropped() const;  // datagrams not written: past the budget, or after a write error
  bool full() const { return dropped() > 0; }

 private:
  PcapWriter(std::FILE* file, uint64_t max_bytes) : file_(file), max_bytes_(max_bytes) {}
  size_t headers(const UdpAddresses& a, size_t datagram_bytes, uint8_t* out);
  mutable std::mutex mutex_;  // the engine threads of a device group share one capture
  std::FILE* file_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t records_ = 0;
  uint64_t dropped_ = 0;
  uint16_t ip_id_ = 0;
};

// A record's UDP datagram, found by PcapReader::next.
struct CapturedDatagram {
  uint64_t number = 0;  // the record's position in the file, from 1
  uint64_t unix_ns = 0;
  bool ipv6 = false;
  std::string source;  // "address:port"
  std::string destination;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  uint8_t tos = 0;                     // IPv4 TOS or IPv6 traffic class
  std::span<const uint8_t> ip_packet;  // from the IP header to the end of the UDP payload
  std::span<const uint8_t> datagram;   // the UDP payload
};

class PcapReader {
 public:
  static Result<std::unique_ptr<PcapReader>, Error> open(const std::string& path);

  // The next record that holds a whole UDP datagram; false at the end of the file. Records
  // that hold something else (other protocols, fragments, truncated captures) are skipped and
  // counted. A file that stops being a capture (a corrupt block) ends the reading with error().
  bool next(CapturedDatagram& out);
  uint64_t records() const { return records_; }
  uint64_t skipped() const { return skipped_; }  // records without a whole UDP datagram
  const std::string& error() const { return error_; }

 private:
  struct Interface {
    uint32_t link_type = 0;
    uint64_t ticks_per_second = 1'000'000;
  };
  bool next_record(uint32_t& link_type, uint64_t& unix_ns, std::span<const uint8_t>& bytes);
  bool next_classic(uint32_t& link_type, uint64_t& unix_ns, std::span<const uint8_t>& bytes);
  bool next_pcapng(uint32_t& link_type, uint64_t& unix_ns, std::span<const uint8_t>& bytes);
  bool read_section_header(std::span<const uint8_t> block);
  bool read_interface(std::span<const uint8_t> body);
  uint32_t u32(const uint8_t* p) const;
  uint16_t u16(const uint8_t* p) const;

  std::vector<uint8_t> file_;  // the whole capture
  size_t at_ = 0;
  bool pcapng_ = false;
  bool swapped_ = false;                   // the file's byte order is not this machine's
  uint64_t ticks_per_second_ = 1'000'000;  // classic pcap
  uint32_t link_type_ = 0;                 // classic pcap
  std::vector<Interface> interfaces_;      // pcapng, per section
  uint64_t records_ = 0;
  uint64_t skipped_ = 0;
  std::string error_;
};

// Finds the UDP datagram in one captured frame of `link_type`; false if it holds none.
bool find_udp(uint32_t link_type, std::span<const uint8_t> frame, CapturedDatagram& out);

}  // namespace mrc::io
