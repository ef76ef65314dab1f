// Validation of queue-pair configuration: every limit checked with a message that names the
// field, the bad value and the allowed range.
#include "mrc/config.hpp"

#include <algorithm>
#include <cstdio>

namespace mrc {

Result<CcAlgorithm, Error> parse_cc_algorithm(std::string_view name) {
  if (name == "nscc") return CcAlgorithm::kNscc;
  if (name == "aimd") return CcAlgorithm::kAimd;
  if (name == "fixed") return CcAlgorithm::kFixed;
  return fail(Errc::kInvalidArgument,
              "'" + std::string(name) + "' is no congestion control: one of nscc, aimd, fixed");
}

const char* to_string(PathPolicyKind kind) {
  switch (kind) {
    case PathPolicyKind::kRules:
      return "rules";
    case PathPolicyKind::kOblivious:
      return "oblivious";
    case PathPolicyKind::kReps:
      return "reps";
    case PathPolicyKind::kHealth:
      return "health";
    case PathPolicyKind::kP2c:
      return "p2c";
    case PathPolicyKind::kHedge:
      return "hedge";
  }
  return "?";
}

// Names are to_string's: one list, read both ways.
Result<PathPolicyKind, Error> parse_path_policy(std::string_view name) {
  for (int k = 0; k <= static_cast<int>(PathPolicyKind::kHedge); ++k)
    if (name == to_string(static_cast<PathPolicyKind>(k))) return static_cast<PathPolicyKind>(k);
  return fail(Errc::kInvalidArgument,
              "'" + std::string(name) + "' is no path policy: one of " + path_policy_name_list());
}

const std::vector<std::string>& path_policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int k = 0; k <= static_cast<int>(PathPolicyKind::kHedge); ++k)
      out.emplace_back(to_string(static_cast<PathPolicyKind>(k)));
    return out;
  }();
  return names;
}

const std::string& path_policy_name_list() {
  static const std::string list = [] {
    std::string out;
    for (const std::string& name : path_policy_names()) out += (out.empty() ? "" : ", ") + name;
    return out;
  }();
  return list;
}

const char* to_string(SecureMode mode) {
  switch (mode) {
    case SecureMode::kOff:
      return "off";
    case SecureMode::kAuthenticate:
      return "auth";
    case SecureMode::kEncrypt:
      return "encrypt";
  }
  return "?";
}

Result<SecureMode, Error> parse_secure_mode(std::string_view name) {
  for (const SecureMode mode : {SecureMode::kOff, SecureMode::kAuthenticate, SecureMode::kEncrypt})
    if (name == to_string(mode)) return mode;
  return fail(Errc::kInvalidArgument,
              "'" + std::string(name) + "' is no secure mode: one of off, auth, encrypt");
}

namespace {
std::string range_error(const char* field, uint64_t value, uint64_t lo, uint64_t hi) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s = %llu is out of range: must be in [%llu, %llu]", field,
                static_cast<unsigned long long>(value), static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(hi));
  return buf;
}

std::string check_fields(const QpConfig& c, int planes);
std::string check_security(const QpConfig& c);
std::string check_path_policy(const QpConfig& c);
std::string check_auto_evs(const QpConfig& c, int planes);
std::string check_ev_list(const QpConfig& c, int planes);

}  // namespace

void QpConfig::set_mtu(uint32_t bytes) {
  mtu_bytes = bytes;
  if (bytes == 0) return;  // validate() says what is wrong
  max_message_bytes = (1ull << 30) / bytes * bytes;
  nscc.min_window_bytes = std::max<uint64_t>(nscc.min_window_bytes, bytes);
}

Result<Ok, Error> QpConfig::validate(int planes) const {
  if (std::string problem = check_fields(*this, planes); !problem.empty())
    return fail(Errc::kInvalidArgument, std::move(problem));
  return Ok{};
}

