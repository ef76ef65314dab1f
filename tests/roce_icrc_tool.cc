// Helper of tests/roce_icrc_check.py: wire/roce_frame against an independent RoCEv2 ICRC.
//   roce_icrc_tool frames   prints whole frames (hex, one per line) around real MRC packets
//                           (data of several sizes, an ACK, a SACK), as the AF_XDP backend
//                           writes them
//   roce_icrc_tool check    reads hex frames from stdin, prints "ok" or why each is refused
#include <arpa/inet.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "core/wire/packet.h"
#include "wire/roce_frame.h"

namespace {

using namespace mrc;

std::string hex(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<uint8_t> unhex(const std::string& text) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

void print_frame(const wire::Packet& packet, uint16_t ip_id) {
  std::vector<uint8_t> frame(wire::kFrameHeaderBytes + wire::kMaxDatagramBytes);
  const size_t n = wire::encode(packet, std::span(frame).subspan(wire::kFrameHeaderBytes), true);
  wire::FrameAddresses a;
  a.destination_mac = {0x02, 0, 0, 0, 0, 0x02};
  a.source_mac = {0x02, 0, 0, 0, 0, 0x01};
  inet_pton(AF_INET, "198.18.0.1", &a.source_ip);
  inet_pton(AF_INET, "198.18.0.2", &a.destination_ip);
  a.source_port = static_cast<uint16_t>(50000 + ip_id);
  a.destination_port = 4791;
  const size_t length = wire::write_frame(a, ip_id, n, frame);
  std::cout << hex(std::span(frame).first(length)) << "\n";
}

int frames() {
  std::vector<uint8_t> payload(4000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
  uint16_t id = 1;
  for (size_t size : {0, 1, 64, 1024, 4000}) {
    wire::DataPacket d;
    d.header.bth.opcode = wire::Opcode::kWriteOnly;
    d.header.bth.dest_qp = Qpn(0x123);
    d.header.bth.psn = Psn(1000 + id);
    d.header.reth = wire::Reth{0x10000, 0x55, static_cast<uint32_t>(size)};
    d.payload = std::span(payload).first(size);
    print_frame(d, id++);
  }
  wire::ControlPacket ack;
  ack.bth.opcode = wire::Opcode::kAck;
  ack.bth.dest_qp = Qpn(0x456);
  ack.body = wire::Ack{0, 77};
  print_frame(ack, id++);
  wire::ControlPacket sack;
  sack.bth.opcode = wire::Opcode::kSack;
  sack.bth.dest_qp = Qpn(0x789);
  wire::Sack s;
  s.cumulative_psn = Psn(4242);
  s.bitmap = 0xF0F0;
  sack.body = s;
  print_frame(sack, id++);
  return 0;
}

int check() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<uint8_t> frame = unhex(line);
    auto parsed = wire::parse_frame(frame);
    std::cout << (parsed.ok() ? "ok" : wire::to_string(parsed.error())) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "frames") return frames();
    if (mode == "check") return check();
    std::fprintf(stderr, "usage: roce_icrc_tool frames|check\n");
    return 2;
  } catch (const std::exception& e) {  // an allocation that failed: a message, not terminate
    std::fprintf(stderr, "roce_icrc_tool: %s\n", e.what());
    return 1;
  }
}
