// `mrc decode FILE`: the MRC packets of a capture (pcap or pcapng, as tcpdump, tshark or
// `mrc perf --pcap` write them), every header field by field, the ICRC checked.
//
// Which datagrams: UDP to one of the --port ports (default 4791, RoCEv2's), and any other UDP
// datagram that decodes as MRC with a good ICRC (so a capture of both directions of `mrc perf`,
// whose client listens on 4807, shows the SACKs too). A datagram to a --port that does not
// decode is shown with the decoder's reason. The ICRC is checked both ways a sender may write
// it: the UDP datapath's CRC-32 over the datagram, and the RoCEv2 ICRC over the masked IPv4 and
// UDP headers (the xdp datapath's, a RoCE NIC's); the line says which matched, or "bad".
//
// Output: a line per packet and its headers below it, then a summary; --json one object with
// the packets and the summary. Exit 0 when the file was read (bad packets are reported, not
// errors), 1 when it cannot be read or stops being a capture, 2 for usage errors.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace mrc::tools {

struct DecodeToolOptions {
  std::string path;
  std::vector<uint16_t> ports{4791};
  bool json = false;
  uint64_t limit = 0;   // packets shown (0: all); the summary counts every one
  bool headers = true;  // false (--brief): the one line per packet only
};

void add_decode_options(CLI::App& app, DecodeToolOptions& options);
int run_decode(const DecodeToolOptions& options);

}  // namespace mrc::tools
