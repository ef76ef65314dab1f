// SRv6 uSID path mode: an EV names its path through the fabric as a source route.
//
// In ECMP mode the switches hash an EV (the UDP source port) onto one of their equal-cost
// links, and which path that is nobody chooses. With SRv6 micro-segments (uSIDs, RFC 9800's
// NEXT-C-SID flavour) the sender writes the path into the IPv6 destination address: a 32-bit
// block (the fabric's locator block), then 16-bit uSIDs, one per switch that must steer the
// packet. A switch owning the next uSID (End with next-csid, "uN") shifts the uSIDs after the
// block one place left and forwards on the new address; the others route on it plainly.
//
// mrc's layout: a host's address on a plane is its locator, block:leaf:host:: (reachable by
// plain routing from any spine); a path is the uSIDs of the switches above the leaves (a
// spine, or more in deeper fabrics). The destination of a packet taking path P to locator
// block:L... is block:P:L..., the locator's uSIDs moved along by P's length, so it needs as
// many zero uSIDs at the locator's end. After the last path switch shifted, the address is
// the locator again and the fabric delivers it there; the receiving host owns its locator and
// needs no SRv6 of its own.
//
// Which path an EV takes is algorithmic, as in the MRC paper's template: the EV whose UDP
// source port is P takes path P % paths, at both ends (the ports of a plane are consecutive, so
// every path gets an equal share of a QP's EVs, and the EV state machine (retire on loss,
// probe, revive) works on paths unchanged). The receiver sees the EV as the UDP source port and
// echoes it, as in ECMP mode. Because both ends map ports to paths alike, a SACK or NACK goes
// back the way the data it answers came (TxMeta::answers: the source port of this host's with
// the same residue): a receive-only QP learns nothing of its own EVs, and a spine that lost its
// link to the sender's leaf would otherwise keep eating the SACKs sent through it.

// The UDP checksum: the kernel computes it over the destination address it sends to, and the
// fabric rewrites that address, so the receiver would find it wrong. SRv6 planes send UDP
// checksum zero (UDP_NO_CHECK6_TX; received with UDP_NO_CHECK6_RX), as RoCEv2 does: the ICRC
// covers the datagram end to end. The kernel refuses UDP GSO without a checksum, so these
// planes send batches with sendmmsg.
//
// This file is the addresses' arithmetic and no I/O: the datapath that sends to them and maps
// ports to paths is io/udp_host.h and io/udp_link.h; the controller's SRv6 EVs, ocp/ev_srv6.h.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/result.hpp"

namespace mrc::wire {

// The fabric's block: the destination's first 32 bits (the kernel's next-csid default, lblen
// 32), and 16-bit uSIDs (nflen 16).
inline constexpr int kSrv6BlockBits = 32;
inline constexpr int kSrv6UsidBits = 16;
inline constexpr size_t kSrv6MaxPaths = 256;
// uSIDs after the block: 96 bits; a path leaves room for at least one of the locator's.
inline constexpr size_t kSrv6MaxPathUsids = 5;

// Each path: its uSIDs, outermost (first switch) first.
using Srv6Paths = std::vector<std::vector<uint16_t>>;

// "200,201" (one uSID per path) or "100:200,100:201" (several): hexadecimal uSIDs, 1 to ffff
// (0 ends a container), paths separated by commas. Errors name the path and the rule.
Result<Srv6Paths, Error> parse_srv6_paths(const std::string& text);
std::string to_string(const Srv6Paths& paths);

// The destination of a packet taking `path` to `locator` (block:uSIDs...). Refused when the
// locator's trailing uSIDs that the path pushes out are not zero: the container would not fit.
Result<in6_addr, Error> srv6_destination(const in6_addr& locator,
                                         const std::vector<uint16_t>& path);

// A path as an address, the form an SRv6 EV of the OCP controller API takes (an EV carries its
// path): the block of the plane's locator, then the path's uSIDs, then zeros.
in6_addr srv6_ev_address(const in6_addr& locator, const std::vector<uint16_t>& path);
// The path of such an EV on the plane whose locator is `locator`: its uSIDs after the block,
// up to the first zero one. Refused, saying why: another block than the plane's (the EV is not
// this plane's), no uSID, a uSID after the end of the container, more than kSrv6MaxPathUsids.
Result<std::vector<uint16_t>, Error> srv6_ev_path(const in6_addr& ev, const in6_addr& locator);

}  // namespace mrc::wire
