// `mrc decode` (see decode.h): a capture opened by io::open_pcap and read with wire::PcapReader,
// each chosen datagram decoded by the engine's own codec (wire::decode, the ICRC left to this
// tool), described header by header as ordered JSON, and printed from that description as text
// or JSON.
#include "tools/decode.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "core/packet_protection.h"
#include "core/wire/packet.h"
#include "io/pcap_file.h"
#include "secure/inband_keys.h"
#include "util/bytes.h"
#include "util/hex.h"
#include "wire/roce_frame.h"

namespace mrc::tools {

namespace {

using json = nlohmann::ordered_json;

std::string hex(uint64_t v, int digits) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*" PRIx64, digits, v);
  return text;
}

json describe_bth(const wire::Bth& b) {
  return {{"opcode", hex(static_cast<uint8_t>(b.opcode), 2)},
          {"name", std::string(wire::to_string(b.opcode))},
          {"se", b.solicited},
          {"m", b.migration},
          {"pad_count", b.pad_count},
          {"tver", b.transport_version},
          {"pkey", hex(b.partition_key, 4)},
          {"dest_qp", hex(b.dest_qp.value, 6)},
          {"a", b.ack_request},
          {"r", b.reserved_r},
          {"rtx", b.retransmit},
          {"ts", b.timestamp_present},
          {"psn", b.psn.value}};
}

json describe_data(const wire::DataPacket& d) {
  const wire::DataHeader& h = d.header;
  json out;
  out["bth"] = describe_bth(h.bth);
  out["meth"] = {{"rq_msn", h.meth.rq_msn}, {"msn", h.meth.msn}};
  if (h.bth.timestamp_present)
    out["tseth"] = {{"tx_timestamp", h.tseth.tx_timestamp},
                    {"tsr", h.tseth.service_time_request},
                    {"ftype", h.tseth.format}};
  out["reth"] = {{"va", hex(h.reth.virtual_address, 16)},
                 {"rkey", hex(h.reth.rkey, 8)},
                 {"dma_length", h.reth.dma_length}};
  if (wire::has_immediate(h.bth.opcode)) out["immdt"] = {{"immediate", hex(h.immediate, 8)}};
  out["payload"] = {{"bytes", d.payload.size()}};
  return out;
}

json describe_body(const wire::Sack& s) {
  return {{"seth",
           {{"m", static_cast<int>(s.skip_mode)},
            {"pr", s.probe_response},
            {"ack_psn_offset", s.ack_psn_offset},
            {"entropy", s.echoed_entropy},
            {"spdcid", s.source_pdc},
            {"dpdcid", s.dest_pdc},
            {"cack_psn", s.cumulative_psn.value},
            {"cc_type", s.cc_type},
            {"cc_flags", s.cc_flags},
            {"mpr", s.mpr},
            {"sack_offset", s.sack_offset},
            {"sack_bitmap", hex(s.bitmap, 16)}}},
          {"cc_state",
           {{"echoed_timestamp", s.cc.echoed_timestamp},
            {"ooo_count", s.cc.out_of_order_count},
            {"rc", s.cc.rc},
            {"rcv_cwnd_pen", s.cc.receiver_cwnd_penalty},
            {"received_bytes", s.cc.received_bytes}}}};
}

json describe_body(const wire::Nack& n) {
  return {{"neth",
           {{"nack_reason", hex(static_cast<uint8_t>(n.reason), 2)},
            {"reason", std::string(wire::to_string(n.reason))},
            {"vendor_info", n.vendor_info},
            {"entropy", n.echoed_entropy},
            {"spdcid", n.source_pdc},
            {"dpdcid", n.dest_pdc},
            {"nack_psn", n.nack_psn.value},
            {"cc_type", n.cc_type},
            {"cc_flags", n.cc_flags},
            {"echoed_timestamp", n.echoed_timestamp}}}};
}

json describe_body(const wire::Probe& p) {
  return {{"peth",
           {{"vendor_info", p.vendor_info},
            {"probe_id", p.probe_id},
            {"spdcid", p.source_pdc},
            {"dpdcid", p.dest_pdc},
            {"tx_timestamp", p.tx_timestamp},
            {"tsr", p.service_time_request},
            {"ftype", p.format}}}};
}

json describe_body(const wire::EndpointRequest& r) {
  return {{"erth",
           {{"op", static_cast<int>(r.op)},
            {"vendor_info", r.vendor_info},
            {"port_status_mask", hex(r.port_status_mask, 8)},
            {"request_id", r.request_id},
            {"tx_timestamp", r.tx_timestamp},
            {"tsr", r.service_time_request},
            {"ftype", r.format}}}};
}

json describe_body(const wire::EndpointResponse& r) {
  return {{"eeth",
           {{"op", static_cast<int>(r.op)},
            {"port_status_mask", hex(r.port_status_mask, 8)},
            {"request_id", r.request_id},
            {"service_time_ns", r.service_time_ns},
            {"echoed_timestamp", r.echoed_timestamp}}}};
}

json describe_body(const wire::Ack& a) {
  return {{"aeth", {{"syndrome", hex(a.syndrome, 2)}, {"msn", a.msn}}}};
}

json describe(const wire::Packet& packet) {
  if (const auto* d = std::get_if<wire::DataPacket>(&packet)) return describe_data(*d);
  const auto& c = std::get<wire::ControlPacket>(packet);
  json out;
  out["bth"] = describe_bth(c.bth);
  const json body = std::visit([](const auto& b) { return describe_body(b); }, c.body);
  for (const auto& [key, value] : body.items()) out[key] = value;
  return out;
}

// A datagram as the codec reads it; a secure one (PROTOCOL.md §1.12) through its unprotected
// view, which `view` holds: the headers are in the clear, the payload is shown by its length.
Result<wire::Packet, wire::DecodeError> decode_view(std::span<const uint8_t> g,
                                                    std::vector<uint8_t>& view) {
  wire::DecodeOptions options;
  options.verify_icrc = false;  // checked by the callers, both ways
  if (!wire::is_secure(g)) return wire::decode(g, options);
  view.resize(g.size());
  const size_t n = unprotected_view(g, view);
  if (n == 0) return Err{wire::DecodeError::kTruncatedHeader};
  return wire::decode(std::span(view).first(n), options);
}

// A secure packet's headers: the BTH's S flag, its SECH after the BTH, its tag last.
json describe_secure(const json& headers, std::span<const uint8_t> g) {
  const Sech sech = read_sech(g);
  const std::string tag = to_hex(g.last(wire::kIcrcBytes + wire::kTagBytes).first(wire::kTagBytes));
  json out;
  for (const auto& [key, value] : headers.items()) {
    out[key] = value;
    if (key != "bth") continue;
    out["bth"]["s"] = true;
    out["sech"] = {{"epoch", sech.epoch}, {"counter", sech.counter}};
  }
  out["tag"] = {{"aes_gcm", tag}};
  return out;
}

// A KEY OFFER (PROTOCOL.md §1.13, the in-band key agreement's): its BTH and KOETH.
json describe_key_offer(const secure::KeyOfferPacket& k) {
  json bth = {{"opcode", hex(secure::kKeyOfferOpcode, 2)},
              {"name", "KEY_OFFER"},
              {"dest_qp", hex(k.dest_qpn, 6)},
              {"psn", 0}};
  json koeth = {{"source_qp", hex(k.source_qpn, 6)}, {"mode", to_string(k.offer.mode)},
                {"holds_yours", k.holds_yours},      {"reply", k.reply},
                {"key_id", k.offer.key_id},          {"public_key", k.offer.share.substr(0, 64)},
                {"nonce", k.offer.share.substr(64)}, {"proof", k.offer.proof}};
  return {{"bth", bth}, {"koeth", koeth}};
}

// Which ICRC the datagram `g` carries: the UDP datapath's CRC-32 over the datagram, or the RoCEv2
// ICRC over the masked IPv4/UDP headers (checked on a frame rebuilt around the captured packet,
// when `g` is the whole of it).
std::string icrc_status(const wire::CapturedDatagram& d, std::span<const uint8_t> g) {
  if (g.size() < wire::kBthBytes + wire::kIcrcBytes) return "absent";
  const size_t covered = g.size() - wire::kIcrcBytes;
  if (wire::icrc32(g.first(covered)) == load_be32(g.data() + covered)) return "ok (udp)";
  if (g.size() == d.datagram.size() && !d.ipv6 && d.ip_packet.size() >= 28 &&
      (d.ip_packet[0] & 0x0F) == 5) {
    std::vector<uint8_t> frame(wire::kEthernetHeaderBytes, 0);
    frame[12] = 0x08;
    frame.insert(frame.end(), d.ip_packet.begin(), d.ip_packet.end());
    if (wire::parse_frame(frame).ok()) return "ok (RoCEv2)";
  }
  return "bad";
}

struct Summary {
  uint64_t packets = 0;
  uint64_t other_udp = 0;
  uint64_t undecodable = 0;
  uint64_t bad_icrc = 0;
  std::map<std::string, uint64_t> opcodes;
};

void print_headers(const json& headers) {
  for (const auto& [name, fields] : headers.items()) {
    std::string line = "  ";
    for (char c : name) line += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    line += ":";
    for (const auto& [field, value] : fields.items())
      line += " " + field + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    std::printf("%s\n", line.c_str());
  }
}

// One packet as text: a line with where it went and what it is, then its headers.
void print_packet(const json& p, bool headers) {
  std::string what = p.contains("error")
                         ? "undecodable: " + p["error"].get<std::string>()
                         : p["headers"]["bth"]["name"].get<std::string>() + " qp " +
                               p["headers"]["bth"]["dest_qp"].get<std::string>() + " psn " +
                               std::to_string(p["headers"]["bth"]["psn"].get<uint32_t>());
  const std::string record =
      std::to_string(p["record"].get<uint64_t>()) +
      (p.contains("segment") ? "." + std::to_string(p["segment"].get<int>()) : "");
  std::printf("#%s %" PRIu64 ".%09" PRIu64 " %s -> %s %s len %zu icrc %s\n", record.c_str(),
              p["time_ns"].get<uint64_t>() / 1'000'000'000,
              p["time_ns"].get<uint64_t>() % 1'000'000'000, p["source"].get<std::string>().c_str(),
              p["destination"].get<std::string>().c_str(), what.c_str(), p["length"].get<size_t>(),
              p["icrc"].get<std::string>().c_str());
  if (headers && p.contains("headers")) print_headers(p["headers"]);
}

// The length of the first datagram of a GSO super-datagram: a capture on the sending host (on
// loopback, on either) holds a UDP GSO send as one UDP datagram of several MRC datagrams of one
// size. The first is where the CRC-32 of the bytes so far first equals the 4 bytes that follow
// (one pass, the CRC kept running); 0 if nowhere.
size_t first_segment(std::span<const uint8_t> g) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320 ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t reg = 0xFFFFFFFF;
  for (size_t k = 0; k + wire::kIcrcBytes <= g.size(); ++k) {
    if (k >= wire::kBthBytes && ~reg == load_be32(g.data() + k)) return k + wire::kIcrcBytes;
    reg = table[(reg ^ g[k]) & 0xFF] ^ (reg >> 8);
  }
  return 0;
}

