// What a datapath that writes whole Ethernet frames must know of the host's network: the
// interface that holds a local address (name, index, MAC, MTU, receive queues), and the MAC
// address of the next hop towards a peer.
//
// Next hops come from the kernel, as its own packets would take them: the main routing table
// (/proc/net/route, longest prefix) names the gateway, or none for a directly connected peer,
// and the neighbour table (/proc/net/arp) its MAC. A next hop the kernel has not resolved yet is
// resolved by having the kernel send one datagram there (to the discard port, 9), which makes
// it ARP. Lookups read /proc only for an address not yet known, at most once per
// kRetryInterval each; answers are kept (at most kMaxEntries, the oldest replaced).
// Frames received from a peer also teach its next hop (Neighbours::learn).
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/types.hpp"
#include "wire/roce_frame.h"

namespace mrc::io {

struct NetInterface {
  std::string name;
  int index = 0;
  wire::MacAddress mac{};
  uint32_t mtu = 0;
  uint32_t rx_queues = 1;
  std::string driver;  // as `ethtool -i` names it ("veth", "mlx5_core", ...); empty if unknown
};

// The interface holding `address`; the error names the address when none does.
Result<NetInterface, Error> interface_of(in_addr address);

// Room the IP, UDP and MRC headers and the ICRC take in a plane's MTU (with some to spare).
inline constexpr uint32_t kPlaneHeaderBytes = 128;

// The smallest MTU of the interfaces holding `planes` (IPv4 addresses as text); 0 if one is not
// known (an IPv6 plane, an address no interface holds).
uint32_t smallest_plane_mtu(const std::vector<std::string>& planes);

// The MRC payload per packet that every plane's interface carries with the headers: the largest
// of 8192, 4096 and 1024 bytes; 4096 where an interface's MTU is not known.
uint32_t auto_payload_bytes(const std::vector<std::string>& planes);

// The payload per packet for `asked` bytes (0: auto_payload_bytes); an error, naming the most
// that fits, if `asked` does not fit the planes' smallest known MTU with the headers.
Result<uint32_t, Error> choose_payload_bytes(uint32_t asked,
                                             const std::vector<std::string>& planes);

class Neighbours {
 public:
  static constexpr size_t kMaxEntries = 256;
  static constexpr Duration kRetryInterval = Duration::from_ms(50);

  Neighbours(std::string ifname, in_addr local);
  // The MAC of the next hop to `destination`, if known; otherwise asks the kernel (at most once
  // per kRetryInterval for that destination) and returns false.
  bool lookup(in_addr destination, Instant now, wire::MacAddress& mac);
  // Blocks up to `timeout` for the next hop to `destination` to resolve (connection set-up).
  bool resolve(in_addr destination, Duration timeout);
  // A frame from `source` arrived from `mac`.
  void learn(in_addr source, const wire::MacAddress& mac);

 private:
  struct Entry {
    uint32_t address = 0;  // network byte order
    wire::MacAddress mac{};
    bool known = false;
    Instant last_try{INT64_MIN / 2};
  };
  Entry& entry(uint32_t address);
  bool read_kernel(Entry& e);
  void make_kernel_resolve(const Entry& e);

  std::string ifname_;
  in_addr local_;
  std::vector<Entry> entries_;
  size_t next_replace_ = 0;
  size_t last_learned_ = SIZE_MAX;  // the entry the last learn() found
};

}  // namespace mrc::io
