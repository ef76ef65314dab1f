// Scenario files (TOML, read with toml++): every key is optional except where noted; unknown
// keys are errors, so a typo never silently runs a different experiment. The schema is listed
// in docs/SIMULATION.md.
#include "sim/scenario.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace mrc::sim {

namespace {

// Formats a value for an error message: numbers as written (%g), strings quoted.
std::string shown(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}
std::string shown(const std::string& v) {
  return "\"" + v + "\"";
}

// A time read in microseconds (Reader::time keeps it within kMaxTime), in nanoseconds.
Duration from_us(double us) {
  return Duration{static_cast<int64_t>(us * 1e3)};
}

// Reads keys of one table and checks their ranges. The first problem is kept (with the field's
// full name, its value and what is allowed); later reads and checks do nothing once one failed.
struct Reader {
  std::string& error;
  bool ok = true;

  template <typename T>
  void get(const toml::table& t, const std::string& where, const char* key, T& out) {
    const toml::node* n = t.get(key);
    if (n == nullptr || !ok) return;
    const std::string field = where + key;
    if constexpr (std::is_same_v<T, bool>) {
      if (auto v = n->value_exact<bool>()) return void(out = *v);
      return fail(field + ": must be true or false");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (auto v = n->value<double>()) return void(out = static_cast<T>(*v));
      return fail(field + ": must be a number");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (auto v = n->value_exact<std::string>()) return void(out = *v);
      return fail(field + ": must be a string");
    } else {
      const auto v = n->value_exact<int64_t>();
      if (!v) return fail(field + ": must be an integer");
      const auto max = static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (*v < 0 || static_cast<uint64_t>(*v) > max)
        return fail(field + " = " + std::to_string(*v) + ": must be 0.." + std::to_string(max));
      out = static_cast<T>(*v);
    }
  }
  // Fails with "<field> = <value>: must be <allowed>" unless `holds`.
  template <typename V>
  void require(bool holds, const std::string& field, const V& value, const std::string& allowed) {
    if (!holds) fail(field + " = " + shown(value) + ": must be " + allowed);
  }
  // Probabilities and fractions: in [0, 1].
  void probability(const toml::table& t, const std::string& where, const char* key, double& out) {
    get(t, where, key, out);
    require(out >= 0 && out <= 1, where + key, out, "in [0, 1]");
  }
  // A number in [lo, hi]; `allowed` says so in the message.
  void number(const toml::table& t, const std::string& where, const char* key, double& out,
              double lo, double hi, const std::string& allowed) {
    get(t, where, key, out);
    require(out >= lo && out <= hi, where + key, out, allowed);
  }
  // An EWMA's gain as a shift: 1..7 (gain 2^-shift).
  void shift(const toml::table& t, const std::string& where, const char* key, uint8_t& out) {
    uint32_t value = out;
    get(t, where, key, value);
    require(value >= 1 && value <= 7, where + key, double(value), "1..7");
    out = static_cast<uint8_t>(std::clamp<uint32_t>(value, 1, 7));
  }
  // Times in microseconds (or milliseconds): >= 0, or > 0 when `positive`, and finite and at
  // most kMaxTime so that they fit in nanoseconds.
  static constexpr double kMaxTime = 1e12;
  void time(const toml::table& t, const std::string& where, const char* key, double& out,
            bool positive = false) {
    get(t, where, key, out);
    const bool in_range = (positive ? out > 0 : out >= 0) && out <= kMaxTime;
    require(in_range, where + key, out,
            std::string(positive ? "> 0" : ">= 0") + " and at most " + shown(kMaxTime));
  }
  // An array of [a, b] pairs of non-negative integers, each at most `max`.
  void get_pairs(const toml::table& t, const std::string& where, const char* key, uint64_t max,
                 std::vector<std::pair<uint64_t, uint64_t>>& out) {
    const toml::array* a = t.get_as<toml::array>(key);
    if (t.get(key) == nullptr || !ok) return;
    if (a == nullptr) return fail(where + key + ": must be an array of [a, b] pairs");
    for (const toml::node& n : *a) {
      const toml::array* p = n.as_array();
      const auto x = p != nullptr && p->size() == 2 ? (*p)[0].value_exact<int64_t>() : std::nullopt;
      const auto y = p != nullptr && p->size() == 2 ? (*p)[1].value_exact<int64_t>() : std::nullopt;
      if (!x || !y || *x < 0 || *y < 0 || static_cast<uint64_t>(*x) > max ||
          static_cast<uint64_t>(*y) > max)
        return fail(where + key + ": every entry must be [a, b] with integers 0.." +
                    std::to_string(max));
      out.emplace_back(static_cast<uint64_t>(*x), static_cast<uint64_t>(*y));
    }
  }
  void fail(const std::string& message) {
    if (ok) error = message;
    ok = false;
  }
  void check_keys(const toml::table& t, const std::string& where,
                  const std::set<std::string>& allowed) {
    for (const auto& [k, v] : t) {
      if (!allowed.count(std::string(k.str())))
        fail(where + std::string(k.str()) + ": unknown key");
    }
  }
};

void read_link(Reader& r, const toml::table* t, const std::string& where, LinkConfig& link) {
  if (t == nullptr) return;
  r.check_keys(*t, where,
               {"rate_gbps", "propagation_ns", "queue_kib", "ecn_kib", "ecn_max_kib",
                "ecn_max_probability", "trim_kib", "overflow"});
  int64_t propagation = link.propagation.ns;
  uint32_t queue = link.queue_limit_bytes / 1024, ecn = link.ecn_threshold_bytes / 1024,
           ecn_max = link.ecn_max_bytes / 1024, trim = link.trim_threshold_bytes / 1024;
  std::string overflow = link.overflow == OverflowPolicy::kTrim ? "trim" : "drop";
  r.get(*t, where, "rate_gbps", link.rate_gbps);
  r.get(*t, where, "propagation_ns", propagation);
  r.get(*t, where, "queue_kib", queue);
  r.get(*t, where, "ecn_kib", ecn);
  r.get(*t, where, "ecn_max_kib", ecn_max);
  r.get(*t, where, "ecn_max_probability", link.ecn_max_probability);
  r.get(*t, where, "trim_kib", trim);
  r.get(*t, where, "overflow", overflow);
  r.require(overflow == "trim" || overflow == "drop", where + "overflow", overflow,
            "\"trim\" or \"drop\"");
  r.require(link.rate_gbps > 0 && link.rate_gbps <= 1e6, where + "rate_gbps", link.rate_gbps,
            "> 0 and at most 1e6");
  r.require(propagation <= int64_t{1'000'000'000}, where + "propagation_ns", double(propagation),
            "0..1e9");
  constexpr uint32_t kMaxKib = 1u << 20;  // 1 GiB: the byte counts are 32-bit
  r.require(queue >= 1 && queue <= kMaxKib, where + "queue_kib", double(queue),
            "1.." + std::to_string(kMaxKib));
  for (const auto& [key, kib] :
       {std::pair{"ecn_kib", ecn}, {"ecn_max_kib", ecn_max}, {"trim_kib", trim}})
    r.require(kib <= kMaxKib, where + key, double(kib), "0.." + std::to_string(kMaxKib));
  link.propagation = Duration{propagation};
  link.queue_limit_bytes = queue * 1024;
  link.ecn_threshold_bytes = ecn * 1024;
  link.ecn_max_bytes = ecn_max * 1024;
  r.require(ecn_max == 0 || ecn_max > ecn, where + "ecn_max_kib", double(ecn_max),
            "above ecn_kib (" + std::to_string(ecn) + "), or 0 for step marking");
  r.require(link.ecn_max_probability > 0 && link.ecn_max_probability <= 1,
            where + "ecn_max_probability", link.ecn_max_probability, "in (0, 1]");
  link.trim_threshold_bytes = trim * 1024;
  link.overflow = overflow == "trim" ? OverflowPolicy::kTrim : OverflowPolicy::kDrop;
}

void read_fabric_shape(Reader& r, const toml::table& t, FabricConfig& f) {
  std::string topology = "leaf_spine", routing = "ecmp", ecmp_hash = "per_switch";
  r.get(t, "fabric.", "topology", topology);
  r.get(t, "fabric.", "routing", routing);
  r.get(t, "fabric.", "ecmp_hash", ecmp_hash);
  if (ecmp_hash == "same")
    f.ecmp_same_hash = true;
  else if (ecmp_hash != "per_switch")
    r.require(false, "fabric.ecmp_hash", ecmp_hash, "\"per_switch\" or \"same\"");
  r.get(t, "fabric.", "k", f.k);
  if (topology == "leaf_spine")
    f.topology = TopologyKind::kLeafSpine;
  else if (topology == "fat_tree")
    f.topology = TopologyKind::kFatTree;
  else
    r.require(false, "fabric.topology", topology, "\"leaf_spine\" or \"fat_tree\"");
  if (routing == "ecmp")
    f.routing = Routing::kEcmp;
  else if (routing == "spray")
    f.routing = Routing::kSpray;
  else if (routing == "source")
    f.routing = Routing::kSource;
  else
    r.require(false, "fabric.routing", routing, "\"ecmp\", \"spray\" or \"source\"");
  if (f.topology != TopologyKind::kFatTree) return;
  if (f.k < 2 || f.k % 2 != 0 || f.k > 64)
    r.require(false, "fabric.k", double(f.k), "even, 2..64");
  else if (f.hosts > f.k * f.k * f.k / 4)
    r.fail("fabric.hosts: a k=" + std::to_string(f.k) + " FatTree has " +
           std::to_string(f.k * f.k * f.k / 4) + " host ports");
}

void read_fabric(Reader& r, const toml::table* t, Scenario& s) {
  if (t == nullptr) return;
  r.check_keys(*t, "fabric.",
               {"planes", "hosts", "spines", "hosts_per_leaf", "ecn_last_hop", "host_link",
                "fabric_link", "core_link", "topology", "k", "routing", "ecmp_hash"});
  r.get(*t, "fabric.", "planes", s.fabric.planes);
  r.get(*t, "fabric.", "hosts", s.fabric.hosts);
  r.get(*t, "fabric.", "spines", s.fabric.spines);
  r.get(*t, "fabric.", "hosts_per_leaf", s.fabric.hosts_per_leaf);
  r.get(*t, "fabric.", "ecn_last_hop", s.fabric.ecn_last_hop);
  read_link(r, t->get_as<toml::table>("host_link"), "fabric.host_link.", s.fabric.host_link);
  read_link(r, t->get_as<toml::table>("fabric_link"), "fabric.fabric_link.", s.fabric.fabric_link);
  s.fabric.core_link = s.fabric.fabric_link;  // unless given
  read_link(r, t->get_as<toml::table>("core_link"), "fabric.core_link.", s.fabric.core_link);
  const FabricConfig& f = s.fabric;
  r.require(f.planes >= 1 && f.planes <= static_cast<uint32_t>(kMaxPlanes), "fabric.planes",
            double(f.planes), "1.." + std::to_string(kMaxPlanes));
  // Switch and host indices are 24-bit where a scope names them.
  constexpr uint32_t kMaxNodes = 1u << 20;
  r.require(f.hosts >= 2 && f.hosts <= kMaxNodes, "fabric.hosts", double(f.hosts),
            "2.." + std::to_string(kMaxNodes));
  r.require(f.spines >= 1 && f.spines <= 4096, "fabric.spines", double(f.spines), "1..4096");
  r.require(f.hosts_per_leaf >= 1 && f.hosts_per_leaf <= 4096, "fabric.hosts_per_leaf",
            double(f.hosts_per_leaf), "1..4096");
  read_fabric_shape(r, *t, s.fabric);
}

// The congestion-control and acknowledgement knobs scenarios sweep (NSCC's are those of the OCP
// CC profile).
void read_cc_knobs(Reader& r, const toml::table& t, QpConfig& q) {
  NsccConfig& n = q.nscc;
  uint64_t initial_kib = n.initial_window_bytes / 1024;
  double target_us = static_cast<double>(n.target_delay_ns) / 1e3;
  double ack_delay_us = static_cast<double>(q.ack_delay_ns) / 1e3;
  uint32_t qa_gate = n.qa_gate;
  r.get(t, "qp.", "initial_window_kib", initial_kib);
  r.get(t, "qp.", "target_delay_us", target_us);
  r.get(t, "qp.", "quick_adapt", n.quick_adapt);
  r.get(t, "qp.", "qa_gate", qa_gate);
  r.get(t, "qp.", "ack_delay_us", ack_delay_us);
  r.get(t, "qp.", "eta", n.proportional_gain);
  r.get(t, "qp.", "fi", n.fair_increase_mtus);
  uint32_t penalty = q.incast_penalty;
  double incast_window_us = static_cast<double>(q.incast_window_ns) / 1e3;
  r.get(t, "qp.", "incast_penalty", penalty);
  r.get(t, "qp.", "incast_window_us", incast_window_us);
  r.require(penalty <= 127, "qp.incast_penalty", double(penalty),
            "0..127 (the rcv_cwnd_pen an incast receiver sends; 0: none)");
  r.require(incast_window_us >= 0 && incast_window_us <= 1000, "qp.incast_window_us",
            incast_window_us, "0..1000");
  q.incast_penalty = static_cast<uint8_t>(std::min<uint32_t>(penalty, 127));
  q.incast_window_ns = from_us(incast_window_us).ns;
  r.require(n.proportional_gain > 0 && n.proportional_gain <= 16, "qp.eta", n.proportional_gain,
            "in (0, 16] (the proportional gain)");
  r.require(n.fair_increase_mtus > 0 && n.fair_increase_mtus <= 64, "qp.fi", n.fair_increase_mtus,
            "in (0, 64] (MTUs per RTT)");
  r.require(target_us >= 0 && target_us <= 1e6, "qp.target_delay_us", target_us,
            "0..1e6 (0: half the base RTT)");
  r.require(initial_kib >= 1 && initial_kib * 1024 <= n.max_window_bytes, "qp.initial_window_kib",
            double(initial_kib),
            "1..window_kib (" + std::to_string(n.max_window_bytes / 1024) + ")");
  r.require(qa_gate <= 63, "qp.qa_gate", double(qa_gate),
            "0..63 (a shift of the maximum window; 0: quick adapt on every lossy round)");
  r.require(ack_delay_us >= 0 && ack_delay_us <= 1000, "qp.ack_delay_us", ack_delay_us, "0..1000");
  n.initial_window_bytes = initial_kib * 1024;
  n.target_delay_ns = from_us(target_us).ns;
  n.qa_gate = static_cast<uint8_t>(std::min<uint32_t>(qa_gate, 63));
  q.ack_delay_ns = from_us(ack_delay_us).ns;
}

// ev_burst: new data packets per EV before the plane's rotation moves on (spray granularity,
// QpConfig::ev_burst_packets). 1 sprays every packet on its own EV; without the key the
// QpConfig default stands, which the engine sends as 1.
void read_ev_burst(Reader& r, const toml::table& t, QpConfig& q) {
  if (t.get("ev_burst") == nullptr) return;
  uint64_t burst = 0;
  r.get(t, "qp.", "ev_burst", burst);
  r.require(burst >= 1 && burst <= kMaxEvBurstPackets, "qp.ev_burst", double(burst),
            "1.." + std::to_string(kMaxEvBurstPackets) +
                " (packets per EV burst; 1: every packet on the next EV)");
  q.ev_burst_packets = static_cast<uint16_t>(std::clamp<uint64_t>(burst, 1, kMaxEvBurstPackets));
}

// ev_list = [[plane, ev], ...]: every QP uses exactly these EVs (explicit EV mode).
void read_ev_list(Reader& r, const toml::table& t, Scenario& s) {
  QpConfig& q = s.qp;
  std::vector<std::pair<uint64_t, uint64_t>> list;
  r.get_pairs(t, "qp.", "ev_list", UINT32_MAX, list);
  for (const auto& [plane, value] : list)
    q.ev_list.push_back(ExplicitEv{PlaneId(static_cast<uint8_t>(std::min<uint64_t>(plane, 255))),
                                   Ev(static_cast<uint32_t>(value))});
  if (r.ok && !q.ev_list.empty()) {
    auto valid = q.validate(static_cast<int>(s.fabric.planes));
    if (!valid.ok()) r.fail("qp.ev_list: " + valid.error().message);
  }
}

// Every key [qp] may hold.
const std::set<std::string>& qp_keys() {
  static const std::set<std::string> keys = {"mtu",
                                             "ev_count",
                                             "ev_burst",
                                             "ev_min_active",
                                             "mpr",
                                             "max_wimm",
                                             "timeout",
                                             "retry_linear",
                                             "retry_exp",
                                             "ack_every",
                                             "cc",
                                             "window_kib",
                                             "ev_list",
                                             "initial_window_kib",
                                             "target_delay_us",
                                             "quick_adapt",
                                             "qa_gate",
                                             "ack_delay_us",
                                             "eta",
                                             "fi",
                                             "incast_penalty",
                                             "incast_window_us",
                                             "path_policy",
                                             "health_ev_shift",
                                             "health_ratio",
                                             "health_floor",
                                             "health_flap_risk",
                                             "health_mark_risk",
                                             "health_rtt_inflation",
                                             "health_risk_shift",
                                             "health_risk_limit",
                                             "p2c_shift",
                                             "p2c_mark_weight",
                                             "p2c_loss_weight",
                                             "hedge_mark_penalty",
                                             "hedge_loss_penalty",
                                             "hedge_decay",
                                             "hedge_floor",
                                             "path_watchdog",
                                             "watchdog_fall",
                                             "watchdog_epoch_rtts",
                                             "secure",
                                             "rekey_packets"};
  return keys;
}

// The health policy's failure prediction (HealthPolicyConfig).
void read_health_prediction(Reader& r, const toml::table& t, HealthPolicyConfig& h) {
  r.number(t, "qp.", "health_flap_risk", h.flap_risk, 0, 1, "0..1");
  r.number(t, "qp.", "health_mark_risk", h.mark_risk, 0, 1, "0..1");
  r.get(t, "qp.", "health_rtt_inflation", h.rtt_inflation);
  r.require(h.rtt_inflation == 0 || (h.rtt_inflation >= 1 && h.rtt_inflation <= 100),
            "qp.health_rtt_inflation", h.rtt_inflation, "0 (off) or 1..100 (x the lowest RTT)");
  r.shift(t, "qp.", "health_risk_shift", h.risk_shift);
  r.number(t, "qp.", "health_risk_limit", h.risk_limit, 0, 1, "0..1 (1: no prediction)");
}

// The learned policies' parameters (HealthPolicyConfig, P2cPolicyConfig, HedgePolicyConfig).
void read_learned_policies(Reader& r, const toml::table& t, QpConfig& q) {
  HealthPolicyConfig& h = q.health;
  r.shift(t, "qp.", "health_ev_shift", h.ev_shift);
  r.number(t, "qp.", "health_ratio", h.ratio, 0, 1000, "0..1000");
  r.number(t, "qp.", "health_floor", h.floor, 0, 1, "0..1 (a loss share)");
  read_health_prediction(r, t, h);
  P2cPolicyConfig& c = q.p2c;
  r.shift(t, "qp.", "p2c_shift", c.shift);
  r.number(t, "qp.", "p2c_mark_weight", c.mark_weight, 0, 1, "0..1");
  r.number(t, "qp.", "p2c_loss_weight", c.loss_weight, 0, 1, "0..1");
  HedgePolicyConfig& g = q.hedge;
  const char* const kPenalty = "0..255 (sixteenths of a halving)";
  r.number(t, "qp.", "hedge_mark_penalty", g.mark_penalty, 0, 255, kPenalty);
  r.number(t, "qp.", "hedge_loss_penalty", g.loss_penalty, 0, 255, kPenalty);
  r.number(t, "qp.", "hedge_decay", g.decay, 0, 255, kPenalty);
  r.get(t, "qp.", "hedge_floor", g.floor);
  r.require(g.floor > 0 && g.floor <= 1, "qp.hedge_floor", g.floor, "(0, 1] (a weight)");
}

// The path policy ("oracle": the simulator's, Scenario::oracle_paths), its watchdog, and the
// learned policies' parameters.
void read_path_policy(Reader& r, const toml::table& t, Scenario& s) {
  QpConfig& q = s.qp;
  std::string policy = to_string(q.path_policy);
  r.get(t, "qp.", "path_policy", policy);
  s.oracle_paths = policy == "oracle";
  const auto parsed = parse_path_policy(policy);
  if (parsed.ok()) q.path_policy = parsed.value();
  r.require(s.oracle_paths || parsed.ok(), "qp.path_policy", policy,
            "\"rules\", \"oblivious\", \"reps\", \"health\", \"p2c\", \"hedge\" or \"oracle\"");
  if (s.oracle_paths) q.path_policy = PathPolicyKind::kRules;  // the runner installs the oracle
  PathWatchdogConfig& w = q.path_watchdog;
  uint32_t epoch_rtts = w.epoch_rtts;
  r.get(t, "qp.", "path_watchdog", w.enabled);
  r.get(t, "qp.", "watchdog_fall", w.fall);
  r.get(t, "qp.", "watchdog_epoch_rtts", epoch_rtts);
  r.require(w.fall >= 0 && w.fall < 1, "qp.watchdog_fall", w.fall, "[0, 1) (a share of goodput)");
  r.require(epoch_rtts >= 1 && epoch_rtts <= 1000, "qp.watchdog_epoch_rtts", double(epoch_rtts),
            "1..1000");
  w.epoch_rtts = static_cast<uint16_t>(std::clamp<uint32_t>(epoch_rtts, 1, 1000));
  if (w.enabled && s.oracle_paths)
    r.fail(
        "qp.path_watchdog = true: must be false with the oracle (it is the upper bound, not "
        "a policy to guard)");
  read_learned_policies(r, t, q);
}

// Secure mode (PROTOCOL.md §1.12): the runner gives every connection its own traffic secrets,
// drawn from the run's seed; until then the QP configuration holds placeholders, so that it
// validates.
void read_security(Reader& r, const toml::table& t, QpConfig& q) {
  std::string mode = to_string(q.security.mode);
  r.get(t, "qp.", "secure", mode);
  const auto parsed = parse_secure_mode(mode);
  if (parsed.ok()) q.security.mode = parsed.value();
  r.require(parsed.ok(), "qp.secure", mode, "\"off\", \"auth\" or \"encrypt\"");
  constexpr double kMaxRekey = double(uint64_t{1} << 40);
  auto rekey = double(q.security.rekey_packets);
  r.number(t, "qp.", "rekey_packets", rekey, 1, kMaxRekey, "1..2^40");
  q.security.rekey_packets = static_cast<uint64_t>(std::clamp(rekey, 1.0, kMaxRekey));
  if (q.security.mode == SecureMode::kOff) return;
  q.security.send_secret.fill(1);
  q.security.receive_secret.fill(2);
}

void read_qp(Reader& r, const toml::table* t, Scenario& s) {
  if (t == nullptr) return;
  r.check_keys(*t, "qp.", qp_keys());
  QpConfig& q = s.qp;
  uint32_t mtu = q.mtu_bytes, ev = q.ev_count, ev_min = q.ev_min_active, mpr = q.mpr,
           wimm = q.max_wimm, timeout = q.timeout, lin = q.retry_linear, exp = q.retry_exp,
           ack = q.sack_every(), window = static_cast<uint32_t>(q.nscc.max_window_bytes / 1024);
  std::string cc = "nscc";
  r.get(*t, "qp.", "mtu", mtu);
  r.get(*t, "qp.", "ev_count", ev);
  r.get(*t, "qp.", "ev_min_active", ev_min);
  r.get(*t, "qp.", "mpr", mpr);
  r.get(*t, "qp.", "max_wimm", wimm);
  r.get(*t, "qp.", "timeout", timeout);
  r.get(*t, "qp.", "retry_linear", lin);
  r.get(*t, "qp.", "retry_exp", exp);
  r.get(*t, "qp.", "ack_every", ack);
  r.get(*t, "qp.", "cc", cc);
  r.get(*t, "qp.", "window_kib", window);
  for (const auto& [key, value, max] : {std::tuple{"mpr", mpr, 255u},
                                        {"timeout", timeout, 255u},
                                        {"retry_linear", lin, 255u},
                                        {"retry_exp", exp, 255u},
                                        {"ev_count", ev, 65535u},
                                        {"ev_min_active", ev_min, 65535u},
                                        {"max_wimm", wimm, 65535u}})
    r.require(value <= max, std::string("qp.") + key, double(value), "0.." + std::to_string(max));
  r.require(window >= 1 && window <= (1u << 22), "qp.window_kib", double(window), "1..4194304");
  q.set_mtu(mtu);  // the minimum window is one packet: without it every mtu above 4 KiB was refused
  q.ev_count = static_cast<uint16_t>(ev);
  q.ev_min_active = static_cast<uint16_t>(ev_min);
  q.mpr = q.mpr_dest = static_cast<uint8_t>(mpr);
  q.max_wimm = q.max_wimm_dest = static_cast<uint16_t>(wimm);
  q.timeout = static_cast<uint8_t>(timeout);
  q.retry_linear = static_cast<uint8_t>(lin);
  q.retry_exp = static_cast<uint8_t>(exp);
  q.ack_every_packets = ack;
  q.nscc.max_window_bytes = q.fixed_window_bytes = static_cast<uint64_t>(window) * 1024;
  q.nscc.initial_window_bytes = std::min(q.nscc.initial_window_bytes, q.nscc.max_window_bytes);
  read_cc_knobs(r, *t, q);
  read_ev_burst(r, *t, q);
  const auto parsed_cc = parse_cc_algorithm(cc);
  if (parsed_cc.ok()) q.cc = parsed_cc.value();
  r.require(parsed_cc.ok(), "qp.cc", cc, "\"nscc\", \"aimd\" or \"fixed\"");
  read_path_policy(r, *t, s);
  read_security(r, *t, q);
  read_ev_list(r, *t, s);
}

// Message sizes and counts, and what the whole workload writes.
void check_workload_sizes(Reader& r, const Scenario& s) {
  const Workload& w = s.workload;
  r.require(w.message_bytes >= 1 && w.message_bytes <= UINT32_MAX, "workload.message_bytes",
            double(w.message_bytes), "1..4294967295 (bytes per message)");
  for (const auto& [key, value] : {std::pair{"messages", w.messages},
                                   {"iterations", w.iterations},
                                   {"qps", w.qps_per_flow},
                                   {"slices", w.slices}})
    r.require(value >= 1 && value <= 1'000'000, std::string("workload.") + key, double(value),
              "1..1000000");
  if (w.pattern == Pattern::kRingAllreduce &&
      w.message_bytes < uint64_t{job_ranks(w, s.fabric.hosts)} * w.slices)
    r.fail("workload.message_bytes: a ring all-reduce needs at least one byte per rank and slice");
  // Every payload byte is held in memory (its target; sources are shared patterns,
  // payload_layout.h) for the exactly-once check, unless the run is payload-free.
  constexpr uint64_t kMaxPlannedBytes = 8ull << 30;
  if (!r.ok) return;
  const uint64_t bytes = planned_bytes(w, s.fabric.hosts);
  if (bytes > (uint64_t{1} << 62))
    r.fail("workload: more than 2^62 bytes of writes in all");
  else if (s.payload && bytes > kMaxPlannedBytes)
    r.fail("workload: " + std::to_string(bytes >> 20) +
           " MiB of writes in all; a payload run holds every byte written and allows 8192 MiB "
           "(payload = false has no such limit)");
}

// Where a job's ranks sit: `ranks` of the fabric's hosts, in host or shuffled order; only the
// patterns that place ranks (all_to_all, ring_allreduce) take them.
void read_ranks(Reader& r, const toml::table& t, Scenario& s) {
  Workload& w = s.workload;
  std::string order = "hosts";
  r.get(t, "workload.", "rank_order", order);
  if (order == "shuffled")
    w.rank_order = RankOrder::kShuffled;
  else
    r.require(order == "hosts", "workload.rank_order", order, "\"hosts\" or \"shuffled\"");
  int64_t ranks = 0;
  r.get(t, "workload.", "ranks", ranks);
  if (!places_ranks(w.pattern) && (t.contains("ranks") || t.contains("rank_order"))) {
    r.fail("workload.ranks, rank_order: only all_to_all and ring_allreduce place ranks");
    return;
  }
  if (!t.contains("ranks")) return;
  r.require(ranks >= 2 && ranks <= s.fabric.hosts, "workload.ranks", double(ranks),
            "2.." + std::to_string(s.fabric.hosts) + " (the fabric's hosts)");
  if (r.ok) w.ranks = static_cast<uint32_t>(ranks);
}

void read_workload(Reader& r, const toml::table* t, Scenario& s) {
  if (t == nullptr) return;
  r.check_keys(*t, "workload.",
               {"pattern", "bidirectional", "victim", "message_bytes", "messages", "iterations",
                "compute_us", "qps", "imm_fraction", "expect_failure", "flows", "slices", "ranks",
                "rank_order"});
  Workload& w = s.workload;
  std::string pattern = "pairs";
  double compute_us = 0;
  r.get(*t, "workload.", "pattern", pattern);
  r.get(*t, "workload.", "bidirectional", w.bidirectional);
  r.get(*t, "workload.", "victim", w.victim);
  r.get(*t, "workload.", "message_bytes", w.message_bytes);
  r.get(*t, "workload.", "messages", w.messages);
  r.get(*t, "workload.", "iterations", w.iterations);
  r.time(*t, "workload.", "compute_us", compute_us);
  r.get(*t, "workload.", "qps", w.qps_per_flow);
  r.probability(*t, "workload.", "imm_fraction", w.imm_fraction);
  r.get(*t, "workload.", "expect_failure", w.expect_failure);
  r.get(*t, "workload.", "slices", w.slices);
  w.compute = from_us(compute_us);
  const std::vector<std::pair<std::string, Pattern>> patterns = {
      {"pairs", Pattern::kPairs},
      {"incast", Pattern::kIncast},
      {"permutation", Pattern::kPermutation},
      {"all_to_all", Pattern::kAllToAll},
      {"ring_allreduce", Pattern::kRingAllreduce},
      {"flows", Pattern::kFlows}};
  bool known = false;
  for (const auto& [name, value] : patterns) {
    if (name == pattern) w.pattern = value, known = true;
  }
  r.require(known, "workload.pattern", pattern,
            "pairs, incast, permutation, all_to_all, ring_allreduce or flows");
  std::vector<std::pair<uint64_t, uint64_t>> flows;
  r.get_pairs(*t, "workload.", "flows", s.fabric.hosts - 1, flows);
  for (const auto& [src, dst] : flows) {
    if (src == dst)
      r.fail("workload.flows: [" + std::to_string(src) + ", " + std::to_string(dst) +
             "] sends to itself");
    w.flows.emplace_back(static_cast<HostId>(src), static_cast<HostId>(dst));
  }
  if (r.ok && (w.pattern == Pattern::kFlows) != !w.flows.empty())
    r.fail(
        "workload.flows: given exactly when pattern = \"flows\" (a list of [source, destination] "
        "hosts)");
  read_ranks(r, *t, s);
  check_workload_sizes(r, s);
}

void read_dcqcn(Reader& r, const toml::table& t, DcqcnConfig& d) {
  const std::string w = "transport.";
  double alpha_us = static_cast<double>(d.alpha_period.ns) / 1e3,
         increase_us = static_cast<double>(d.increase_period.ns) / 1e3,
         cnp_us = static_cast<double>(d.cnp_interval.ns) / 1e3;
  uint64_t byte_counter_kib = d.byte_counter / 1024;
  r.get(t, w, "dcqcn", d.enabled);
  r.get(t, w, "dcqcn_g", d.g);
  r.time(t, w, "dcqcn_alpha_us", alpha_us, true);
  r.time(t, w, "dcqcn_increase_us", increase_us, true);
  r.get(t, w, "dcqcn_byte_counter_kib", byte_counter_kib);
  r.get(t, w, "dcqcn_f", d.fast_recovery_steps);
  r.get(t, w, "dcqcn_ai_gbps", d.additive_gbps);
  r.get(t, w, "dcqcn_hai_gbps", d.hyper_gbps);
  r.get(t, w, "dcqcn_min_gbps", d.min_rate_gbps);
  r.time(t, w, "cnp_interval_us", cnp_us);
  r.require(d.g > 0 && d.g <= 1, w + "dcqcn_g", d.g, "in (0, 1]");
  r.require(byte_counter_kib >= 1 && byte_counter_kib <= (uint64_t{1} << 40),
            w + "dcqcn_byte_counter_kib", double(byte_counter_kib), "1..2^40");
  for (const auto& [key, gbps, least] : {std::tuple{"dcqcn_ai_gbps", d.additive_gbps, 0.0},
                                         {"dcqcn_hai_gbps", d.hyper_gbps, 0.0},
                                         {"dcqcn_min_gbps", d.min_rate_gbps, 1e-9}})
    r.require(gbps >= least && gbps <= 1e6, w + key, gbps,
              std::string(least > 0 ? "> 0" : ">= 0") + " and at most 1e6");
  d.alpha_period = from_us(alpha_us);
  d.increase_period = from_us(increase_us);
  d.cnp_interval = from_us(cnp_us);
  d.byte_counter = byte_counter_kib * 1024;
}

void read_mptcp(Reader& r, const toml::table& t, MptcpConfig& m) {
  const std::string w = "transport.";
  double rto_min_us = static_cast<double>(m.rto_min.ns) / 1e3,
         rto_max_us = static_cast<double>(m.rto_max.ns) / 1e3;
  r.get(t, w, "subflows", m.subflows);
  r.get(t, w, "coupled", m.coupled);
  r.get(t, w, "initial_window", m.initial_window_packets);
  r.get(t, w, "max_window", m.max_window_packets);
  r.time(t, w, "rto_min_us", rto_min_us, true);
  r.time(t, w, "rto_max_us", rto_max_us, true);
  r.get(t, w, "subflow_dead_after", m.subflow_dead_after);
  r.require(m.subflows >= 1 && m.subflows <= 64, w + "subflows", double(m.subflows), "1..64");
  r.require(m.initial_window_packets >= 1, w + "initial_window", double(m.initial_window_packets),
            ">= 1");
  r.require(m.max_window_packets >= m.initial_window_packets, w + "max_window",
            double(m.max_window_packets),
            ">= initial_window (" + std::to_string(m.initial_window_packets) + ")");
  r.require(rto_max_us >= rto_min_us, w + "rto_max_us", rto_max_us,
            ">= rto_min_us (" + shown(rto_min_us) + ")");
  r.require(m.subflow_dead_after >= 1, w + "subflow_dead_after", double(m.subflow_dead_after),
            ">= 1");
  m.rto_min = from_us(rto_min_us);
  m.rto_max = from_us(rto_max_us);
}

// [transport]: which transport every host runs, with the baselines' parameters. roce_pfc makes
// every switch queue of the fabric lossless (PFC-like pause instead of drop or trim).
void read_transport(Reader& r, const toml::table* t, Scenario& s) {
  if (t == nullptr) return;
  r.check_keys(*t, "transport.",
               {"kind",
                "subflows",
                "coupled",
                "initial_window",
                "max_window",
                "rto_min_us",
                "rto_max_us",
                "subflow_dead_after",
                "dcqcn",
                "dcqcn_g",
                "dcqcn_alpha_us",
                "dcqcn_increase_us",
                "dcqcn_byte_counter_kib",
                "dcqcn_f",
                "dcqcn_ai_gbps",
                "dcqcn_hai_gbps",
                "dcqcn_min_gbps",
                "cnp_interval_us",
                "pfc_xoff_kib",
                "pfc_xon_kib",
                "pfc_headroom_kib"});
  TransportConfig& c = s.transport;
  std::string kind = "mrc";
  r.get(*t, "transport.", "kind", kind);
  if (kind == "mrc")
    c.kind = TransportKind::kMrc;
  else if (kind == "roce")
    c.kind = TransportKind::kRoce;
  else if (kind == "roce_pfc")
    c.kind = TransportKind::kRocePfc;
  else if (kind == "mptcp")
    c.kind = TransportKind::kMptcp;
  else
    r.require(false, "transport.kind", kind, "\"mrc\", \"roce\", \"roce_pfc\" or \"mptcp\"");
  read_dcqcn(r, *t, c.dcqcn);
  read_mptcp(r, *t, c.mptcp);
  uint32_t xoff = c.pfc.xoff_bytes / 1024, xon = c.pfc.xon_bytes / 1024,
           headroom = c.pfc.headroom_bytes / 1024;
  r.get(*t, "transport.", "pfc_xoff_kib", xoff);
  r.get(*t, "transport.", "pfc_xon_kib", xon);
  r.get(*t, "transport.", "pfc_headroom_kib", headroom);
  r.require(xoff >= 1 && xoff <= (1u << 20), "transport.pfc_xoff_kib", double(xoff), "1..1048576");
  r.require(xon <= xoff, "transport.pfc_xon_kib", double(xon),
            "at most pfc_xoff_kib (" + std::to_string(xoff) + ")");
  r.require(headroom <= (1u << 20), "transport.pfc_headroom_kib", double(headroom), "0..1048576");
  c.pfc = PfcConfig{xoff * 1024, xon * 1024, headroom * 1024};
  if (c.kind == TransportKind::kRocePfc) make_lossless(s.fabric, c.pfc);
}

// A switch named by tier and index ("leaf2", "spine0"; FatTree "edge5", "agg1", "core3"). The
// node id exists only once the topology is built: the scope carries (tier << 24 | index) and
// the runner resolves it.
Scope read_switch(Reader& r, const std::string& name, const std::string& where, int64_t plane,
                  const FabricConfig& f) {
  const bool fat = f.topology == TopologyKind::kFatTree;
  const std::vector<std::pair<std::string, uint32_t>> tiers =
      fat ? std::vector<std::pair<std::string, uint32_t>>{{"edge", 1}, {"agg", 2}, {"core", 3}}
          : std::vector<std::pair<std::string, uint32_t>>{{"leaf", 1}, {"spine", 2}};
  for (const auto& [prefix, tier] : tiers) {
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 6) break;
    const uint32_t index = static_cast<uint32_t>(std::stoul(digits));
    const uint32_t count =
        fat ? (tier == 3 ? f.k * f.k / 4 : f.k * f.k / 2)
            : (tier == 2 ? f.spines : (f.hosts + f.hosts_per_leaf - 1) / f.hosts_per_leaf);
    if (index >= count) break;
    if (plane < 0) {
      r.fail(where + "switch: naming a switch needs a plane (fault.plane)");
      return Scope::fabric();
    }
    return Scope::of_switch(PlaneId(static_cast<uint8_t>(plane)), NodeId((tier << 24) | index));
  }
  r.require(false, where + "switch", name,
            std::string("a switch of this fabric (") +
                (fat ? "edgeN, aggN, coreN" : "leafN, spineN") + ", N from 0)");
  return Scope::fabric();
}

Scope read_scope(Reader& r, const toml::table& t, const std::string& where, const FabricConfig& f) {
  int64_t plane = -1, host = 0, leaf = 0, spine = 0;
  std::string link = "all";
  if (t.get("plane")) r.get(t, where, "plane", plane);
  r.get(t, where, "host", host);
  r.get(t, where, "leaf", leaf);
  r.get(t, where, "spine", spine);
  r.get(t, where, "link", link);
  r.require(plane < static_cast<int64_t>(f.planes), where + "plane", double(plane),
            "a plane of this fabric, 0.." + std::to_string(f.planes - 1));
  const bool fat = f.topology == TopologyKind::kFatTree;
  const int64_t leaves = fat ? f.k * f.k / 2 : (f.hosts + f.hosts_per_leaf - 1) / f.hosts_per_leaf;
  const int64_t uplinks = fat ? f.k / 2 : f.spines;
  for (const auto& [key, index, count] : {std::tuple{"host", host, int64_t{f.hosts}},
                                          {"leaf", leaf, leaves},
                                          {"spine", spine, uplinks}})
    r.require(
        index < count, where + key, double(index),
        "0.." + std::to_string(count - 1) + " (" + std::to_string(count) + " in this fabric)");
  std::string sw;
  r.get(t, where, "switch", sw);
  if (!sw.empty()) return read_switch(r, sw, where, plane, f);
  const PlaneId p(static_cast<uint8_t>(std::max<int64_t>(plane, 0)));
  if (link != "all" && plane < 0) r.fail(where + "link: naming one link needs a plane");
  if (!r.ok) return Scope::fabric();
  // Links are named after the fabric is built; encode the request in the scope and let
  // resolve_scope() in the runner finish it.
  Scope s = plane < 0 ? Scope::fabric() : Scope::of_plane(p);
  if (link == "all") return s;
  s.kind = Scope::Kind::kLink;
  s.plane = p;
  if (link == "host_up")
    s.classes = bit(LinkClass::kHostUp);
  else if (link == "host_down")
    s.classes = bit(LinkClass::kHostDown);
  else if (link == "leaf_spine")
    s.classes = bit(LinkClass::kFabricUp);
  else if (link == "spine_leaf")
    s.classes = bit(LinkClass::kFabricDown);
  else
    r.require(false, where + "link", link, "all, host_up, host_down, leaf_spine or spine_leaf");
  s.node = NodeId(static_cast<uint32_t>(host));
  s.link = LinkId(static_cast<uint32_t>((leaf << 16) | spine));
  return s;
}

// blackhole, unblackhole and gray: an EV path fault aimed at flows and EV slots (PathTarget).
void read_path_fault(Reader& r, const toml::table& t, const std::string& where,
                     const std::string& action, double loss, Scenario& s, ScheduledFault& f) {
  PathTarget target;
  r.get(t, where, "every_flow", target.every_flow);
  r.get(t, where, "flow", target.flow);
  const uint64_t flows = planned_flows(s.workload, s.fabric.hosts);
  r.require(target.flow < flows, where + "flow", double(target.flow),
            "0.." + std::to_string(flows - 1) + " (the workload's " + std::to_string(flows) +
                " flows, in plan order)");
  if (t.get("flow") && target.every_flow) r.fail(where + "flow: name one flow or every_flow");
  r.get(t, where, "ev_slot", target.ev_slot);
  const size_t evs = s.qp.ev_list.empty() ? s.qp.ev_count : s.qp.ev_list.size();
  r.require(
      static_cast<size_t>(target.ev_slot) < evs, where + "ev_slot", double(target.ev_slot),
      "0.." + std::to_string(evs - 1) + " (a slot of the QP's " + std::to_string(evs) + " EVs)");
  r.probability(t, where, "ev_fraction", target.ev_fraction);
  if (t.get("ev_fraction")) {
    r.require(target.ev_fraction > 0, where + "ev_fraction", target.ev_fraction, "in (0, 1]");
    if (t.get("ev_slot")) r.fail(where + "ev_fraction: name one ev_slot or an ev_fraction");
  }
  if (action == "gray") {
    if (!t.get("loss")) r.fail(where + "loss: a gray path needs its loss, in (0, 1]");
    r.require(loss > 0, where + "loss", loss, "in (0, 1] (the share of the path's packets lost)");
  }
  target.loss = action == "gray" ? loss : action == "blackhole" ? 1.0 : 0.0;
  f.action = FaultAction::path_fault(PathFault{});  // resolved by the run from the target
  r.require(s.transport.kind == TransportKind::kMrc, where + "action", action,
            "a link fault with transport " + std::string(to_string(s.transport.kind)) +
                " (EV path faults aim at the EVs of MRC queue pairs)");
  f.target = target;
}

// deny_spine: the controller denies, in every QP, the EVs whose path crosses spine `spine` of
// plane `plane` (leaf-spine, source routing, MRC: only there does an EV name its spine).
void read_spine_denial(Reader& r, const toml::table& t, const std::string& where, Scenario& s,
                       ScheduledFault& f) {
  if (!t.get("plane") || !t.get("spine")) r.fail(where + "deny_spine needs a plane and a spine");
  int64_t plane = 0, spine = 0;
  r.get(t, where, "plane", plane);
  r.get(t, where, "spine", spine);
  r.require(s.fabric.routing == Routing::kSource, where + "action", std::string("deny_spine"),
            "used with fabric.routing = \"source\" (only a source-routed EV names its spine)");
  r.require(s.fabric.topology == TopologyKind::kLeafSpine, where + "action",
            std::string("deny_spine"), "used with a leaf_spine fabric");
  r.require(s.transport.kind == TransportKind::kMrc, where + "action", std::string("deny_spine"),
            "used with transport mrc (it denies the EVs of MRC queue pairs)");
  f.action = FaultAction::path_fault(PathFault{});  // resolved by the run
  f.deny = SpineDenial{PlaneId(static_cast<uint8_t>(std::max<int64_t>(plane, 0))),
                       static_cast<uint32_t>(std::max<int64_t>(spine, 0))};
}

// nic_drop: every NIC port, or one host's (host), on every plane or one (plane), loses `loss`
// of what it receives (direction rx, the default), sends (tx) or both.
FaultAction read_nic_drop(Reader& r, const toml::table& t, const std::string& where, double loss) {
  if (!t.get("loss")) r.fail(where + "loss: a NIC drop needs its loss, in [0, 1] (0 clears it)");
  NicDrop nic;
  int64_t host = 0, plane = -1;
  r.get(t, where, "host", host);
  if (t.get("plane")) r.get(t, where, "plane", plane);
  if (t.get("host")) nic.host = static_cast<HostId>(host);
  nic.plane = static_cast<int>(plane);
  std::string direction = "rx";
  r.get(t, where, "direction", direction);
  r.require(direction == "rx" || direction == "tx" || direction == "both", where + "direction",
            direction, "rx, tx or both");
  if (!r.ok) return FaultAction::heal_all();  // the scenario is refused: build nothing invalid
  if (direction != "tx") nic.rx = loss;
  if (direction != "rx") nic.tx = loss;
  return FaultAction::nic_drop(nic);
}

FlapSpec read_flap(Reader& r, const toml::table& t, const std::string& where, bool timed) {
  double down_us = 100, up_us = 100, duration_us = 1000, jitter_us = 0;
  r.time(t, where, "down_us", down_us, timed);
  r.time(t, where, "up_us", up_us, timed);
  r.time(t, where, "duration_us", duration_us, timed);
  r.time(t, where, "jitter_us", jitter_us);
  r.require(jitter_us < std::min(down_us, up_us), where + "jitter_us", jitter_us,
            "less than down_us and up_us (every period stays positive)");
  return FlapSpec{from_us(down_us), from_us(up_us), from_us(duration_us), from_us(jitter_us)};
}

void read_fault(Reader& r, const toml::table& t, size_t index, Scenario& s) {
  const std::string where = "fault[" + std::to_string(index) + "].";
  r.check_keys(t, where,
               {"at_us",   "action",  "plane",       "link",      "host",           "leaf",
                "spine",   "loss",    "duplicate",   "reorder",   "reorder_max_us", "corrupt",
                "trim",    "ev_slot", "ev_fraction", "flow",      "every_flow",     "direction",
                "down_us", "up_us",   "duration_us", "jitter_us", "rate_fraction",  "switch"});
  ScheduledFault f;
  double at_us = 0, reorder_max_us = 5;
  std::string action;
  r.time(t, where, "at_us", at_us);
  r.get(t, where, "action", action);
  r.time(t, where, "reorder_max_us", reorder_max_us);
  // Only a reboot and a flap read these: each must then be a real duration.
  const FlapSpec flap = read_flap(r, t, where, action == "reboot" || action == "flap");
  f.at = Instant{} + from_us(at_us);
  f.description = action;
  const Scope scope = read_scope(r, t, where, s.fabric);
  LinkFaults lf;
  r.probability(t, where, "loss", lf.loss);
  r.probability(t, where, "duplicate", lf.duplicate);
  r.probability(t, where, "reorder", lf.reorder);
  r.probability(t, where, "corrupt", lf.corrupt);
  r.probability(t, where, "trim", lf.trim);
  lf.reorder_max_delay = from_us(reorder_max_us);
  if (action == "faults")
    f.action = FaultAction::set_faults(scope, lf);
  else if (action == "down" || action == "up")
    f.action = FaultAction::set_up(scope, action == "up");
  else if (action == "heal")
    f.action = FaultAction::heal_all();
  else if (action == "degrade") {
    double fraction = 0.5;
    r.get(t, where, "rate_fraction", fraction);
    r.require(fraction > 0 && fraction <= 1, where + "rate_fraction", fraction, "in (0, 1]");
    f.action = FaultAction::set_rate(scope, std::clamp(fraction, 1e-9, 1.0));
  } else if (action == "reboot") {  // down now, up again after down_us
    f.action = FaultAction::set_up(scope, false);
    ScheduledFault up = f;
    up.at = f.at + flap.down_for;
    up.action = FaultAction::set_up(scope, true);
    up.description = "reboot (up)";
    s.faults.push_back(f);
    s.faults.push_back(up);
    return;
  } else if (action == "flap") {
    f.action = FaultAction::start_flap(scope, flap);
  } else if (action == "blackhole" || action == "unblackhole" || action == "gray") {
    read_path_fault(r, t, where, action, lf.loss, s, f);
  } else if (action == "nic_drop") {
    f.action = read_nic_drop(r, t, where, lf.loss);
  } else if (action == "deny_spine") {
    read_spine_denial(r, t, where, s, f);
  } else {
    r.require(false, where + "action", action,
              "faults, down, up, reboot, flap, degrade, blackhole, unblackhole, gray, nic_drop, "
              "deny_spine or heal");
  }
  s.faults.push_back(f);
}

}  // namespace

