// Operations of the control socket (see ctl_ops.h and ctl_socket.h for the protocol):
//   device                          name, pid, planes (address, admin and link state, packets),
//                                   EV modes, CC algorithms, QP count
//   port-set   port, admin         "up" / "down" (mrc_ctl_modify_port)
//   ev-profiles                     every EV profile (profile 0 included) and its denied EVs
//   ev-states  [profile] [qpn]      per connected QP: every EV, its state and counters
//   ev-set     profile, ev, port, state    "denied" / "good" (MODIFY_EV_STATE)
//   cc-profiles                     every CC profile (profile 0 included) and its NSCC parameters
//   probe      ev, port, [qpn or to] [count] [timeout_ms]   EV probes (mrc_ctl_ep_batch_send_wait)
//   watch                           then one line per EV state change
//   call       fn, ...              an mrc_ctl_* call forwarded by a controller-only context
//                                   (ctl_remote.h)
// EVs are named as mrc_ctl.h's UDP mode has them: the UDP source port ("ev") and the port
// (plane + 1) it leaves from.
#include "ocp/ctl_ops.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstring>

#include "ocp/ocp_internal.h"

namespace mrc::ocp {
namespace {

using nlohmann::json;

struct Refusal {
  int error;
  std::string message;
};

json refuse(int error, const std::string& message) {
  const char* name = error == EINVAL         ? "EINVAL"
                     : error == ENOENT       ? "ENOENT"
                     : error == EBUSY        ? "EBUSY"
                     : error == EOPNOTSUPP   ? "EOPNOTSUPP"
                     : error == E2BIG        ? "E2BIG"
                     : error == ETIMEDOUT    ? "ETIMEDOUT"
                     : error == EHOSTUNREACH ? "EHOSTUNREACH"
                     : error == EAGAIN       ? "EAGAIN"
                                             : "error";
  return json{{"ok", false}, {"errno", error}, {"error", name}, {"message", message}};
}

// A member as an unsigned integer in [0, max]; `fallback` when absent.
bool get_uint(const json& j, const char* key, uint64_t max, uint64_t& out, bool required) {
  auto it = j.find(key);
  if (it == j.end()) return !required;
  if (!it->is_number_unsigned() || it->get<uint64_t>() > max) return false;
  out = it->get<uint64_t>();
  return true;
}

// An EV's value in JSON: a source port (format UDP), a STEV EV as "PORT:0xLABEL", or an SRv6
// EV's address as text.
json ev_json(const mrc_ctl_ev& ev) {
  const auto zero = [&](size_t from) {
    return std::all_of(ev.val + from, ev.val + sizeof ev.val, [](uint8_t b) { return b == 0; });
  };
  if (zero(2)) return ev_source_port(ev);
  if (zero(4)) {
    char text[32];
    std::snprintf(text, sizeof text, "%u:0x%x", ev_source_port(ev), ev.val[2] << 8 | ev.val[3]);
    return std::string(text);
  }
  return io::address_text(io::SocketAddress::ipv6(ev_address(ev), 0));
}

// "ev" of a request: a source port, a STEV EV ("50001:0x1234": its source port and flow label),
// or an SRv6 EV as an IPv6 address ("fd00:1:200::"); the EV format it is in comes back in
// `mode`.
bool get_ev(const json& req, uint64_t port, mrc_ctl_ev& ev, mrc_ctl_ev_fmt_mode& mode) {
  ev = mrc_ctl_ev{};
  ev.port = static_cast<uint8_t>(port);
  mode = MRC_CTL_EV_FMT_MODE_UDP;
  auto it = req.find("ev");
  if (it != req.end() && it->is_string()) {
    const std::string text = it->get<std::string>();
    if (std::count(text.begin(), text.end(), ':') != 1) {
      mode = MRC_CTL_EV_FMT_MODE_SRV6;
      return inet_pton(AF_INET6, text.c_str(), ev.val) == 1;
    }
    mode = MRC_CTL_EV_FMT_MODE_STEV;
    char* end = nullptr;
    const unsigned long source = std::strtoul(text.c_str(), &end, 10);
    if (*end != ':') return false;
    const unsigned long label = std::strtoul(end + 1, &end, 0);
    if (*end != '\0' || source > 0xFFFF || label > 0xFFFF) return false;
    ev.val[0] = static_cast<uint8_t>(source >> 8), ev.val[1] = static_cast<uint8_t>(source);
    ev.val[2] = static_cast<uint8_t>(label >> 8), ev.val[3] = static_cast<uint8_t>(label);
    return true;
  }
  uint64_t value = 0;
  if (!get_uint(req, "ev", 65535, value, true)) return false;
  ev.val[0] = static_cast<uint8_t>(value >> 8);
  ev.val[1] = static_cast<uint8_t>(value);
  return true;
}

const char* profile_state_name(mrc_ctl_profile_state s) {
  return s == MRC_CTL_PROFILE_ONLINE ? "online" : s == MRC_CTL_PROFILE_OFFLINE ? "offline" : "init";
}

const char* engine_state_name(EvState s) {
  switch (s) {
    case EvState::kGood:
      return "good";
    case EvState::kSkip:
      return "skip";
    case EvState::kAssumedBad:
      return "assumed_bad";
    case EvState::kDenied:
      return "denied";
  }
  return "unknown";
}

json op_device(Nic& nic) {
  json planes = json::array();
  int qps = 0;
  auto locks = nic.lock_all();
  for (size_t p = 0; p < nic.spec->planes.size(); ++p) {
    mrc::UdpPlaneStats st = nic.shard(0).host().plane_stats(static_cast<int>(p));
    for (uint32_t s = 1; s < nic.shards(); ++s)
      st += nic.shard(s).host().plane_stats(static_cast<int>(p));
    planes.push_back({{"port", p + 1},
                      {"address", io::address_text(nic.spec->planes[p].socket())},
                      {"udp_port", nic.spec->planes[p].port},
                      {"admin", nic.admin_up[p] ? "up" : "down"},
                      {"link", st.up ? "up" : "down"},
                      {"packets_sent", st.packets_sent},
                      {"packets_received", st.packets_received}});
  }
  int awaiting_keys = 0;  // secure QPs past RTR whose key agreement has not ended
  for (mrc_context* c : nic.contexts) {
    qps += static_cast<int>(c->qp_list.size());
    for (const mrc_qp* qp : c->qp_list) {
      const QpState s = qp->placed.qp->state();
      const bool connected = s == QpState::kRtr || s == QpState::kRts;
      awaiting_keys += connected && qp->placed.qp->awaiting_keys() ? 1 : 0;
    }
  }
  secure::InbandKeys::Counters offers{};
  for (uint32_t s = 0; s < nic.shards(); ++s) {
    const secure::InbandKeys::Counters& one = nic.shard(s).key_offers();
    offers.offers_sent += one.offers_sent;
    offers.offers_received += one.offers_received;
    offers.offers_refused += one.offers_refused;
  }
  return json{{"ok", true},
              {"secure", to_string(nic.spec->host.context.secure)},
              {"qps_awaiting_keys", awaiting_keys},
              {"key_offers",
               {{"sent", offers.offers_sent},
                {"received", offers.offers_received},
                {"refused", offers.offers_refused}}},
              {"device", nic.spec->name},
              {"pid", getpid()},
              {"planes", planes},
              {"qps", qps},
              {"ev_fmt_modes", {"udp"}},
              {"ev_modes", {"auto"}},
              {"ev_max", 256},
              {"ev_ports", nic.spec->host.context.ev_port_base},
              {"busy_poll_us", nic.spec->host.context.busy_poll_us},
              {"cc_algorithms", {"uet-1.0-nscc"}}};
}

json op_port_set(mrc_context& ctx, const json& req) {
  uint64_t port = 0;
  const auto admin = req.find("admin");
  if (!get_uint(req, "port", 255, port, true) || admin == req.end() || !admin->is_string() ||
      (*admin != "up" && *admin != "down"))
    return refuse(EINVAL, "port-set needs \"port\": N and \"admin\": \"up\" | \"down\"");
  mrc_ctl_port_attr attr{*admin == "up" ? MRC_CTL_PORT_ADMIN_ENABLED : MRC_CTL_PORT_ADMIN_DISABLED};
  if (mrc_ctl_modify_port(&ctx, static_cast<uint8_t>(port), &attr, MRC_CTL_PORT_ADMIN_STATE) != 0)
    return refuse(errno, "no port " + std::to_string(port) + " on this device");
  return json{{"ok", true}};
}

json event_mask_json(int mask) {
  json m = json::array();
  if (mask & MRC_CTL_EV_ASSUMED_BAD) m.push_back("assumed_bad");
  if (mask & MRC_CTL_EV_GOOD) m.push_back("good");
  return m;
}

json op_ev_profiles(Nic& nic, mrc_context& ctx) {
  mrc_ctl_ev_profile_attr attr{};
  (void)mrc_ctl_query_ev_profile(&ctx, 0, &attr, 0);  // profile 0 exists from its first use
  json list = json::array();
  auto locks = nic.lock_all();
  for (const auto& [id, p] : nic.ev_profiles) {
    json denied = json::array();
    for (const mrc_ctl_ev_op_entry& e : p.evs)
      denied.push_back({{"ev", ev_json(e.ev)}, {"port", e.ev.port}});
    int qps = 0;
    for (mrc_context* c : nic.contexts)
      for (mrc_qp* q : c->qp_list) qps += (q->has_ev_profile ? q->ev_profile : 0) == id;
    json entry = {{"id", id},
                  {"state", profile_state_name(p.state)},
                  {"mode", p.mode == MRC_CTL_EV_MODE_EXP   ? "explicit"
                           : p.mode == MRC_CTL_EV_MODE_GEN ? "generated"
                                                           : "auto"},
                  {"count", p.count},
                  {"min_active", p.min_active},
                  {"event_mask", event_mask_json(p.event_mask)},
                  {"denied", denied},
                  {"qps", qps}};
    if (p.mode != MRC_CTL_EV_MODE_AUTO) {
      json evs = json::array();  // unpopulated entries show as ev 0, port 0; GEN: drawn when ONLINE
      for (const mrc_ctl_ev& ev : p.list) evs.push_back({{"ev", ev_json(ev)}, {"port", ev.port}});
      entry["evs"] = evs;
    }
    if (p.mode == MRC_CTL_EV_MODE_GEN) {
      json fields = json::array();
      for (const mrc_ctl_ev_field& f : p.fields)
        fields.push_back({{"width", f.width},
                          {"init_val", f.init_val},
                          {"min_val", f.min_val},
                          {"max_val", f.max_val},
                          {"mask", f.mask}});
      entry["fields"] = fields;
    }
    list.push_back(entry);
  }
  return json{{"ok", true}, {"profiles", list}};
}

// A QP's EVs, each named by the device's source port for it (its shard's ports are offset).
json qp_evs(const mrc_qp& q) {
  json evs = json::array();
  const EvSet& set = *q.placed.qp->evs();
  const int offset = q.context->nic->ev_port_offset(q.placed.shard);
  for (size_t k = 0; k < set.size(); ++k) {
    const auto i = static_cast<uint16_t>(k);  // an EV set holds at most 65535 slots
    const EvSet::Slot& s = set.slot(i);
    const EvStats st = set.stats(i);
    evs.push_back({{"ev", static_cast<int>(s.ev.value) - offset},
                   {"port", s.plane.value + 1},
                   {"state", engine_state_name(s.state)},
                   {"active", s.active},
                   {"packets", st.packets},
                   {"losses", st.losses},
                   {"probes_sent", st.probes_sent},
                   {"probes_answered", st.probes_answered}});
    // SRv6 mode: the path the EV's source port takes in the QP's shard (wire/srv6.h, ev_srv6.h)
    const auto path = q.context->nic->shard(q.placed.shard)
                          .host()
                          .port_path(s.plane.value, static_cast<uint16_t>(s.ev.value));
    if (!path.empty()) evs.back()["path"] = wire::to_string(wire::Srv6Paths{path});
  }
  return evs;
}

json op_ev_states(Nic& nic, const json& req) {
  uint64_t profile = 0, qpn = 0;
  const bool by_profile = req.contains("profile"), by_qpn = req.contains("qpn");
  if (!get_uint(req, "profile", UINT64_MAX, profile, false) ||
      !get_uint(req, "qpn", 0xffffff, qpn, false))
    return refuse(EINVAL, "\"profile\" and \"qpn\" are unsigned integers");
  json qps = json::array();
  auto locks = nic.lock_all();
  for (mrc_context* c : nic.contexts)
    for (mrc_qp* q : c->qp_list) {
      const uint64_t id = q->has_ev_profile ? q->ev_profile : 0;
      if ((by_profile && id != profile) || (by_qpn && q->placed.qp->qpn().value != qpn)) continue;
      if (q->placed.qp->evs() == nullptr || qps.size() >= 64)
        continue;  // not connected yet; at most 64 QPs
      uint32_t ip = 0;
      std::memcpy(&ip, q->vattr.ah_attr.grh.dgid.raw + 12, 4);
      qps.push_back({{"qpn", q->placed.qp->qpn().value},
                     {"profile", id},
                     {"state", to_string(q->placed.qp->state())},
                     {"peer", io::address_text(io::SocketAddress::ipv4(in_addr{ip}, 0))},
                     {"dest_qpn", q->vattr.dest_qp_num},
                     {"evs", qp_evs(*q)}});
    }
  if (by_qpn && qps.empty()) return refuse(ENOENT, "no connected QP " + std::to_string(qpn));
  return json{{"ok", true}, {"qps", qps}};
}

json op_ev_set(mrc_context& ctx, const json& req) {
  uint64_t profile = 0, port = 0;
  mrc_ctl_ev ev{};
  mrc_ctl_ev_fmt_mode mode{};
  const auto state = req.find("state");
  if (!get_uint(req, "profile", UINT64_MAX, profile, false) ||
      !get_uint(req, "port", 255, port, true) || !get_ev(req, port, ev, mode) ||
      state == req.end() || !state->is_string() || (*state != "denied" && *state != "good"))
    return refuse(EINVAL,
                  "ev-set needs \"ev\": <source port, \"PORT:0xLABEL\" (STEV) or an SRv6 EV's "
                  "address>, \"port\": N, "
                  "\"state\": \"denied\" | \"good\"");
  mrc_ctl_ev_profile_attr attr{};
  if (mrc_ctl_query_ev_profile(&ctx, profile, &attr, 0) != 0)
    return refuse(ENOENT, "no EV profile " + std::to_string(profile));
  mrc_ctl_ev_op_entry entry{ev, {}, *state == "denied" ? MRC_CTL_EV_DENIED : MRC_CTL_EV_GOOD, 0};
  attr.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
  attr.ev_op.entries = &entry;
  attr.ev_op.entry_count = 1;
  if (mrc_ctl_modify_ev_profile(&ctx, profile, &attr, MRC_CTL_EV_PROFILE_EV_OP) != 0)
    return refuse(errno, "EV profile " + std::to_string(profile) + " refused the change");
  // Tell whether the EV exists in the profile's live QPs (a deny of an unknown EV is kept for
  // QPs that connect later, as the API does, but the user should know).
  entry.state = MRC_CTL_EV_UNKNOWN;
  attr.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  const bool live = mrc_ctl_query_ev_profile(&ctx, profile, &attr, MRC_CTL_EV_PROFILE_EV_OP) == 0;
  return json{{"ok", true}, {"in_live_qps", live}};
}

json op_cc_profiles(Nic& nic, mrc_context& ctx) {
  mrc_ctl_cc_profile_attr attr{};
  (void)mrc_ctl_query_cc_profile(&ctx, 0, &attr, 0);  // profile 0 exists from its first use
  json list = json::array();
  auto locks = nic.lock_all();
  for (const auto& [id, p] : nic.cc_profiles) {
    json entry{{"id", id},
               {"state", profile_state_name(p.state)},
               {"algorithm", p.algorithm.empty() ? "none" : p.algorithm}};
    if (p.has_config) {
      const mrc_ctl_cc_nscc_cfg& c = p.nscc;
      entry["config"] = {{"base_rtt_ns", c.base_rtt},
                         {"target_delay_ns", c.target_delay},
                         {"max_cwnd", c.max_cwnd},
                         {"eta", c.eta},
                         {"fi", c.fi},
                         {"gamma", c.gamma},
                         {"max_md_jump", c.max_md_jump},
                         {"disable_qa", c.disable_qa},
                         {"qa_gate", c.qa_gate},
                         {"qa_threshold_ns", c.qa_threshold}};
    }
    list.push_back(entry);
  }
  return json{{"ok", true}, {"profiles", list}};
}

// The destination of a probe: the peer address, on the EV's plane, of QP `qpn` (0: the first
// connected QP whose EV set holds the EV).
bool probe_dest(Nic& nic, uint64_t qpn, const mrc_ctl_ev& ev, mrc_ctl_ep_req& r) {
  auto locks = nic.lock_all();
  for (mrc_context* c : nic.contexts)
    for (mrc_qp* q : c->qp_list) {
      if ((qpn != 0 && q->placed.qp->qpn().value != qpn) || q->placed.qp->evs() == nullptr)
        continue;
      bool holds = false;  // the EV's port in the QP's shard
      const int port = ev_source_port(ev) + nic.ev_port_offset(q->placed.shard);
      for (uint16_t i = 0; i < q->placed.qp->evs()->size() && !holds; ++i)
        holds = static_cast<int>(q->placed.qp->evs()->slot(i).ev.value) == port &&
                q->placed.qp->evs()->slot(i).plane.value + 1 == ev.port;
      uint32_t ip = 0;
      std::memcpy(&ip, q->vattr.ah_attr.grh.dgid.raw + 12, 4);
      const auto peer = find_peer(device_config(), ip);
      if (!holds || !peer || ev.port > peer->planes.size()) continue;
      r.dgid.raw[10] = r.dgid.raw[11] = 0xff;
      std::memcpy(r.dgid.raw + 12, &peer->planes[ev.port - 1].address.s_addr, 4);
      return true;
    }
  return false;
}

json op_probe(Nic& nic, mrc_context& ctx, const json& req) {
  uint64_t port = 0, qpn = 0, count = 1, timeout_ms = 1000;
  std::vector<mrc_ctl_ep_req> reqs(1);
  const auto to = req.find("to");
  if (!get_uint(req, "port", 255, port, true) ||
      !get_ev(req, port, reqs[0].req_ev, reqs[0].ev_fmt_mode) ||
      !get_uint(req, "qpn", 0xffffff, qpn, false) || !get_uint(req, "count", 64, count, false) ||
      count == 0 || !get_uint(req, "timeout_ms", 5000, timeout_ms, false) ||
      (to != req.end() && !to->is_string()))
    return refuse(EINVAL,
                  "probe needs \"ev\": <source port, \"PORT:0xLABEL\" (STEV) or an SRv6 EV's "
                  "address>, \"port\": N [, "
                  "\"qpn\" or \"to\": <address>, \"count\" 1-64, \"timeout_ms\" <= 5000]");
  reqs.resize(count);
  in_addr address{};
  if (to != req.end()) {
    const std::string text = to->get<std::string>();
    if (inet_pton(AF_INET, text.c_str(), &address) == 1) {
      reqs[0].dgid.raw[10] = reqs[0].dgid.raw[11] = 0xff;
      std::memcpy(reqs[0].dgid.raw + 12, &address.s_addr, 4);
    } else if (inet_pton(AF_INET6, text.c_str(), reqs[0].dgid.raw) != 1) {
      return refuse(EINVAL, "\"to\": " + text + " is not an IPv4 or IPv6 address");
    }
  } else if (reqs[0].ev_fmt_mode == MRC_CTL_EV_FMT_MODE_SRV6) {
    return refuse(EINVAL, "a probe on an SRv6 EV needs \"to\": the destination's locator");
  } else if (!probe_dest(nic, qpn, reqs[0].req_ev, reqs[0])) {
    return refuse(ENOENT,
                  "EV " + std::to_string(ev_source_port(reqs[0].req_ev)) + " port " +
                      std::to_string(port) + " is not an EV of " +
                      (qpn != 0 ? "QP " + std::to_string(qpn) : std::string("any connected QP")));
  }
  for (uint64_t i = 0; i < count; ++i) {
    reqs[i] = reqs[0];
    reqs[i].req_id = static_cast<uint16_t>(i + 1);
  }
  std::vector<mrc_ctl_ep_rsp> rsps(count);
  int got = 0;
  const int rc = mrc_ctl_ep_batch_send_wait(
      &ctx, 0, MRC_CTL_EP_OP_EV_PROBE, reqs.data(), static_cast<int>(count),
      static_cast<uint32_t>(timeout_ms * 1'000'000), rsps.data(), &got);
  if (rc != 0 && errno != ETIMEDOUT) return refuse(errno, "mrc_ctl_ep_batch_send_wait failed");
  json answers = json::array();
  for (int i = 0; i < got; ++i)
    answers.push_back(
        {{"req_id", rsps[i].req_id}, {"port", rsps[i].port}, {"rtt_ns", rsps[i].rtt}});
  return json{{"ok", true}, {"sent", count}, {"answered", got}, {"answers", answers}};
}

json dispatch(Nic& nic, mrc_context& ctx, const json& req, CtlSession& session) {
  const auto op = req.find("op");
  if (op == req.end() || !op->is_string())
    return refuse(EINVAL, "a request is {\"op\": \"...\", ...}");
  const std::string name = *op;
  if (name == "device") return op_device(nic);
  if (name == "port-set") return op_port_set(ctx, req);
  if (name == "ev-profiles") return op_ev_profiles(nic, ctx);
  if (name == "ev-states") return op_ev_states(nic, req);
  if (name == "ev-set") return op_ev_set(ctx, req);
  if (name == "cc-profiles") return op_cc_profiles(nic, ctx);
  if (name == "probe") return op_probe(nic, ctx, req);
  if (name == "call") return serve_call(nic, ctx, session, req);
  if (name == "watch") {
    session.watch = true;
    return json{{"ok", true}, {"watching", nic.spec->name}};
  }
  return refuse(
      EINVAL,
      "unknown op '" + name +
          "' (device, port-set, ev-profiles, ev-states, ev-set, cc-profiles, probe, watch)");
}

}  // namespace

const char* ctl_state_name(mrc_ctl_ev_state state) {
  return state == MRC_CTL_EV_ASSUMED_BAD ? "assumed_bad"
         : state == MRC_CTL_EV_DENIED    ? "denied"
         : state == MRC_CTL_EV_GOOD      ? "good"
                                         : "unknown";
}

json ctl_watch_line(const WatchEvent& e) {
  return json{{"event", "ev"},
              {"seq", e.seq},
              {"qpn", e.qpn},
              {"profile", e.profile},
              {"ev", ev_json(e.ev)},
              {"port", e.ev.port},
              {"state", ctl_state_name(e.state)}};
}

json ctl_handle(Nic& nic, mrc_context& ctx, const std::string& line, CtlSession& session) {
  const json req = json::parse(line, nullptr, false);
  if (req.is_discarded() || !req.is_object())
    return refuse(EINVAL, "malformed request: not a JSON object");
  try {
    return dispatch(nic, ctx, req, session);
  } catch (const std::exception& e) {  // a type nlohmann refused; never leaves the server
    return refuse(EINVAL, std::string("malformed request: ") + e.what());
  }
}

}  // namespace mrc::ocp
