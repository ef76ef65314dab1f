// Packet capture files' formats, both ways: the records a writer of what a datapath sends and
// receives makes, and a reader of the captures other tools write, down to each UDP datagram.
// No I/O here: the file is written and read by io/pcap_file.h.
//
// The writer's format is a classic pcap file (nanosecond timestamps, link type RAW: each record
// an IPv4 or IPv6 packet), so tcpdump, tshark and `mrc decode` read it. A datagram is written
// with the IPv4 and UDP headers it had or would have had on the wire (addresses, ports and TOS
// from the datapath; checksums: IPv4 computed, UDP zero, as RoCEv2 NICs send; with IPv6, the
// final destination: an SRv6 plane's container is rewritten on the way).
//
// The reader takes classic pcap (either byte order, micro- or nanosecond stamps) and pcapng
// (section, interface and enhanced/simple packet blocks; per-interface link type and time
// resolution), with link types Ethernet (VLAN tags skipped), Linux cooked v1 and v2, BSD
// loopback and raw IPv4/IPv6. It finds each record's UDP datagram over IPv4 (no fragments) or
// IPv6 (UDP as the first next header). A capture is input like any other: every length is
// checked before it is used, and a malformed record is skipped with a reason, never read past.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/result.hpp"

namespace mrc::wire {

// ---- the writer's format ----

inline constexpr size_t kPcapFileHeaderBytes = 24;
inline constexpr size_t kPcapRecordHeaderBytes = 16;
// The largest record the writer's files hold: an IP packet of at most 65535 bytes.
inline constexpr size_t kPcapMaxRecordBytes = 65535;
// The IP and UDP headers of a record: IPv4 28 bytes, IPv6 48.
inline constexpr size_t kPcapMaxHeaderBytes = 48;

// The file header: classic pcap, nanosecond stamps, link type RAW, in this machine's byte order.
// "a.b.c.d:port" or "[v6]:port" (family AF_INET or AF_INET6; another gives "?:port"): how mrc
// writes an address and port everywhere (io::to_string(SocketAddress) too).
std::string address_text(int family, const uint8_t* address, uint16_t port);

std::array<uint8_t, kPcapFileHeaderBytes> pcap_file_header();
// A record's header: its time (nanoseconds since the Unix epoch) and length, captured whole.
std::array<uint8_t, kPcapRecordHeaderBytes> pcap_record_header(uint64_t unix_ns, uint32_t length);

// What a record's IP and UDP headers say of one datagram.
struct UdpHeaderFields {
  bool v6 = false;
  std::span<const uint8_t> source;  // the address's bytes as on the wire: 4 (IPv4) or 16 (IPv6)
  std::span<const uint8_t> destination;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  uint8_t tos = 0;     // IPv4 TOS or IPv6 traffic class
  uint16_t ip_id = 0;  // IPv4 identification
};
// Writes the IP and UDP headers of a datagram of `datagram_bytes` into `out`; returns their
// length (IPv4: 28 bytes, IPv6: 48).
size_t write_udp_headers(const UdpHeaderFields& fields, size_t datagram_bytes,
                         std::span<uint8_t, kPcapMaxHeaderBytes> out);

// ---- the reader ----

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
  // The capture whose bytes are `file` (a whole file, read from `path`, which the errors name).
  static Result<std::unique_ptr<PcapReader>, Error> parse(std::vector<uint8_t> file,
                                                          const std::string& path);

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

}  // namespace mrc::wire
