// Configuration of a queue pair: one plain struct with defaulted, unit-suffixed fields and a
// validate() that says what is wrong. Names and ranges follow the OCP MRC API where it has the
// knob (mpr, max_wimm, timeout, retry counts, EV count and ev_min_active).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mrc/error.hpp"
#include "mrc/result.hpp"
#include "mrc/types.hpp"

namespace mrc {

enum class CcAlgorithm : uint8_t { kNscc, kAimd, kFixed };
// "nscc", "aimd" or "fixed"; anything else is an error listing them.
Result<CcAlgorithm, Error> parse_cc_algorithm(std::string_view name);

// Secure mode (docs/PROTOCOL.md, "Secure packets"): every packet of a QP carries an AES-GCM
// tag over its headers and payload; kEncrypt also encrypts the payload. kOff: plain MRC.
enum class SecureMode : uint8_t { kOff, kAuthenticate, kEncrypt };
// "off", "auth" or "encrypt"; anything else is an error listing them.
Result<SecureMode, Error> parse_secure_mode(std::string_view name);
const char* to_string(SecureMode mode);

// A QP's keys and their use. The two traffic secrets come from connection set-up (a key
// exchange authenticated by a pre-shared key); each end's send secret is the
// other end's receive secret. Every `rekey_packets` packets the sender moves to the next key epoch,
// whose secret follows from the current one; receivers follow on the first packet that
// verifies under the next epoch's key.
inline constexpr size_t kTrafficSecretBytes = 32;
struct SecurityConfig {
  SecureMode mode = SecureMode::kOff;
  std::array<uint8_t, kTrafficSecretBytes> send_secret{};
  std::array<uint8_t, kTrafficSecretBytes> receive_secret{};
  uint64_t rekey_packets = uint64_t{1} << 24;
  // The secrets come after RTR, through QueuePair::set_keys (a key exchange over the QP's own
  // path); until then the QP sends nothing and accepts nothing.
  bool keys_later = false;
  bool operator==(const SecurityConfig&) const = default;
};
// Bytes a secure packet adds to the plain one: its 8-byte security header and 16-byte tag.
inline constexpr uint32_t kSecureOverheadBytes = 24;

// How the EV set chooses among its GOOD EVs and judges feedback (core/path_policy.h): its own
// rules, a baseline, or a learned policy inside the same state machine (QpConfig's default:
// p2c).
enum class PathPolicyKind : uint8_t { kRules, kOblivious, kReps, kHealth, kP2c, kHedge };
// "rules", "oblivious", "reps", "health", "p2c" or "hedge"; anything else is an error listing
// them.
Result<PathPolicyKind, Error> parse_path_policy(std::string_view name);
const char* to_string(PathPolicyKind kind);
// Every policy's name, in PathPolicyKind order (for a command line's choices), and the same as
// one list for messages: "rules, oblivious, reps, health, p2c, hedge".
const std::vector<std::string>& path_policy_names();
const std::string& path_policy_name_list();

// The health policy's parameters (core/learned_policies.h, HealthPolicy). The defaults are the
// trained values of data/path_policy/health.json (bench/paths_train.py made them).
struct HealthPolicyConfig {
  uint8_t ev_shift = 3;   // each EV's loss share: an EWMA with gain 2^-ev_shift per feedback
  double ratio = 1.68;    // a loss strikes if the EV's share exceeds ratio x its plane's median
  double floor = 0.0361;  // ... and this absolute share
  // Failure prediction: each EV's risk in [0, 1] rises when the state machine retires it
  // (flap_risk added: a path that failed before fails again), on an ECN mark or trim (by
  // mark_risk of what is left to 1) and on an RTT sample above rtt_inflation x the plane's
  // lowest (by 1/8 of what is left; 0: RTTs not used), and decays by 2^-risk_shift on a clean
  // acknowledgement. Above risk_limit a loss strikes at once and the EV is passed over for a
  // random GOOD EV of lower risk; risk_limit 1 turns prediction off.
  double flap_risk = 0.31;
  double mark_risk = 0.394;
  double rtt_inflation = 4.85;
  uint8_t risk_shift = 6;
  double risk_limit = 0.377;
};

// The p2c policy's parameters (core/learned_policies.h, P2cPolicy): each EV's score moves
// toward 255 x (the feedback's weight) by 2^-shift per feedback; a clean acknowledgement
// weighs 0. The defaults are data/path_policy/p2c.json.
struct P2cPolicyConfig {
  uint8_t shift = 4;
  double mark_weight = 0.127;  // an ECN mark or a trim
  double loss_weight = 0.24;   // a loss found other than by a timeout
};

// The hedge policy's parameters (core/learned_policies.h, HedgePolicy): each EV's penalty
// grows by these on feedback and shrinks by `decay` on a clean acknowledgement; its weight is
// 2^(-penalty/16), never below `floor`. The defaults are data/path_policy/hedge.json.
struct HedgePolicyConfig {
  double mark_penalty = 11;
  double loss_penalty = 18;
  double decay = 4;
  double floor = 0.09251;  // every GOOD EV keeps at least this share of a fair weight
};

// The watchdog around a path policy (core/path_watchdog.h): the policy runs in epochs of
// max(epoch_rtts x RTT, min_epoch_ns); when its goodput falls below (1 - fall) x the last
// epoch the rules ran, `bad_epochs` times in a row, the rules take over for a random
// revert_epochs..2 x revert_epochs epochs. Every recalibrate_every policy epochs the rules
// run one epoch, which becomes the new baseline.
struct PathWatchdogConfig {
  bool enabled = false;
  uint16_t epoch_rtts = 16;
  int64_t min_epoch_ns = 20'000;
  double fall = 0.2;
  uint8_t bad_epochs = 2;
  uint16_t revert_epochs = 4;
  uint16_t recalibrate_every = 8;
};

// NSCC-style window congestion control parameters (see core/cc/nscc.h).
struct NsccConfig {
  // Base (unloaded) RTT. 0 = learn it as the minimum RTT observed.
  int64_t base_rtt_ns = 0;
  // Target queueing delay above base RTT. 0 = base_rtt / 2 (learned); the UDP datapath
  // takes its own default for 0 instead.
  int64_t target_delay_ns = 0;
  uint64_t max_window_bytes = 4u << 20;
  uint64_t min_window_bytes = 4096;
  uint64_t initial_window_bytes = 1u << 20;
  double proportional_gain = 0.25;  // eta: how fast the window grows while delay < target
  double fair_increase_mtus = 1.0;  // fi: MTUs added per RTT while delay >= target, no ECN
  double decrease_gain = 0.5;       // gamma: multiplicative decrease scale on ECN + delay
  double max_decrease = 0.5;        // max_md_jump: largest fraction removed per decrease
  bool quick_adapt = true;          // after losses, cut the window to what was delivered
  // Quick adapt acts only on a round that delivered less than max_window >> qa_gate (a QP
  // that delivered more is not in an incast; a lost packet there is a path signal). 0: always.
  uint8_t qa_gate = 3;
  // Quick adapt also acts when the average queueing delay exceeds this. 0 = 4 x target delay.
  int64_t qa_threshold_ns = 0;
};

struct QpConfig {
  uint32_t mtu_bytes = 4096;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_sge = 16;