// One MRC datagram `g` of the captured datagram `d` (all of it, or segment `segment` of a GSO
// super-datagram) as a packet description.
json describe_datagram(const wire::CapturedDatagram& d, std::span<const uint8_t> g,
                       const std::string& icrc, int segment) {
  json p;
  p["record"] = d.number;
  if (segment >= 0) p["segment"] = segment;
  p["time_ns"] = d.unix_ns;
  p["source"] = d.source;
  p["destination"] = d.destination;
  p["length"] = g.size();
  p["tos"] = d.tos;
  p["icrc"] = icrc;
  if (const auto offer = secure::decode_key_offer(g)) {
    p["headers"] = describe_key_offer(*offer);
    return p;
  }
  std::vector<uint8_t> view;
  auto decoded = decode_view(g, view);
  if (decoded.ok()) {
    p["headers"] = describe(decoded.value());
    if (wire::is_secure(g)) p["headers"] = describe_secure(p["headers"], g);
  } else {
    p["error"] = std::string(wire::to_string(decoded.error()));
  }
  return p;
}

// The captured datagram's MRC packets (several if it is a GSO super-datagram), or none if it is
// not one to show: not to a --port, and not MRC with a good ICRC.
json examine(const wire::CapturedDatagram& d, const DecodeToolOptions& o) {
  const bool chosen =
      std::find(o.ports.begin(), o.ports.end(), d.destination_port) != o.ports.end();
  const std::string icrc = icrc_status(d, d.datagram);
  std::vector<uint8_t> view;
  const bool decodes = decode_view(d.datagram, view).ok() || secure::decode_key_offer(d.datagram);
  json out = json::array();
  if (decodes && icrc != "bad") {
    out.push_back(describe_datagram(d, d.datagram, icrc, -1));
    return out;
  }
  const size_t first = first_segment(d.datagram);
  if (first > 0 && first < d.datagram.size()) {
    int segment = 0;
    for (size_t at = 0; at < d.datagram.size(); at += first, ++segment) {
      const auto g = d.datagram.subspan(at, std::min(first, d.datagram.size() - at));
      out.push_back(describe_datagram(d, g, icrc_status(d, g), segment));
    }
    return out;
  }
  if (chosen) out.push_back(describe_datagram(d, d.datagram, icrc, -1));
  return out;
}

