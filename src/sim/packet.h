// A packet in flight through the simulated fabric: the datagram bytes the engine produced plus
// the metadata a real network carries outside the UDP payload (addresses, plane, the EV as the
// UDP source port / flow label, the ECN bits, the DSCP class that marks a trimmed packet), and
// the pool packets are recycled through (packet.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mrc/types.hpp"
#include "util/default_init_allocator.h"

namespace mrc::sim {

using HostId = uint32_t;

// A datagram's bytes. Growing it does not zero the new bytes (they are always written before
// they are read), so a host can let its engine write a datagram straight into a packet. Fill it
// with resize() and memcpy, not insert() or assign() from a range: with a non-standard
// allocator those construct byte by byte.
using PacketBytes = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

// One cache line each (aligned, and the fields ordered to fill exactly 64 bytes): every hop
// reads a packet cold at fabric scale.
struct alignas(64) SimPacket {
  PacketBytes bytes;  // the datagram (UDP payload)
  uint64_t id = 0;    // unique per run, for tracing
  HostId source_host = 0;
  HostId dest_host = 0;
  Ev ev{0};
  PlaneId plane{0};
  bool ecn_capable = true;        // ECT: switches may mark instead of dropping
  bool ecn_ce = false;            // CE: marked by some switch on the way
  bool trimmed = false;           // payload was cut by a trimming switch
  bool trimmed_last_hop = false;  // ... and the cut happened on the last hop (leaf -> host)
  bool trimmable = true;          // data class; control packets are not trimmed
  bool high_priority = false;     // control and trimmed headers go in the priority queue
  // ICRC offload: the last 4 bytes are an ICRC the sender left to the datapath, not computed
  // yet, and the bytes are still exactly what the sender wrote, so the receiving host tells its
  // transport they need no check (RxMeta::icrc_checked). A wire fault that changes the bytes
  // computes the ICRC first (seal_deferred_icrc), so the receiver checks it as before.
  bool icrc_deferred = false;
  uint32_t trim_to_bytes = 0;         // length after trimming (the data headers)
  uint32_t pfc_ingress = UINT32_MAX;  // lossless switch: the link it arrived on, while held
  uint32_t pfc_bytes = 0;             // ... and the bytes it counts there

  uint32_t wire_bytes() const;  // bytes on the wire incl. per-packet overhead (IP/UDP/Eth)
};
static_assert(sizeof(SimPacket) == 64);

// Packets are recycled: a freed packet goes back to a per-thread pool with its byte buffer's
// capacity, so a run allocates a datagram buffer only while the number in flight grows
// (malloc and free were ~6 % of a run's instructions).
struct PacketRecycler {
  void operator()(SimPacket* packet) const;
};
using PacketPtr = std::unique_ptr<SimPacket, PacketRecycler>;

// A packet with every field at its default and no bytes.
PacketPtr make_packet();
// A copy of `other` (a duplicate made by a wire fault).
PacketPtr make_packet(const SimPacket& other);

// Computes a deferred ICRC (the big-endian CRC-32 of every byte before the last 4, as
// wire::seal) into the last 4 bytes and clears icrc_deferred. No-op for a packet without one.
void seal_deferred_icrc(SimPacket& packet);

// Per-packet overhead of Ethernet + IPv4 + UDP framing counted against link rate.
inline constexpr uint32_t kFramingBytes = 14 + 20 + 8 + 4 /*FCS*/ + 20 /*preamble+IFG*/;

inline uint32_t SimPacket::wire_bytes() const {
  return static_cast<uint32_t>(bytes.size()) + kFramingBytes;
}

}  // namespace mrc::sim
