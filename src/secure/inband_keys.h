// Key agreement over a secure QP's own path, for devices whose users have no out-of-band
// channel to carry key offers: the OCP verbs device, whose applications exchange QPNs, PSNs and
// GIDs and nothing more. The offers are secure/key_exchange.h's (ephemeral X25519 shares proved by
// HMAC under the pre-shared key), carried in KEY OFFER datagrams (docs/PROTOCOL.md §1.13) from
// the MRC port to the peer's; the QP waits for its keys meanwhile (SecurityConfig::keys_later).
//
// The exchange, per QP, as both ends run it:
//   - from RTR on, send our offer every kResendInterval until done, with two flags: H, "I hold
//     your offer", and R, "this is a reply";
//   - take the first offer from the connected peer QP that verifies; its keys go to the QP;
//   - answer every verified offer that is not itself a reply (at most once per
//     kMinReplyInterval, so a replayed offer cannot drive a flood): a peer still sending is not
//     done, and replies never cause replies, so the exchange ends;
//   - done once we hold the peer's offer and it has said H.
// Nothing unverified changes anything: an offer that fails (another key, another mode, a bad
// proof) is dropped and remembered, and if no offer has verified after `timeout`, the agreement
// fails with what the refused offers said, naming the peer. Each end's keys rest on its own fresh
// share, so a replayed old offer cannot make an end reuse a key.
//
// Sans-IO: time comes in, datagrams and outcomes go out. io::Device (io/device.h) runs it, sending
// and receiving the datagrams through its UdpHost's side channel.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mrc/types.hpp"
#include "secure/key_exchange.h"

namespace mrc::secure {

inline constexpr uint8_t kKeyOfferOpcode = 0xDF;       // BTH opcode of a KEY OFFER datagram
inline constexpr size_t kKeyOfferBytes = 12 + 96 + 4;  // BTH, KOETH, ICRC

struct KeyOfferPacket {
  uint32_t dest_qpn = 0;     // the receiver's QP
  uint32_t source_qpn = 0;   // the sender's QP
  bool holds_yours = false;  // H
  bool reply = false;        // R
  KeyOffer offer;
};
std::vector<uint8_t> encode_key_offer(const KeyOfferPacket& packet);
// Nothing if the datagram is not a well-formed KEY OFFER with a good ICRC (the UDP datapath's
// CRC, unless `icrc_checked`: the xdp link checked a RoCEv2 ICRC there).
std::optional<KeyOfferPacket> decode_key_offer(std::span<const uint8_t> datagram,
                                               bool icrc_checked = false);
inline bool is_key_offer(std::span<const uint8_t> datagram) {
  return !datagram.empty() && datagram[0] == kKeyOfferOpcode;
}

class InbandKeys {
 public:
  static constexpr Duration kResendInterval = Duration::from_ms(50);
  static constexpr Duration kMinReplyInterval = Duration::from_ms(5);
  static constexpr Duration kDefaultTimeout = Duration::from_ms(10'000);

  struct Outgoing {
    uint32_t peer = 0;  // the peer handle the agreement was started with
    std::vector<uint8_t> datagram;
  };
  // An agreement's outcome, once: keys for the QP, or why there are none.
  struct Outcome {
    uint32_t qpn = 0;
    bool agreed = false;
    SecurityConfig keys;  // agreed
    std::string error;    // not agreed
  };
  struct Counters {
    uint64_t offers_sent = 0, offers_received = 0, offers_refused = 0;
  };

  explicit InbandKeys(Duration timeout = kDefaultTimeout) : timeout_(timeout) {}

  // Starts agreeing keys for local QP `qpn`, connected to `peer_qpn` at the peer handle `peer`
  // (`peer_name` goes into errors), under `key`. The first offer goes out at once.
  Result<Ok, Error> start(Instant now, SecureMode mode, std::span<const uint8_t> key, uint32_t qpn,
                          uint32_t peer, uint32_t peer_qpn, const std::string& peer_name);
  // Forgets the QP's agreement (the QP was reset or destroyed).
  void stop(uint32_t qpn);
  // Whether on_timer has anything to do or there is output to take: false once every
  // agreement is settled (done or past its deadline; it then only answers offers).
  bool active() const { return unsettled_ > 0 || !outgoing_.empty() || !outcomes_.empty(); }

  void on_datagram(Instant now, std::span<const uint8_t> datagram) {
    const auto packet = decode_key_offer(datagram);
    on_offer(now, packet ? &*packet : nullptr);
  }
  // A KEY OFFER its receiver decoded already; null for a datagram that did not decode.
  void on_offer(Instant now, const KeyOfferPacket* packet);
  void on_timer(Instant now);
  Instant next_deadline() const;

  std::vector<Outgoing> take_outgoing() { return std::exchange(outgoing_, {}); }
  std::vector<Outcome> take_outcomes() { return std::exchange(outcomes_, {}); }
  const Counters& counters() const { return counters_; }

 private:
  struct Agreement {
    explicit Agreement(KeyExchange e) : exchange(std::move(e)) {}
    // The ephemeral key pair, let go once an offer is taken (forward secrecy: answering later
    // offers needs only `own`).
    std::optional<KeyExchange> exchange;
    SecureMode mode = SecureMode::kOff;
    uint32_t qpn = 0, peer = 0, peer_qpn = 0;
    std::string peer_name;
    KeyOffer own;
    std::string peer_share;  // of the offer taken; empty until then
    bool peer_holds_ours = false;
    // Done or past its deadline: sends only replies. Its outcome was given once it took an
    // offer (keys) or turned quiet without one (an error).
    bool quiet = false;
    std::string refused;  // why the last refused offer was refused
    Instant next_send, deadline, last_reply = Instant{INT64_MIN / 2};
    bool done() const { return !peer_share.empty() && peer_holds_ours; }
  };
  void send(Agreement& a, bool reply);
  bool take(Agreement& a, const KeyOfferPacket& packet);
  void fail(Agreement& a);
  void settle(Agreement& a);

  Duration timeout_;
  std::map<uint32_t, Agreement> agreements_;
  size_t unsettled_ = 0;  // agreements not quiet
  std::vector<Outgoing> outgoing_;
  std::vector<Outcome> outcomes_;
  Counters counters_;
};

}  // namespace mrc::secure