void count(Summary& s, const json& p) {
  ++s.packets;
  if (p["icrc"] == "bad") ++s.bad_icrc;
  if (p.contains("error")) {
    ++s.undecodable;
  } else {
    ++s.opcodes[p["headers"]["bth"]["name"].get<std::string>()];
  }
}

json summary_json(const Summary& s, const wire::PcapReader& r) {
  return {{"records", r.records()}, {"mrc_packets", s.packets}, {"undecodable", s.undecodable},
          {"bad_icrc", s.bad_icrc}, {"other_udp", s.other_udp}, {"not_udp", r.skipped()},
          {"by_opcode", s.opcodes}};
}

}  // namespace

void add_decode_options(CLI::App& app, DecodeToolOptions& o) {
  app.add_option("file", o.path,
                 "capture file (pcap or pcapng: tcpdump -w, tshark -w, mrc perf --pcap)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--port", o.ports,
                 "UDP destination ports whose datagrams are MRC (repeatable; default 4791); "
                 "datagrams to other "
                 "ports are shown when they decode with a good ICRC")
      ->check(CLI::Range(1, 65535));
  app.add_flag("--json", o.json, "print one JSON object: the packets and a summary");
  app.add_option("--limit", o.limit,
                 "show at most this many packets (the summary counts all; default 0: all)");
  app.add_flag("!--brief", o.headers, "one line per packet, without the headers below it");
}

