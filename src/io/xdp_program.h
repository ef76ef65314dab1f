// The XDP program of the AF_XDP backend: on one interface, IPv4/UDP packets to MRC's UDP port
// go to the AF_XDP socket bound to the queue they arrived on; everything else (ARP, other
// ports, IP fragments, IP options, VLAN-tagged frames) passes to the kernel as if no program
// were there.
//
// The program is twenty-odd BPF instructions, written out here rather than compiled from C, so
// that building mrc needs no BPF compiler; the port is an immediate patched in at load time.
// It reads only the first 42 bytes of the frame and declares itself safe for multi-buffer
// frames (BPF_F_XDP_HAS_FRAGS), which lets it attach to interfaces with a jumbo MTU (veth at
// 9000). A packet to the port on a queue without a socket passes to the kernel: the program
// redirects with XDP_PASS as its fallback action.
//
// Attachment: through a BPF link, in the driver's native XDP where it has one, else generic
// (SKB) mode; generic first on veth, whose native XDP copies every packet the kernel stack
// sent into a page of its own before the program runs (BENCHMARKS.md, "The xdp backend"). The link
// dies with the process, and the program with it: nothing stays attached after a crash. An
// interface that already carries an XDP program is refused with its name and id (one mrc host with
// the xdp backend per interface).
#pragma once

#include <cstdint>
#include <string>

#include "mrc/error.hpp"

namespace mrc::io {

class XdpProgram {
 public:
  // Loads the program for UDP port `port`, with a socket map of `queues` entries, and attaches
  // it to `ifname`: in native mode, else generic; generic first if `prefer_generic`. Needs
  // CAP_BPF and CAP_NET_ADMIN (root): without them the error says so.
  static Result<XdpProgram, Error> attach(const std::string& ifname, int ifindex, uint16_t port,
                                          uint32_t queues, bool prefer_generic);
  XdpProgram(XdpProgram&& other) noexcept;
  XdpProgram& operator=(XdpProgram&& other) noexcept;
  XdpProgram(const XdpProgram&) = delete;
  XdpProgram& operator=(const XdpProgram&) = delete;
  ~XdpProgram();  // detaches the program

  // Steers the packets of receive queue `queue` to the AF_XDP socket `xsk_fd`.
  Result<Ok, Error> add_socket(uint32_t queue, int xsk_fd);
  // "native" (the driver's XDP) or "generic" (SKB mode).
  const char* mode() const;

 private:
  XdpProgram() = default;
  void release();
  int prog_fd_ = -1;
  int map_fd_ = -1;
  int link_fd_ = -1;
  uint32_t attach_flags_ = 0;
};

}  // namespace mrc::io
