// Validation of queue-pair configuration: every limit checked with a message that names the
// field, the bad value and the allowed range.
#include "mrc/config.hpp"

#include <algorithm>
#include <cstdio>

namespace mrc {

bool parse_cc_algorithm(std::string_view name, CcAlgorithm& out) {
  if (name == "nscc")
    out = CcAlgorithm::kNscc;
  else if (name == "aimd")
    out = CcAlgorithm::kAimd;
  else if (name == "fixed")
    out = CcAlgorithm::kFixed;
  else
    return false;
  return true;
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
bool parse_path_policy(std::string_view name, PathPolicyKind& out) {
  for (int k = 0; k <= static_cast<int>(PathPolicyKind::kHedge); ++k) {
    if (name == to_string(static_cast<PathPolicyKind>(k))) {
      out = static_cast<PathPolicyKind>(k);
      return true;
    }
  }
  return false;
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

bool parse_secure_mode(std::string_view name, SecureMode& out) {
  for (const SecureMode mode :
       {SecureMode::kOff, SecureMode::kAuthenticate, SecureMode::kEncrypt}) {
    if (name == to_string(mode)) {
      out = mode;
      return true;
    }
  }
  return false;
}

namespace {
std::string range_error(const char* field, uint64_t value, uint64_t lo, uint64_t hi) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s = %llu is out of range: must be in [%llu, %llu]", field,
                static_cast<unsigned long long>(value), static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(hi));
  return buf;
}
}  // namespace

void QpConfig::set_mtu(uint32_t bytes) {
  mtu_bytes = bytes;
  if (bytes == 0) return;  // validate() says what is wrong
  max_message_bytes = (1ull << 30) / bytes * bytes;
  nscc.min_window_bytes = std::max<uint64_t>(nscc.min_window_bytes, bytes);
}

std::string QpConfig::validate(int planes) const {
  if (planes < 1 || planes > kMaxPlanes) return range_error("planes", planes, 1, kMaxPlanes);
  if (mtu_bytes < 256 || mtu_bytes > 9000) return range_error("mtu_bytes", mtu_bytes, 256, 9000);
  if (max_send_wr < 1 || max_send_wr > 65536)
    return range_error("max_send_wr", max_send_wr, 1, 65536);
  if (max_recv_wr < 1 || max_recv_wr > 65536)
    return range_error("max_recv_wr", max_recv_wr, 1, 65536);
  if (max_sge < 1 || max_sge > kMaxSge) return range_error("max_sge", max_sge, 1, kMaxSge);
  std::string ev_error = ev_list.empty() ? validate_auto_evs(planes) : validate_ev_list(planes);
  if (!ev_error.empty()) return ev_error;
  if (ev_burst_packets > kMaxEvBurstPackets)
    return range_error("ev_burst_packets", ev_burst_packets, 0, kMaxEvBurstPackets);
  if (ev_probe_interval_ns < 1000)
    return range_error("ev_probe_interval_ns", ev_probe_interval_ns, 1000, INT64_MAX);
  if (ev_revive_probes < 1) return range_error("ev_revive_probes", ev_revive_probes, 1, 255);
  if (mpr < 1) return range_error("mpr", mpr, 1, 255);
  if (mpr_dest < 1) return range_error("mpr_dest", mpr_dest, 1, 255);
  if (max_wimm < 1) return range_error("max_wimm", max_wimm, 1, 65535);
  if (max_wimm_dest < 1 || max_wimm_dest > 4096)
    return range_error("max_wimm_dest", max_wimm_dest, 1, 4096);
  if (timeout > 24) return range_error("timeout", timeout, 0, 24);
  if (retry_linear > 7) return range_error("retry_linear", retry_linear, 0, 7);
  if (retry_exp > kRetryInfinite) return range_error("retry_exp", retry_exp, 0, kRetryInfinite);
  if (ack_every_packets > 64) return range_error("ack_every_packets", ack_every_packets, 0, 64);
  if (max_message_bytes < mtu_bytes || max_message_bytes > (1ull << 31) ||
      max_message_bytes % mtu_bytes)
    return "max_message_bytes = " + std::to_string(max_message_bytes) +
           " must be a multiple of mtu_bytes and at most 2^31";
  if (incast_penalty > 127) return range_error("incast_penalty", incast_penalty, 0, 127);
  if (incast_window_ns < 0) return range_error("incast_window_ns", incast_window_ns, 0, INT64_MAX);
  if (nscc.min_window_bytes < mtu_bytes || nscc.max_window_bytes < nscc.min_window_bytes)
    return "nscc window bounds must satisfy mtu_bytes <= min_window_bytes <= max_window_bytes";
  if (fixed_window_bytes < mtu_bytes) return "fixed_window_bytes must be at least mtu_bytes";
  if (std::string error = validate_security(); !error.empty()) return error;
  return validate_path_policy();
}

// A secure packet is 24 bytes longer than a plain one, and the largest datagram stays what the
// datapath's buffers hold; an all-zero secret is a key nobody set.
std::string QpConfig::validate_security() const {
  if (security.mode == SecureMode::kOff) return {};
  constexpr uint32_t kMaxSecureMtu = 9000 - kSecureOverheadBytes;
  if (mtu_bytes > kMaxSecureMtu)
    return range_error("mtu_bytes (secure mode)", mtu_bytes, 256, kMaxSecureMtu);
  if (security.rekey_packets < 1 || security.rekey_packets > (uint64_t{1} << 40))
    return range_error("security.rekey_packets", security.rekey_packets, 1, uint64_t{1} << 40);
  const auto zero = std::array<uint8_t, kTrafficSecretBytes>{};
  if (!security.keys_later && (security.send_secret == zero || security.receive_secret == zero))
    return "secure mode needs both traffic secrets (connection set-up derives them; none was "
           "given)";
  return {};
}

// The integer settings whose out-of-range values the policies could not run with (the
// simulator's scenario loader checks every field with its own messages).
std::string QpConfig::validate_path_policy() const {
  if (health.ev_shift < 1 || health.ev_shift > 7)
    return range_error("health.ev_shift", health.ev_shift, 1, 7);
  if (health.risk_shift < 1 || health.risk_shift > 7)
    return range_error("health.risk_shift", health.risk_shift, 1, 7);
  if (p2c.shift < 1 || p2c.shift > 7) return range_error("p2c.shift", p2c.shift, 1, 7);
  const PathWatchdogConfig& w = path_watchdog;
  if (w.epoch_rtts < 1) return range_error("path_watchdog.epoch_rtts", w.epoch_rtts, 1, 65535);
  if (w.bad_epochs < 1) return range_error("path_watchdog.bad_epochs", w.bad_epochs, 1, 255);
  if (w.revert_epochs < 1 || w.revert_epochs > 32767)
    return range_error("path_watchdog.revert_epochs", w.revert_epochs, 1, 32767);
  if (w.recalibrate_every < 1)
    return range_error("path_watchdog.recalibrate_every", w.recalibrate_every, 1, 65535);
  if (!(w.fall >= 0 && w.fall < 1)) return "path_watchdog.fall must be in [0, 1)";
  return {};
}

std::string QpConfig::validate_auto_evs(int planes) const {
  if (ev_count < static_cast<uint16_t>(planes) || ev_count > 256)
    return range_error("ev_count", ev_count, static_cast<uint64_t>(planes), 256);
  if (ev_count % planes != 0)
    return "ev_count = " + std::to_string(ev_count) +
           " must be a multiple of the number of planes (" + std::to_string(planes) +
           ") so that every plane gets the same number of EVs";
  if (ev_backup_per_plane > 64)
    return range_error("ev_backup_per_plane", ev_backup_per_plane, 0, 64);
  if (ev_min_active < 1 || ev_min_active > ev_count)
    return range_error("ev_min_active", ev_min_active, 1, ev_count);
  const uint32_t slots_per_plane = ev_count / planes + ev_backup_per_plane;
  if (ev_ports_per_plane != 0 && ev_ports_per_plane < slots_per_plane)
    return "ev_ports_per_plane = " + std::to_string(ev_ports_per_plane) + " is fewer than the " +
           std::to_string(slots_per_plane) +
           " EVs a plane needs (ev_count/planes + ev_backup_per_plane)";
  const uint32_t stride = ev_ports_per_plane != 0 ? ev_ports_per_plane : slots_per_plane;
  if (ev_port_base != 0 && ev_port_base + planes * stride > 65536)
    return "ev_port_base = " + std::to_string(ev_port_base) + " leaves too few ports for " +
           std::to_string(planes * stride) + " EV source ports";
  return {};
}

// An explicit list: bounded, planes in range, one plane per EV value (an echoed EV must map back
// to one slot), and the floor no higher than the number of distinct EVs.
std::string QpConfig::validate_ev_list(int planes) const {
  if (ev_list.size() > kMaxExplicitEvs)
    return range_error("ev_list entries", ev_list.size(), 1, kMaxExplicitEvs);
  std::vector<ExplicitEv> distinct;
  for (const ExplicitEv& e : ev_list) {
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
  if (ev_min_active < 1 || ev_min_active > distinct.size())
    return range_error("ev_min_active (explicit list: at most its distinct EVs)", ev_min_active, 1,
                       distinct.size());
  return {};
}

}  // namespace mrc