  // Entropy values: `ev_count` active EVs per QP split evenly over the planes, plus a backup
  // set per plane that replaces EVs marked ASSUMED_BAD.
  uint16_t ev_count = 128;
  uint16_t ev_backup_per_plane = 8;
  uint16_t ev_min_active = 16;
  int64_t ev_probe_interval_ns = 50'000;
  uint8_t ev_revive_probes = 3;
  // A first loss on an EV only SKIPs it; a second within this many uses retires it (EvSetConfig).
  uint8_t ev_loss_strike_uses = 2;
  // Path policy inside the EV state machine (core/path_policy.h). The default is the learned
  // p2c policy, which passed the ship gate on the simulator's held-out scenarios
  // (docs/BENCHMARKS.md, "Path policies"); kRules: MRC's own rules alone.
  PathPolicyKind path_policy = PathPolicyKind::kP2c;
  HealthPolicyConfig health;         // path_policy = kHealth
  P2cPolicyConfig p2c;               // path_policy = kP2c
  HedgePolicyConfig hedge;           // path_policy = kHedge
  PathWatchdogConfig path_watchdog;  // around any policy but kRules
  // 0: random 32-bit EVs (simulator). Otherwise EVs are UDP source ports starting here (the
  // UDP datapath binds one send socket per port); see EvSetConfig::port_base.
  uint16_t ev_port_base = 0;
  // Source ports the datapath binds per plane (plane p owns [base + p*n, base + (p+1)*n));
  // 0 = just enough for ev_count/planes + ev_backup_per_plane.
  uint16_t ev_ports_per_plane = 0;
  // Spray granularity: new data packets go out in bursts of up to this many consecutive
  // packets on one EV (retransmissions and control packets always take the next EV). 1 sprays
  // every packet on its own EV; k > 1 lets a datapath send a burst as one batch (UDP GSO: one
  // system call and one socket buffer for k datagrams). Bounded by kMaxEvBurstPackets.
  // 0: the datapath's choice (the UDP datapath sets its default; the engine, and so the simulator,
  // takes 0 as 1).
  uint16_t ev_burst_packets = 0;
  // Non-empty: OCP explicit EV mode. These EVs (and only these) are used, each on its plane,
  // an EV listed k times taking k shares; ev_count and ev_backup_per_plane are then ignored.
  std::vector<ExplicitEv> ev_list;
  // Receiver back-pressure (rcv_cwnd_pen, our semantics; see core/incast_detector.h): while
  // trims of two or more of the endpoint's QPs fall within incast_window_ns, its SACKs carry
  // incast_penalty (0..127; 0: never), and a sender's trim then removes penalty/128 of its
  // window, at most once per base RTT.
  int64_t incast_window_ns = 10'000;
  uint8_t incast_penalty = 64;