namespace {

std::string check_fields(const QpConfig& c, int planes) {
  if (planes < 1 || planes > kMaxPlanes) return range_error("planes", planes, 1, kMaxPlanes);
  if (c.mtu_bytes < 256 || c.mtu_bytes > 9000)
    return range_error("mtu_bytes", c.mtu_bytes, 256, 9000);
  if (c.max_send_wr < 1 || c.max_send_wr > 65536)
    return range_error("max_send_wr", c.max_send_wr, 1, 65536);
  if (c.max_recv_wr < 1 || c.max_recv_wr > 65536)
    return range_error("max_recv_wr", c.max_recv_wr, 1, 65536);
  if (c.max_sge < 1 || c.max_sge > kMaxSge) return range_error("max_sge", c.max_sge, 1, kMaxSge);
  std::string ev_error = c.ev_list.empty() ? check_auto_evs(c, planes) : check_ev_list(c, planes);
  if (!ev_error.empty()) return ev_error;
  if (c.ev_burst_packets > kMaxEvBurstPackets)
    return range_error("ev_burst_packets", c.ev_burst_packets, 0, kMaxEvBurstPackets);
  if (c.ev_probe_interval_ns < 1000)
    return range_error("ev_probe_interval_ns", c.ev_probe_interval_ns, 1000, INT64_MAX);
  if (c.ev_revive_probes < 1) return range_error("ev_revive_probes", c.ev_revive_probes, 1, 255);
  if (c.mpr < 1) return range_error("mpr", c.mpr, 1, 255);
  if (c.mpr_dest < 1) return range_error("mpr_dest", c.mpr_dest, 1, 255);
  if (c.max_wimm < 1) return range_error("max_wimm", c.max_wimm, 1, 65535);
  if (c.max_wimm_dest < 1 || c.max_wimm_dest > 4096)
    return range_error("max_wimm_dest", c.max_wimm_dest, 1, 4096);
  if (c.timeout > 24) return range_error("timeout", c.timeout, 0, 24);
  if (c.retry_linear > 7) return range_error("retry_linear", c.retry_linear, 0, 7);
  if (c.retry_exp > kRetryInfinite) return range_error("retry_exp", c.retry_exp, 0, kRetryInfinite);
  if (c.ack_every_packets > 64) return range_error("ack_every_packets", c.ack_every_packets, 0, 64);
  if (c.max_message_bytes < c.mtu_bytes || c.max_message_bytes > (1ull << 31) ||
      c.max_message_bytes % c.mtu_bytes)
    return "max_message_bytes = " + std::to_string(c.max_message_bytes) +
           " must be a multiple of mtu_bytes and at most 2^31";
  if (c.incast_penalty > 127) return range_error("incast_penalty", c.incast_penalty, 0, 127);
  if (c.incast_window_ns < 0)
    return range_error("incast_window_ns", c.incast_window_ns, 0, INT64_MAX);
  if (c.nscc.min_window_bytes < c.mtu_bytes || c.nscc.max_window_bytes < c.nscc.min_window_bytes)
    return "nscc window bounds must satisfy mtu_bytes <= min_window_bytes <= max_window_bytes";
  if (c.fixed_window_bytes < c.mtu_bytes) return "fixed_window_bytes must be at least mtu_bytes";
  if (std::string error = check_security(c); !error.empty()) return error;
  return check_path_policy(c);
}

// A secure packet is 24 bytes longer than a plain one, and the largest datagram stays what the
// datapath's buffers hold; an all-zero secret is a key nobody set.
std::string check_security(const QpConfig& c) {
  if (c.security.mode == SecureMode::kOff) return {};
  constexpr uint32_t kMaxSecureMtu = 9000 - kSecureOverheadBytes;
  if (c.mtu_bytes > kMaxSecureMtu)
    return range_error("mtu_bytes (secure mode)", c.mtu_bytes, 256, kMaxSecureMtu);
  if (c.security.rekey_packets < 1 || c.security.rekey_packets > (uint64_t{1} << 40))
    return range_error("security.rekey_packets", c.security.rekey_packets, 1, uint64_t{1} << 40);
  const auto zero = std::array<uint8_t, kTrafficSecretBytes>{};
  if (!c.security.keys_later &&
      (c.security.send_secret == zero || c.security.receive_secret == zero))
    return "secure mode needs both traffic secrets (connection set-up derives them; none was "
           "given)";
  return {};
}

// The integer settings whose out-of-range values the policies could not run with (the
// simulator's scenario loader checks every field with its own messages).
std::string check_path_policy(const QpConfig& c) {
  if (c.health.ev_shift < 1 || c.health.ev_shift > 7)
    return range_error("health.ev_shift", c.health.ev_shift, 1, 7);
  if (c.health.risk_shift < 1 || c.health.risk_shift > 7)
    return range_error("health.risk_shift", c.health.risk_shift, 1, 7);
  if (c.p2c.shift < 1 || c.p2c.shift > 7) return range_error("p2c.shift", c.p2c.shift, 1, 7);
  const PathWatchdogConfig& w = c.path_watchdog;
  if (w.epoch_rtts < 1) return range_error("path_watchdog.epoch_rtts", w.epoch_rtts, 1, 65535);
  if (w.bad_epochs < 1) return range_error("path_watchdog.bad_epochs", w.bad_epochs, 1, 255);
  if (w.revert_epochs < 1 || w.revert_epochs > 32767)
    return range_error("path_watchdog.revert_epochs", w.revert_epochs, 1, 32767);
  if (w.recalibrate_every < 1)
    return range_error("path_watchdog.recalibrate_every", w.recalibrate_every, 1, 65535);
  if (!(w.fall >= 0 && w.fall < 1)) return "path_watchdog.fall must be in [0, 1)";
  return {};
}

std::string check_auto_evs(const QpConfig& c, int planes) {
  if (c.ev_count < static_cast<uint16_t>(planes) || c.ev_count > 256)
    return range_error("ev_count", c.ev_count, static_cast<uint64_t>(planes), 256);
  if (c.ev_count % planes != 0)
    return "ev_count = " + std::to_string(c.ev_count) +
           " must be a multiple of the number of planes (" + std::to_string(planes) +
           ") so that every plane gets the same number of EVs";
  if (c.ev_backup_per_plane > 64)
    return range_error("ev_backup_per_plane", c.ev_backup_per_plane, 0, 64);
  if (c.ev_min_active < 1 || c.ev_min_active > c.ev_count)
    return range_error("ev_min_active", c.ev_min_active, 1, c.ev_count);
  const uint32_t slots_per_plane = c.ev_count / planes + c.ev_backup_per_plane;
  if (c.ev_ports_per_plane != 0 && c.ev_ports_per_plane < slots_per_plane)
    return "ev_ports_per_plane = " + std::to_string(c.ev_ports_per_plane) + " is fewer than the " +
           std::to_string(slots_per_plane) +
           " EVs a plane needs (ev_count/planes + ev_backup_per_plane)";
  const uint32_t stride = c.ev_ports_per_plane != 0 ? c.ev_ports_per_plane : slots_per_plane;
  if (c.ev_port_base != 0 && c.ev_port_base + planes * stride > 65536)
    return "ev_port_base = " + std::to_string(c.ev_port_base) + " leaves too few ports for " +
           std::to_string(planes * stride) + " EV source ports";
  return {};
}

// An explicit list: bounded, planes in range, one plane per EV value (an echoed EV must map back
// to one slot), and the floor no higher than the number of distinct EVs.
std::string check_ev_list(const QpConfig& c, int planes) {
  if (c.ev_list.size() > kMaxExplicitEvs)
    return range_error("ev_list entries", c.ev_list.size(), 1, kMaxExplicitEvs);
  std::vector<ExplicitEv> distinct;
  for (const ExplicitEv& e : c.ev_list) {
    if (e.plane.value >= planes)
      return "ev_list: EV " + std::to_string(e.ev.value) + " names plane " +
             std::to_string(e.plane.value) + " but the QP has " + std::to_string(planes) +
             " planes";
    bool seen = false;
    for (const ExplicitEv& d : distinct) {
      if (d.ev != e.ev) continue;
      if (d.plane != e.plane)
        return "ev_list: EV " + std::to_string(e.ev.value) + " is listed on planes " +
               std::to_string(d.plane.value) + " and " + std::to_string(e.plane.value) +
               "; an EV belongs to one plane";
      seen = true;
    }
    if (!seen) distinct.push_back(e);
  }
  if (c.ev_min_active < 1 || c.ev_min_active > distinct.size())
    return range_error("ev_min_active (explicit list: at most its distinct EVs)", c.ev_min_active,
                       1, distinct.size());
  return {};
}

}  // namespace

}  // namespace mrc
