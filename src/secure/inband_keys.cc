// In-band key agreement (see inband_keys.h): KEY OFFER datagrams and the exchange per QP.
#include "secure/inband_keys.h"

#include <algorithm>

#include "core/wire/packet.h"
#include "util/bytes.h"
#include "util/hex.h"

namespace mrc::secure {

namespace {

constexpr size_t kBth = 12;
constexpr uint8_t kHoldsYours = 0x01;
constexpr uint8_t kReply = 0x02;
// KOETH field offsets (docs/PROTOCOL.md §1.13).
constexpr size_t kSourceQpn = 0, kMode = 4, kFlags = 5, kKeyId = 8, kShare = 16, kProof = 64,
                 kKoeth = 96;
constexpr size_t kKeyIdBytes = 8, kShareBytes = 48, kProofBytes = 32;

// A hex field of the offer into its bytes on the wire; false if it is not `bytes` long.
bool put_hex(uint8_t* p, const std::string& text, size_t bytes) {
  std::vector<uint8_t> raw;
  if (!from_hex(text, raw) || raw.size() != bytes) return false;
  std::copy(raw.begin(), raw.end(), p);
  return true;
}
std::string get_hex(const uint8_t* p, size_t bytes) {
  return to_hex(std::span(p, bytes));
}

}  // namespace

std::vector<uint8_t> encode_key_offer(const KeyOfferPacket& packet) {
  std::vector<uint8_t> out(kKeyOfferBytes, 0);
  out[0] = kKeyOfferOpcode;
  store_be24(&out[5], packet.dest_qpn & kQpnMask);  // the BTH's destination QP
  uint8_t* k = &out[kBth];
  store_be32(k + kSourceQpn, packet.source_qpn & kQpnMask);
  k[kMode] = static_cast<uint8_t>(packet.offer.mode);
  k[kFlags] =
      static_cast<uint8_t>((packet.holds_yours ? kHoldsYours : 0) | (packet.reply ? kReply : 0));
  const KeyOffer& o = packet.offer;
  if (!put_hex(k + kKeyId, o.key_id, kKeyIdBytes) || !put_hex(k + kShare, o.share, kShareBytes) ||
      !put_hex(k + kProof, o.proof, kProofBytes))
    return {};
  wire::seal(out, kBth + kKoeth);
  return out;
}

std::optional<KeyOfferPacket> decode_key_offer(std::span<const uint8_t> datagram,
                                               bool icrc_checked) {
  if (datagram.size() != kKeyOfferBytes || datagram[0] != kKeyOfferOpcode ||
      (!icrc_checked && !wire::icrc_matches(datagram)))
    return std::nullopt;
  const uint8_t* k = datagram.data() + kBth;
  if (k[kMode] > static_cast<uint8_t>(SecureMode::kEncrypt) || (k[kFlags] & ~3) != 0)
    return std::nullopt;
  KeyOfferPacket p;
  p.dest_qpn = load_be24(datagram.data() + 5);
  p.source_qpn = load_be32(k + kSourceQpn) & kQpnMask;
  p.holds_yours = (k[kFlags] & kHoldsYours) != 0;
  p.reply = (k[kFlags] & kReply) != 0;
  p.offer.mode = static_cast<SecureMode>(k[kMode]);
  p.offer.key_id = get_hex(k + kKeyId, kKeyIdBytes);
  p.offer.share = get_hex(k + kShare, kShareBytes);
  p.offer.proof = get_hex(k + kProof, kProofBytes);
  return p;
}

// ---- InbandKeys -------------------------------------------------------------------------------

// The offers prove (QPN, PSN 0): the device's users give the PSNs to each end only later or
// not at all, and fresh shares already make each exchange's transcript its own.
Result<Ok, Error> InbandKeys::start(Instant now, SecureMode mode, std::span<const uint8_t> key,
                                    uint32_t qpn, uint32_t peer, uint32_t peer_qpn,
                                    const std::string& peer_name) {
  auto exchange = KeyExchange::start(mode, key);
  if (!exchange.ok()) return Err{exchange.error()};
  Agreement a(std::move(exchange.value()));
  a.mode = mode;
  a.qpn = qpn;
  a.peer = peer;
  a.peer_qpn = peer_qpn;
  a.peer_name = peer_name;
  a.own = a.exchange->offer(qpn, 0);
  a.deadline = now + timeout_;
  a.next_send = now;
  stop(qpn);
  agreements_.emplace(qpn, std::move(a));
  ++unsettled_;
  on_timer(now);
  return Ok{};
}

void InbandKeys::stop(uint32_t qpn) {
  const auto it = agreements_.find(qpn);
  if (it == agreements_.end()) return;
  if (!it->second.quiet) --unsettled_;
  agreements_.erase(it);
}

void InbandKeys::settle(Agreement& a) {
  if (a.peer_share.empty()) fail(a);  // else the QP has its keys already
  a.exchange.reset();
  a.quiet = true;
  --unsettled_;
}

void InbandKeys::send(Agreement& a, bool reply) {
  KeyOfferPacket p{a.peer_qpn, a.qpn, !a.peer_share.empty(), reply, a.own};
  outgoing_.push_back(Outgoing{a.peer, encode_key_offer(p)});
  ++counters_.offers_sent;
}

// Takes the peer's offer if it is the first that verifies (and the one taken after it, again);
// false, remembering why, for any other.
bool InbandKeys::take(Agreement& a, const KeyOfferPacket& packet) {
  if (!a.peer_share.empty()) {
    if (packet.offer.share == a.peer_share) return true;
    a.refused = "an offer with another key share came after the one taken";
    return false;
  }
  if (!a.exchange) return false;  // settled without an offer: nothing more is taken
  auto keys = a.exchange->finish(a.qpn, 0, packet.offer, a.peer_qpn, 0, a.peer_name);
  if (!keys.ok()) {
    a.refused = keys.error().message;
    return false;
  }
  a.peer_share = packet.offer.share;
  a.exchange.reset();
  Outcome o{a.qpn, true, keys.value(), {}};
  o.keys.keys_later = true;
  outcomes_.push_back(std::move(o));
  return true;
}

void InbandKeys::on_offer(Instant now, const KeyOfferPacket* packet) {
  ++counters_.offers_received;
  const auto it = packet != nullptr ? agreements_.find(packet->dest_qpn) : agreements_.end();
  if (it == agreements_.end() || packet->source_qpn != it->second.peer_qpn) {
    ++counters_.offers_refused;  // malformed, or for no agreement of ours
    return;
  }
  Agreement& a = it->second;
  const bool first = a.peer_share.empty();
  if (!take(a, *packet)) {
    ++counters_.offers_refused;
    return;
  }
  a.peer_holds_ours = a.peer_holds_ours || packet->holds_yours;
  if (first || (!packet->reply && now - a.last_reply >= kMinReplyInterval)) {
    a.last_reply = now;
    send(a, /*reply=*/true);
  }
}

void InbandKeys::fail(Agreement& a) {
  const std::string peer = a.peer_name + " (queue pair " + std::to_string(a.peer_qpn) +
                           ") within " + std::to_string(timeout_.ns / 1'000'000) + " ms";
  std::string why = a.refused.empty()
                        ? "no key offer from " + peer + ": both ends need secure mode " +
                              std::string(to_string(a.mode)) +
                              " and the same key file, and the peer's QP must reach RTR"
                        : "no key agreement with " + peer + ": " + a.refused;
  outcomes_.push_back(Outcome{a.qpn, false, {}, std::move(why)});
}

// An agreement sends until it is done or its deadline passes, failing then if no offer was
// taken (one taken already gave the QP its keys; a peer that lacks ours fails on its own).
void InbandKeys::on_timer(Instant now) {
  for (auto& [qpn, a] : agreements_) {
    if (a.quiet) continue;
    if (a.done() || now >= a.deadline) {
      settle(a);
      continue;
    }
    if (now >= a.next_send) {
      send(a, /*reply=*/false);
      a.next_send = now + kResendInterval;
    }
  }
}

Instant InbandKeys::next_deadline() const {
  Instant next = Instant::never();
  if (unsettled_ == 0) return next;
  for (const auto& [qpn, a] : agreements_)
    if (!a.quiet) next = std::min(next, a.done() ? Instant{0} : std::min(a.next_send, a.deadline));
  return next;
}

}  // namespace mrc::secure
