// Whole RoCEv2 frames: the Ethernet, IPv4 and UDP headers around an MRC datagram, and the
// RoCEv2 invariant CRC (ICRC) a RoCE NIC checks, for a datapath that writes its own headers
// (the AF_XDP backend, io/xdp_link.h).
//
// The UDP backend hands the kernel a datagram; the engine's ICRC is then a plain CRC-32 over
// the datagram (wire::seal). A RoCEv2 NIC computes the ICRC differently: over the IP and UDP
// headers as well, with the fields that routers may change masked to ones (IBTA RoCEv2 annex
// A17.4.2): 8 bytes of 0xFF standing in for InfiniBand's LRH; the IPv4 header with TOS, TTL and
// header checksum all ones; the UDP header with its checksum all ones; the BTH with its byte 4
// (FECN, BECN, reserved) all ones; then the rest of the datagram. The CRC's register is stored
// least significant byte first. A frame this file writes is one a hardware RoCEv2 NIC accepts,
// and the frames it accepts are those a NIC sends; tests/roce_icrc_check.py checks both
// directions against scapy's independent RoCE layer.
//
// The masked copy is never built: the mask is applied to the frame in place, the CRC runs over
// the 8 bytes before the IP header (the end of the Ethernet header, set to 0xFF for the
// purpose) through the datagram, and the saved bytes are put back.
//
// UDP checksum: zero (none), as RoCEv2 NICs send; the ICRC covers the datagram.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mrc/error.hpp"

namespace mrc::wire {

inline constexpr size_t kEthernetHeaderBytes = 14;
inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kUdpHeaderBytes = 8;
inline constexpr size_t kFrameHeaderBytes =
    kEthernetHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
// The ECN field every MRC packet leaves with: ECT(0), as the UDP backend's IP_TOS.
inline constexpr uint8_t kMrcTos = 0x02;

using MacAddress = std::array<uint8_t, 6>;

struct FrameAddresses {
  MacAddress destination_mac{};
  MacAddress source_mac{};
  in_addr source_ip{};  // network byte order, as in sockaddr_in
  in_addr destination_ip{};
  uint16_t source_port = 0;  // host byte order
  uint16_t destination_port = 0;
  uint8_t tos = kMrcTos;
  uint8_t ttl = 64;
};

// Writes the headers into frame[0, kFrameHeaderBytes) for the datagram already at
// frame[kFrameHeaderBytes, kFrameHeaderBytes + datagram_bytes), whose last 4 bytes are its ICRC
// field, and fills that field with the RoCEv2 ICRC. Returns the frame's length.
// REQUIRES: frame.size() >= kFrameHeaderBytes + datagram_bytes, datagram_bytes >= 16.
size_t write_frame(const FrameAddresses& addresses, uint16_t ip_id, size_t datagram_bytes,
                   std::span<uint8_t> frame);

// The RoCEv2 ICRC of a whole frame (its last 4 bytes are the ICRC field, not covered). The
// frame is changed while the CRC runs and restored before it returns.
// REQUIRES: an IPv4 frame without options or VLAN tag, at least kFrameHeaderBytes + 16 bytes.
uint32_t roce_icrc(std::span<uint8_t> frame);

enum class FrameError : uint8_t {
  kTooShort,   // shorter than the headers, a BTH and an ICRC
  kNotIpv4,    // another EtherType, or IP version not 4
  kIpOptions,  // IHL above 5
  kFragment,   // an IP fragment
  kNotUdp,
  kBadLength,  // IP or UDP length disagrees with the frame
  kBadIpChecksum,
  kBadIcrc,
};
inline constexpr size_t kFrameErrorCount = 8;
const char* to_string(FrameError error);

struct ParsedFrame {
  FrameAddresses addresses;
  std::span<const uint8_t> datagram;  // the UDP payload, ICRC included (checked)
};

// Checks a received frame (headers, lengths, IP checksum, ICRC) and finds its datagram. Accepts
// any byte string: never reads outside `frame`. The frame is changed while the ICRC runs and
// restored.
Result<ParsedFrame, FrameError> parse_frame(std::span<uint8_t> frame);

}  // namespace mrc::wire