void make_lossless(FabricConfig& fabric, const PfcConfig& pfc) {
  for (LinkConfig* l : {&fabric.host_link, &fabric.fabric_link, &fabric.core_link}) {
    l->lossless = true;
    l->pfc_xoff_bytes = pfc.xoff_bytes;
    l->pfc_xon_bytes = pfc.xon_bytes;
    l->pfc_headroom_bytes = pfc.headroom_bytes;
  }
}

std::string payload_modes_error(const Scenario& s) {
  if (s.payload && !s.move_payload)
    return "move_payload = false needs payload = false (a payload run compares every byte)";
  return "";
}

namespace {

// toml++ 3.3 (Debian 12) reaches __builtin_unreachable() when it asks whether some non-ASCII
// characters are whitespace (U+00A1 to U+049A among them), which it does around keys and values:
// undefined behaviour on input as plain as a stray "§". So the loader hands it ASCII only: a
// comment's non-ASCII bytes become spaces (a comment means nothing, and every position outside
// it stays put), and a non-ASCII character anywhere else is refused with its line and column.
// Strings are followed only to know where comments start: '#' inside a string is not one.
bool comments_to_ascii(std::string& text, std::string& error) {
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral } in = In::kCode;
  size_t line = 1, column = 0;
  const auto starts = [&](size_t i, std::string_view token) {
    return text.compare(i, token.size(), token) == 0;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '\n') {
      line++, column = 0;
      if (in != In::kMultiBasic && in != In::kMultiLiteral) in = In::kCode;
      continue;
    }
    if ((byte & 0xC0) != 0x80) column++;  // a character's first byte
    if (in == In::kComment) {
      if (byte >= 0x80) text[i] = ' ';
      continue;
    }
    if (byte >= 0x80) {
      error = std::to_string(line) + ":" + std::to_string(column) +
              ": a non-ASCII character outside a comment (keys and values are ASCII)";
      return false;
    }
    const std::string_view quotes = in == In::kMultiLiteral ? "'''" : "\"\"\"";
    if (in == In::kCode) {
      if (byte == '#') {
        in = In::kComment;
      } else if (starts(i, "\"\"\"") || starts(i, "'''")) {
        in = byte == '"' ? In::kMultiBasic : In::kMultiLiteral;
        i += 2, column += 2;
      } else if (byte == '"' || byte == '\'') {
        in = byte == '"' ? In::kBasic : In::kLiteral;
      }
    } else if ((in == In::kBasic || in == In::kMultiBasic) && byte == '\\') {
      if (i + 1 < text.size() && text[i + 1] != '\n') i++, column++;  // the escaped character
    } else if ((in == In::kBasic && byte == '"') || (in == In::kLiteral && byte == '\'')) {
      in = In::kCode;
    } else if ((in == In::kMultiBasic || in == In::kMultiLiteral) && starts(i, quotes)) {
      in = In::kCode;
      i += 2, column += 2;
    }
  }
  return true;
}