  // PSN windows in units of 128 PSNs (OCP "MPR"): requester and responder.
  uint8_t mpr = 32;
  uint8_t mpr_dest = 32;
  // In-flight WRITE-with-immediate messages, as requester and as responder.
  uint16_t max_wimm = 64;
  uint16_t max_wimm_dest = 64;

  // OCP ACK timeout: 1.024 us * 2^timeout (max 24). Retries: linear (max 7), then
  // exponential backoff (max 25; 25 = infinite).
  uint8_t timeout = 12;
  uint8_t retry_linear = 7;
  uint8_t retry_exp = 7;

  // Receiver SACK coalescing: a SACK every N data packets (1..64), or after ack_delay_ns.
  // 0: the datapath's choice (the UDP datapath sets its default; the engine, and so the simulator,
  // takes 0 as kEngineAckEvery). sack_every() is the value in force.
  uint32_t ack_every_packets = 0;
  uint32_t sack_every() const;
  int64_t ack_delay_ns = 2'000;

  // Largest message on the wire; a longer work request is carried as several messages.
  uint64_t max_message_bytes = 1ull << 30;

  // Authenticated (and optionally encrypted) packets; mtu_bytes must then leave room for
  // kSecureOverheadBytes (at most 9000 - 24).
  SecurityConfig security;

  CcAlgorithm cc = CcAlgorithm::kNscc;
  NsccConfig nscc;
  uint64_t fixed_window_bytes = 1u << 20;

  // Payload bytes per packet, with what follows from it: the largest message a whole number of
  // packets (at most 1 GiB) and a minimum congestion window of at least one packet.
  void set_mtu(uint32_t bytes);

  // Ok for a configuration a QP over `planes` planes can run with; otherwise an error
  // (Errc::kInvalidArgument) naming the field, its value and what it must be.
  Result<Ok, Error> validate(int planes) const;

  Duration ack_timeout() const { return Duration{static_cast<int64_t>(1024) << timeout}; }
};

inline constexpr uint8_t kRetryInfinite = 25;
inline constexpr uint32_t kMaxSge = 16;
// Entries of an explicit EV list (QpConfig::ev_list): the engine's slot index has 11 bits.
inline constexpr size_t kMaxExplicitEvs = 1024;
// Largest ev_burst_packets: what one UDP GSO call can carry (the kernel's UDP_MAX_SEGMENTS).
inline constexpr uint16_t kMaxEvBurstPackets = 64;
// SACK coalescing of a QP that leaves it to the datapath, where the datapath does not choose.
inline constexpr uint32_t kEngineAckEvery = 4;
inline uint32_t QpConfig::sack_every() const {
  return ack_every_packets == 0 ? kEngineAckEvery : ack_every_packets;
}

}  // namespace mrc