int run_decode(const DecodeToolOptions& o) {
  auto opened = io::open_pcap(o.path);
  if (!opened.ok()) {
    std::fprintf(stderr, "mrc decode: %s\n", opened.error().message.c_str());
    return 1;
  }
  wire::PcapReader& reader = *opened.value();
  Summary s;
  json packets = json::array();
  wire::CapturedDatagram d;
  while (reader.next(d)) {
    const json found = examine(d, o);
    if (found.empty()) ++s.other_udp;
    for (const json& p : found) {
      count(s, p);
      if (o.limit != 0 && s.packets > o.limit) continue;
      if (o.json) {
        packets.push_back(p);
      } else {
        print_packet(p, o.headers);
      }
    }
  }
  const json summary = summary_json(s, reader);
  if (o.json) {
    json out = {{"file", o.path}, {"packets", packets}, {"summary", summary}};
    if (!reader.error().empty()) out["error"] = reader.error();
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    std::printf(
        "%" PRIu64 " MRC packets in %" PRIu64 " records (%" PRIu64 " undecodable, %" PRIu64
        " with a bad ICRC; %" PRIu64 " other UDP datagrams, %" PRIu64 " records without one)\n",
        s.packets, reader.records(), s.undecodable, s.bad_icrc, s.other_udp, reader.skipped());
    for (const auto& [name, n] : s.opcodes) std::printf("  %-32s %" PRIu64 "\n", name.c_str(), n);
  }
  if (!reader.error().empty()) {
    std::fprintf(stderr, "mrc decode: %s: %s\n", o.path.c_str(), reader.error().c_str());
    return 1;
  }
  return 0;
}

}  // namespace mrc::tools
