// Forwarded controller calls: the client half (a process with a controller-only context) and
// the server half (the owning process). See ctl_remote.h.
#include "ocp/ctl_remote.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "util/hex.h"

namespace mrc::ocp {
namespace {

using nlohmann::json;

constexpr size_t kMaxArray = 4096;    // entries of any forwarded array
constexpr int kReplyWaitMs = 10'000;  // beyond a call's own timeout

std::string to_hex(const void* data, size_t bytes) {
  return mrc::to_hex(std::span(static_cast<const uint8_t*>(data), bytes));
}

// Reads j[key] (hex) into `out`, at most `max_bytes`; false if malformed or too long.
bool from_hex(const json& j, const char* key, void* out, size_t max_bytes, size_t& got) {
  got = 0;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  std::vector<uint8_t> bytes;
  if (!mrc::from_hex(it->get_ref<const std::string&>(), bytes) || bytes.size() > max_bytes)
    return false;
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  got = bytes.size();
  return true;
}

template <typename T>
bool struct_from_hex(const json& j, const char* key, T& out) {
  size_t got = 0;
  return from_hex(j, key, &out, sizeof out, got) && got == sizeof out;
}

// A count-sized array for the call, filled from j[key] where given.
template <typename T>
bool array_from_hex(const json& j, const char* key, int count, std::vector<T>& out) {
  if (count < 0 || static_cast<size_t>(count) > kMaxArray) return false;
  out.assign(static_cast<size_t>(count), T{});
  size_t got = 0;
  return from_hex(j, key, out.data(), out.size() * sizeof(T), got) && got % sizeof(T) == 0;
}

// ---- client transport ----

bool send_all(int fd, const std::string& line) {
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// One request, one answer; {"ok": false, "errno": EIO} if the owner is gone or silent.
json call(Nic& nic, json req, int extra_wait_ms = 0) {
  req["op"] = "call";
  std::lock_guard lock(nic.remote_mutex);
  json lost{{"ok", false}, {"errno", EIO}};  // not const: returned by move
  if (nic.remote_fd < 0 || !send_all(nic.remote_fd, req.dump() + "\n")) return lost;
  for (;;) {
    const size_t end = nic.remote_buffer.find('\n');
    if (end != std::string::npos) {
      const std::string line = nic.remote_buffer.substr(0, end);
      nic.remote_buffer.erase(0, end + 1);
      json answer = json::parse(line, nullptr, false);
      return answer.is_object() ? answer : lost;
    }
    pollfd p{nic.remote_fd, POLLIN, 0};
    if (poll(&p, 1, kReplyWaitMs + extra_wait_ms) <= 0) return lost;
    char chunk[65536];
    const ssize_t n = recv(nic.remote_fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      close(nic.remote_fd);
      nic.remote_fd = -1;  // the owner went away: every later call says EIO
      return lost;
    }
    nic.remote_buffer.append(chunk, static_cast<size_t>(n));
  }
}

int answer_errno(const json& a) {
  if (a.value("ok", false)) return a.value("errno", 0);
  const int e = a.value("errno", EIO);
  return e != 0 ? e : EIO;
}

// Copies an answered array back into the caller's buffer (at most `capacity` entries).
template <typename T>
void copy_back(const json& a, const char* key, T* out, int capacity) {
  if (out == nullptr || capacity <= 0) return;
  std::vector<T> got;
  if (array_from_hex(a, key, capacity, got)) std::copy(got.begin(), got.end(), out);
}

// ---- server ----

json answer(int rc, const json& extra = json::object()) {
  json a = extra;
  a["ok"] = true;
  a["errno"] = rc == 0 ? 0 : (errno != 0 ? errno : EIO);
  return a;
}

json malformed() {
  return json{{"ok", false}, {"errno", EINVAL}, {"error", "EINVAL"}, {"message", "malformed call"}};
}

json serve_port(mrc_context& ctx, const json& req, bool modify) {
  mrc_ctl_port_attr attr{};
  const auto port = req.value("port", 0u);
  if (!struct_from_hex(req, "attr", attr) || port > 255) return malformed();
  errno = 0;
  const int rc =
      modify ? mrc_ctl_modify_port(&ctx, static_cast<uint8_t>(port), &attr, req.value("mask", 0))
             : mrc_ctl_query_port(&ctx, static_cast<uint8_t>(port), &attr, req.value("mask", 0));
  return answer(rc, {{"attr", to_hex(&attr, sizeof attr)}});
}

json serve_ev_profile(mrc_context& ctx, const json& req, bool modify) {
  mrc_ctl_ev_profile_attr attr{};
  std::vector<mrc_ctl_ev_op_entry> entries;
  std::vector<mrc_ctl_ev_field> fields;
  if (!struct_from_hex(req, "attr", attr) ||
      !array_from_hex(req, "entries", attr.ev_op.entry_count, entries) ||
      !array_from_hex(req, "fields", attr.ev_fields_op.field_count, fields))
    return malformed();
  attr.ev_op.entries = entries.empty() ? nullptr : entries.data();
  attr.ev_fields_op.fields = fields.empty() ? nullptr : fields.data();
  const uint64_t id = req.value("id", uint64_t{0});
  const int mask = req.value("mask", 0);
  errno = 0;
  const int rc = modify ? mrc_ctl_modify_ev_profile(&ctx, id, &attr, mask)
                        : mrc_ctl_query_ev_profile(&ctx, id, &attr, mask);
  const size_t n_entries =
      std::min<size_t>(entries.size(), static_cast<size_t>(std::max(attr.ev_op.entry_count, 0)));
  const size_t n_fields = std::min<size_t>(
      fields.size(), static_cast<size_t>(std::max(attr.ev_fields_op.field_count, 0)));
  attr.ev_op.entries = nullptr;
  attr.ev_fields_op.fields = nullptr;
  return answer(rc, {{"attr", to_hex(&attr, sizeof attr)},
                     {"entries", to_hex(entries.data(), n_entries * sizeof(mrc_ctl_ev_op_entry))},
                     {"fields", to_hex(fields.data(), n_fields * sizeof(mrc_ctl_ev_field))}});
}

json serve_ev_fmt_profile(mrc_context& ctx, const json& req, bool modify) {
  mrc_ctl_ev_fmt_profile_attr attr{};
  std::vector<mrc_ctl_ev_fmt_field> fields;
  if (!struct_from_hex(req, "attr", attr) ||
      !array_from_hex(req, "fields", attr.ev_fmt_op.fmt_field_count, fields))
    return malformed();
  attr.ev_fmt_op.fmt_fields = fields.empty() ? nullptr : fields.data();
  const uint64_t id = req.value("id", uint64_t{0});
  const int mask = req.value("mask", 0);
  errno = 0;
  const int rc = modify ? mrc_ctl_modify_ev_fmt_profile(&ctx, id, &attr, mask)
                        : mrc_ctl_query_ev_fmt_profile(&ctx, id, &attr, mask);
  const size_t n = std::min<size_t>(
      fields.size(), static_cast<size_t>(std::max(attr.ev_fmt_op.fmt_field_count, 0)));
  attr.ev_fmt_op.fmt_fields = nullptr;
  return answer(rc, {{"attr", to_hex(&attr, sizeof attr)},
                     {"fields", to_hex(fields.data(), n * sizeof(mrc_ctl_ev_fmt_field))}});
}

json serve_cc_profile(mrc_context& ctx, const json& req, bool modify) {
  mrc_ctl_cc_profile_attr attr{};
  mrc_ctl_cc_nscc_cfg nscc{};
  if (!struct_from_hex(req, "attr", attr)) return malformed();
  const auto algorithm = req.find("algorithm");
  const std::string name =
      algorithm != req.end() && algorithm->is_string() ? algorithm->get<std::string>() : "";
  attr.algorithm = algorithm != req.end() && algorithm->is_string() ? name.c_str() : nullptr;
  const bool has_config = req.contains("cc_config") && !req["cc_config"].is_null();
  if (has_config && !struct_from_hex(req, "cc_config", nscc)) return malformed();
  attr.cc_config = has_config ? &nscc : nullptr;
  const uint64_t id = req.value("id", uint64_t{0});
  errno = 0;
  const int rc = modify ? mrc_ctl_modify_cc_profile(&ctx, id, &attr, req.value("mask", 0))
                        : mrc_ctl_query_cc_profile(&ctx, id, &attr, req.value("mask", 0));
  json out{{"algorithm", attr.algorithm != nullptr ? json(attr.algorithm) : json(nullptr)},
           {"cc_config",
            attr.cc_config != nullptr ? json(to_hex(attr.cc_config, sizeof nscc)) : json(nullptr)}};
  attr.algorithm = nullptr;
  attr.cc_config = nullptr;
  out["attr"] = to_hex(&attr, sizeof attr);
  return answer(rc, out);
}

json serve_ep_batch(mrc_context& ctx, const json& req) {
  std::vector<mrc_ctl_ep_req> reqs;
  const int n = req.value("n", 0);
  if (!array_from_hex(req, "req", n, reqs)) return malformed();
  std::vector<mrc_ctl_ep_rsp> rsps(reqs.size());
  int got = 0;
  errno = 0;
  const int rc = mrc_ctl_ep_batch_send_wait(
      &ctx, 0, static_cast<mrc_ctl_ep_op_type>(req.value("type", 0)),
      reqs.empty() ? nullptr : reqs.data(), n, req.value("timeout_ns", 0u),
      rsps.empty() ? nullptr : rsps.data(), &got);
  got = std::clamp(got, 0, n);
  return answer(rc,
                {{"got", got},
                 {"rsp", to_hex(rsps.data(), static_cast<size_t>(got) * sizeof(mrc_ctl_ep_rsp))}});
}

json serve_ev_cq(mrc_context& ctx, CtlSession& session, const json& req, const std::string& fn) {
  if (fn == "create_ev_cq") {
    if (session.ev_cqs.size() >= 16) return json{{"ok", true}, {"errno", ENOMEM}};
    errno = 0;
    mrc_cq* cq = mrc_ctl_create_ev_event_cq(&ctx, req.value("cqe", 0), nullptr, nullptr, 0);
    if (cq == nullptr) return answer(-1);
    session.ev_cqs[session.next_cq_id] = cq;
    return answer(0, {{"id", session.next_cq_id++}});
  }
  auto it = session.ev_cqs.find(req.value("id", uint64_t{0}));
  if (it == session.ev_cqs.end()) return json{{"ok", true}, {"errno", EINVAL}};
  if (fn == "destroy_ev_cq") {
    errno = 0;
    const int rc = mrc_destroy_cq(it->second);
    if (rc == 0) session.ev_cqs.erase(it);
    return answer(rc);
  }
  const int n = std::clamp(req.value("n", 0), 0, static_cast<int>(kMaxArray));
  std::vector<mrc_ctl_ev_event> events(static_cast<size_t>(n));
  const int got = mrc_ctl_poll_ev_event(it->second, n, events.data());
  if (got < 0) return json{{"ok", true}, {"errno", -got}};
  return answer(
      0, {{"got", got},
          {"events", to_hex(events.data(), static_cast<size_t>(got) * sizeof(mrc_ctl_ev_event))}});
}

}  // namespace

// ---- client calls ----

int remote_port(Nic& nic, bool modify, uint8_t port, mrc_ctl_port_attr* attr, int mask) {
  const json a = call(nic, {{"fn", modify ? "modify_port" : "query_port"},
                            {"port", port},
                            {"mask", mask},
                            {"attr", to_hex(attr, sizeof *attr)}});
  if (a.value("ok", false)) (void)struct_from_hex(a, "attr", *attr);
  return answer_errno(a);
}

int remote_port_up(Nic& nic, int plane, bool& up) {
  const json a = call(nic, {{"fn", "port_up"}, {"plane", plane}});
  up = a.value("up", false);
  return answer_errno(a);
}

int remote_ev_profile(Nic& nic, bool modify, uint64_t id, mrc_ctl_ev_profile_attr* attr, int mask) {
  auto* entries = attr->ev_op.entries;
  auto* fields = attr->ev_fields_op.fields;
  const int n_entries = attr->ev_op.entry_count, n_fields = attr->ev_fields_op.field_count;
  json req{{"fn", modify ? "modify_ev_profile" : "query_ev_profile"},
           {"id", id},
           {"mask", mask},
           {"attr", to_hex(attr, sizeof *attr)}};
  if ((mask & MRC_CTL_EV_PROFILE_EV_OP) && entries != nullptr && n_entries > 0)
    req["entries"] = to_hex(entries, static_cast<size_t>(n_entries) * sizeof *entries);
  if ((mask & MRC_CTL_EV_PROFILE_EV_FIELDS_OP) && fields != nullptr && n_fields > 0)
    req["fields"] = to_hex(fields, static_cast<size_t>(n_fields) * sizeof *fields);
  const json a = call(nic, req);
  if (!a.value("ok", false) || !struct_from_hex(a, "attr", *attr))
    return answer_errno(a) != 0 ? answer_errno(a) : EIO;
  attr->ev_op.entries = entries;  // the caller's arrays, not the owner's
  attr->ev_fields_op.fields = fields;
  copy_back(a, "entries", entries, std::min(n_entries, attr->ev_op.entry_count));
  copy_back(a, "fields", fields, std::min(n_fields, attr->ev_fields_op.field_count));
  return answer_errno(a);
}

int remote_ev_fmt_profile(Nic& nic, bool modify, uint64_t id, mrc_ctl_ev_fmt_profile_attr* attr,
                          int mask) {
  auto* fields = attr->ev_fmt_op.fmt_fields;
  const int n = attr->ev_fmt_op.fmt_field_count;
  json req{{"fn", modify ? "modify_ev_fmt_profile" : "query_ev_fmt_profile"},
           {"id", id},
           {"mask", mask},
           {"attr", to_hex(attr, sizeof *attr)}};
  if (fields != nullptr && n > 0)
    req["fields"] = to_hex(fields, static_cast<size_t>(n) * sizeof *fields);
  const json a = call(nic, req);
  if (!a.value("ok", false) || !struct_from_hex(a, "attr", *attr))
    return answer_errno(a) != 0 ? answer_errno(a) : EIO;
  attr->ev_fmt_op.fmt_fields = fields;
  copy_back(a, "fields", fields, std::min(n, attr->ev_fmt_op.fmt_field_count));
  return answer_errno(a);
}

int remote_cc_profile(Nic& nic, bool modify, uint64_t id, mrc_ctl_cc_profile_attr* attr, int mask) {
  static const char kNscc[] = "uet-1.0-nscc";
  json req{{"fn", modify ? "modify_cc_profile" : "query_cc_profile"},
           {"id", id},
           {"mask", mask},
           {"attr", to_hex(attr, sizeof *attr)}};
  if (modify && (mask & MRC_CTL_CC_PROFILE_ALGORITHM))
    req["algorithm"] = attr->algorithm != nullptr ? json(attr->algorithm) : json(nullptr);
  if (modify && (mask & MRC_CTL_CC_PROFILE_CONFIG) && attr->cc_config != nullptr)
    req["cc_config"] = to_hex(attr->cc_config, sizeof(mrc_ctl_cc_nscc_cfg));
  const json a = call(nic, req);
  if (!a.value("ok", false)) return answer_errno(a);
  if (modify) return answer_errno(a);
  mrc_ctl_cc_profile_attr got{};
  if (!struct_from_hex(a, "attr", got)) return EIO;
  *attr = got;
  attr->algorithm = a["algorithm"].is_string() && a["algorithm"] == kNscc ? kNscc : nullptr;
  attr->cc_config = nullptr;
  if (a.contains("cc_config") && a["cc_config"].is_string()) {
    std::lock_guard lock(nic.mutex);
    mrc_ctl_cc_nscc_cfg& cached = nic.remote_cc_configs[id];  // owned by the library, as locally
    if (struct_from_hex(a, "cc_config", cached)) attr->cc_config = &cached;
  }
  return answer_errno(a);
}

int remote_create_ev_cq(Nic& nic, int cqe, uint64_t& id) {
  const json a = call(nic, {{"fn", "create_ev_cq"}, {"cqe", cqe}});
  id = a.value("id", uint64_t{0});
  return answer_errno(a);
}

int remote_poll_ev_cq(Nic& nic, uint64_t id, int n, mrc_ctl_ev_event* out, int& got) {
  const json a = call(nic, {{"fn", "poll_ev_cq"}, {"id", id}, {"n", n}});
  got = std::clamp(a.value("got", 0), 0, n);
  std::vector<mrc_ctl_ev_event> events;
  if (got > 0 && array_from_hex(a, "events", got, events))
    std::copy(events.begin(), events.end(), out);
  return answer_errno(a);
}

int remote_destroy_ev_cq(Nic& nic, uint64_t id) {
  return answer_errno(call(nic, {{"fn", "destroy_ev_cq"}, {"id", id}}));
}

int remote_ep_batch(Nic& nic, mrc_ctl_ep_op_type op, const mrc_ctl_ep_req* req, int n,
                    uint32_t timeout_ns, mrc_ctl_ep_rsp* rsp, int& got) {
  const json a = call(nic,
                      {{"fn", "ep_batch"},
                       {"type", static_cast<int>(op)},
                       {"n", n},
                       {"timeout_ns", timeout_ns},
                       {"req", to_hex(req, static_cast<size_t>(std::max(n, 0)) * sizeof *req)}},
                      static_cast<int>(timeout_ns / 1'000'000));
  got = std::clamp(a.value("got", 0), 0, std::max(n, 0));
  std::vector<mrc_ctl_ep_rsp> answers;
  if (got > 0 && array_from_hex(a, "rsp", got, answers))
    std::copy(answers.begin(), answers.end(), rsp);
  return answer_errno(a);
}

// ---- server ----

json serve_call(Nic& nic, mrc_context& ctx, CtlSession& session, const json& req) {
  const std::string fn = req.value("fn", "");
  if (fn == "query_port" || fn == "modify_port") return serve_port(ctx, req, fn == "modify_port");
  if (fn == "port_up") {
    const int plane = req.value("plane", -1);
    if (plane < 0 || plane >= static_cast<int>(nic.spec->planes.size()))
      return json{{"ok", true}, {"errno", EINVAL}};
    std::lock_guard lock(nic.mutex);
    return json{{"ok", true}, {"errno", 0}, {"up", nic.port_up(plane)}};
  }
  if (fn == "query_ev_profile" || fn == "modify_ev_profile")
    return serve_ev_profile(ctx, req, fn[0] == 'm');
  if (fn == "query_ev_fmt_profile" || fn == "modify_ev_fmt_profile")
    return serve_ev_fmt_profile(ctx, req, fn[0] == 'm');
  if (fn == "query_cc_profile" || fn == "modify_cc_profile")
    return serve_cc_profile(ctx, req, fn[0] == 'm');
  if (fn == "ep_batch") return serve_ep_batch(ctx, req);
  if (fn == "create_ev_cq" || fn == "poll_ev_cq" || fn == "destroy_ev_cq")
    return serve_ev_cq(ctx, session, req, fn);
  return json{{"ok", false},
              {"errno", EINVAL},
              {"error", "EINVAL"},
              {"message", "unknown call '" + fn + "'"}};
}

void end_session(CtlSession& session) {
  for (auto& [id, cq] : session.ev_cqs) (void)mrc_destroy_cq(cq);
  session.ev_cqs.clear();
}

}  // namespace mrc::ocp