// A section that must be a table (or an array of tables, for [[fault]]) when present.
const toml::table* section(Reader& r, const toml::table& root, const char* key) {
  const toml::node* n = root.get(key);
  if (n == nullptr || !r.ok) return nullptr;
  if (!n->is_table()) r.fail(std::string(key) + ": must be a table ([" + key + "])");
  return n->as_table();
}

void read_top(Reader& r, const toml::table& root, Scenario& s) {
  r.check_keys(root, "",
               {"name", "seed", "time_limit_ms", "heal_at_us", "random_faults", "payload",
                "icrc_offload", "move_payload", "fabric", "qp", "workload", "fault", "transport"});
  double limit_ms = 2000, heal_us = 0;
  r.get(root, "", "name", s.name);
  r.get(root, "", "seed", s.seed);
  r.time(root, "", "time_limit_ms", limit_ms, true);
  r.time(root, "", "heal_at_us", heal_us);
  r.get(root, "", "random_faults", s.random_faults);
  r.get(root, "", "payload", s.payload);
  r.get(root, "", "icrc_offload", s.icrc_offload);
  r.get(root, "", "move_payload", s.move_payload);
  if (const std::string e = payload_modes_error(s); !e.empty()) r.fail(e);
  s.time_limit = Instant{static_cast<int64_t>(limit_ms * 1e6)};
  s.heal_at = Instant{} + from_us(heal_us);
}

void read_faults(Reader& r, const toml::table& root, Scenario& s) {
  const toml::node* n = root.get("fault");
  if (n == nullptr || !r.ok) return;
  const toml::array* faults = n->as_array();
  if (faults == nullptr) return r.fail("fault: must be an array of tables ([[fault]])");
  for (size_t i = 0; i < faults->size() && r.ok; ++i) {
    const toml::table* t = faults->get(i)->as_table();
    if (t == nullptr) return r.fail("fault[" + std::to_string(i) + "]: must be a table");
    read_fault(r, *t, i, s);
  }
}

}  // namespace

bool load_scenario_text(std::string_view text, const std::string& source, Scenario& s,
                        std::string& error) {
  std::string ascii(text);
  if (!comments_to_ascii(ascii, error)) {
    error = source + ":" + error;
    return false;
  }
  toml::table root;
  try {
    root = toml::parse(ascii, source);
  } catch (const toml::parse_error& e) {
    error = source + ":" + std::to_string(e.source().begin.line) + ":" +
            std::to_string(e.source().begin.column) + ": " + std::string(e.description());
    return false;
  }
  // Each section is read only if those before it were good: later ones use their values.
  Reader r{error};
  read_top(r, root, s);
  if (r.ok) read_fabric(r, section(r, root, "fabric"), s);
  if (r.ok) read_qp(r, section(r, root, "qp"), s);
  if (r.ok) read_transport(r, section(r, root, "transport"), s);
  if (r.ok) read_workload(r, section(r, root, "workload"), s);
  read_faults(r, root, s);
  if (r.ok) {
    auto valid = s.qp.validate(static_cast<int>(s.fabric.planes));
    if (!valid.ok()) r.fail("qp: " + valid.error().message);
  }
  if (!r.ok) error = source + ": " + error;
  return r.ok;
}

bool load_scenario(const std::string& path, Scenario& s, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot read the file";
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();  // an empty file sets failbit here, and is a scenario of defaults
  if (in.bad()) {
    error = path + ": cannot read the file";
    return false;
  }
  return load_scenario_text(text.str(), path, s, error);
}

}  // namespace mrc::sim
