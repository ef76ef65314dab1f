// mrcctl: the OCP MRC controller as a command-line tool, in the style of ip(8) and rdma(8). It
// talks to the process that opened a device, over the device's control socket (ctl_socket.h),
// so it works beside any running MRC program. Every show command takes --json.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "ocp/ctl_socket.h"
#include "ocp/device_config.h"

using nlohmann::json;
using namespace mrc::ocp;

namespace {

constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

const char* const kUsage = R"(usage: mrcctl [-j|--json] OBJECT COMMAND [ARGUMENTS]

  dev [show [DEV]]                          devices (configured or serving a control socket)
  port show DEV                             ports (planes): address, admin and link state, packets
  port set DEV PORT up|down                 administrative state of a port; down takes the plane out
  ev profile show DEV                       EV profiles (mode, count, floor, event mask, denied
                                            EVs; an explicit or generated profile's EV array
                                            and a generated one's field rules)
  ev show DEV [profile ID] [qp QPN]         EV states of every connected QP
  ev deny DEV EV PORT [profile ID]          deny an EV in every QP of the profile (default 0)
  ev allow DEV EV PORT [profile ID]         allow it again
  ev probe DEV EV PORT [qp QPN | to ADDRESS] [count N] [timeout MS]
                                            EV probes (connectionless) to the QP's peer or to
                                            any host's address on the plane; prints each RTT
  cc show DEV                               congestion control profiles
  watch DEV [count N]                       EV state changes of every QP as they happen

An EV is named by its UDP source port and the port (plane, 1-based) it leaves from, as
`mrcctl ev show` lists them; a STEV EV by its source port and flow label (50001:0x1234), an
SRv6 EV by its address (fd00:1:200::), as `mrcctl ev profile show` lists them. DEV is served by the process that opened it (any program using
lib_mrc.so); sockets are in $MRC_CTL_DIR, /run/mrc (root), $XDG_RUNTIME_DIR/mrc or
/tmp/mrc-<uid>. Exit status: 0 done, 1 refused (the message says why), 2 usage,
3 no such device or no process serving it.
)";

struct Options {
  bool json_output = false;
  std::vector<std::string> words;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "mrcctl: %s\n(mrcctl --help for usage)\n", message.c_str());
  return kExitUsage;
}

bool parse_uint(const std::string& text, uint64_t max, uint64_t& out) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoull(text);
  return out <= max;
}

std::vector<std::string> configured_devices() {
  std::vector<std::string> names;
  for (const DeviceSpec& d : device_config().devices) names.push_back(d.name);
  return names;
}

// A connection to DEV's server, or -1 after printing why not.
int connect_device(const std::string& device, bool quiet = false) {
  const std::string path = ctl_socket_path(device);
  const int fd = ctl_connect(path);
  if (fd >= 0 || quiet) return fd;
  const auto names = configured_devices();
  const bool known = std::find(names.begin(), names.end(), device) != names.end();
  if (errno == ENOENT && !known) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "mrcctl: no such device '%s' (configured: %s; no socket %s)\n",
                 device.c_str(), list.empty() ? "none" : list.c_str(), path.c_str());
  } else if (errno == ENOENT || errno == ECONNREFUSED) {
    std::fprintf(
        stderr, "mrcctl: %s: no process serves it (%s %s); start the program that uses it\n",
        device.c_str(), errno == ENOENT ? "no socket" : "stale socket, its process has ended",
        path.c_str());
  } else {
    std::fprintf(stderr, "mrcctl: %s: %s: %s\n", device.c_str(), path.c_str(),
                 std::strerror(errno));
  }
  return -1;
}

bool send_request(int fd, const json& request) {
  const std::string line = request.dump() + "\n";
  return send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size());
}

// One response line; `timeout_ms` < 0 waits for ever. Empty on end of stream or timeout.
std::string read_line(int fd, std::string& buffer, int timeout_ms) {
  for (;;) {
    if (const size_t end = buffer.find('\n'); end != std::string::npos) {
      std::string line = buffer.substr(0, end);
      buffer.erase(0, end + 1);
      return line;
    }
    if (buffer.size() > kCtlResponseMax) return "";
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return "";
    char chunk[65536];
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return "";
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

// Sends `request` to DEV and returns its answer; on failure prints why and sets `exit_code`.
json call(const std::string& device, const json& request, int& exit_code) {
  const int fd = connect_device(device);
  if (fd < 0) {
    exit_code = kExitUnreachable;
    return json();
  }
  std::string buffer;
  json answer;
  if (send_request(fd, request)) answer = json::parse(read_line(fd, buffer, 15000), nullptr, false);
  close(fd);
  if (answer.is_discarded() || !answer.is_object()) {
    std::fprintf(stderr, "mrcctl: %s: no answer from its process\n", device.c_str());
    exit_code = kExitUnreachable;
    return json();
  }
  if (!answer.value("ok", false)) {
    std::fprintf(stderr, "mrcctl: %s: %s (%s)\n", device.c_str(),
                 answer.value("message", "refused").c_str(),
                 answer.value("error", "error").c_str());
    exit_code = kExitRefused;
    return json();
  }
  exit_code = 0;
  return answer;
}

void print_ports(const json& d) {
  std::printf("%s  pid %d  qps %d\n", d.value("device", "?").c_str(), d.value("pid", 0),
              d.value("qps", 0));
  if (d.value("secure", "off") != "off") {
    const json& k = d["key_offers"];
    std::printf(
        "  secure %s  qps awaiting keys %d  key offers: sent %llu  received %llu  "
        "refused %llu\n",
        d.value("secure", "?").c_str(), d.value("qps_awaiting_keys", 0), k.value("sent", 0ull),
        k.value("received", 0ull), k.value("refused", 0ull));
  }
  if (d.value("busy_poll_us", 0u) != 0)
    std::printf("  busy polling %u us after work\n", d.value("busy_poll_us", 0u));
  for (const json& p : d["planes"])
    std::printf("  port %d  %s:%d  admin %-4s  link %-4s  tx %llu  rx %llu packets\n",
                p.value("port", 0), p.value("address", "?").c_str(), p.value("udp_port", 0),
                p.value("admin", "?").c_str(), p.value("link", "?").c_str(),
                p.value("packets_sent", 0ull), p.value("packets_received", 0ull));
}

int cmd_dev(const Options& o, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  if (args.size() > 1) {
    names.push_back(args[1]);
  } else {
    std::set<std::string> seen;
    for (const auto& n : configured_devices())
      if (seen.insert(n).second) names.push_back(n);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(ctl_socket_dir(), ec))
      if (e.path().extension() == ".sock" && seen.insert(e.path().stem()).second)
        names.push_back(e.path().stem());
  }
  json list = json::array();
  int rc = 0;
  for (const auto& n : names) {
    int code = 0;
    const bool single = args.size() > 1;
    const int fd = connect_device(n, !single);
    json d = fd >= 0 ? (close(fd), call(n, {{"op", "device"}}, code)) : json();
    if (fd < 0 && single) return kExitUnreachable;
    if (d.is_null())
      d = json{{"device", n}, {"served", false}};
    else
      d["served"] = true;
    rc = std::max(rc, code);
    list.push_back(d);
  }
  if (o.json_output) {
    std::printf("%s\n", list.dump(2).c_str());
    return rc;
  }
  for (const json& d : list) {
    if (!d["served"].get<bool>())
      std::printf("%s  not served (no process has it open)\n",
                  d["device"].get<std::string>().c_str());
    else
      print_ports(d);
  }
  return rc;
}

// Prints the answer as JSON or with `human`; returns the exit code.
template <typename F>
int show(const Options& o, const std::string& device, const json& request, F&& human) {
  int code = 0;
  const json answer = call(device, request, code);
  if (code != 0) return code;
  if (o.json_output)
    std::printf("%s\n", answer.dump(2).c_str());
  else
    human(answer);
  return 0;
}

int cmd_port(const Options& o, const std::vector<std::string>& a) {
  if (a.size() == 3 && a[1] == "show") return show(o, a[2], {{"op", "device"}}, print_ports);
  uint64_t port = 0;
  if (a.size() == 5 && a[1] == "set" && parse_uint(a[3], 255, port) &&
      (a[4] == "up" || a[4] == "down"))
    return show(o, a[2], {{"op", "port-set"}, {"port", port}, {"admin", a[4]}}, [](const json&) {});
  return usage_error("port show DEV | port set DEV PORT up|down");
}

// An EV value as the device gives it: a source port, or an SRv6 EV's address.
std::string ev_text(const json& ev) {
  return ev.is_string() ? ev.get<std::string>() : std::to_string(ev.get<int>());
}

void print_ev_profiles(const json& answer) {
  for (const json& p : answer["profiles"]) {
    std::string mask, denied;
    for (const json& m : p["event_mask"]) {
      if (!mask.empty()) mask += ',';  // not ("," + string): GCC 12 -O3 LTO warns falsely on it
      mask += m.get<std::string>();
    }
    for (const json& d : p["denied"])
      denied += " " + ev_text(d["ev"]) + "/" + std::to_string(d["port"].get<int>());
    std::printf("profile %llu  %-7s  mode %s  count %u  min_active %u  events %s  qps %d%s%s\n",
                p["id"].get<unsigned long long>(), p.value("state", "?").c_str(),
                p.value("mode", "?").c_str(), p.value("count", 0u), p.value("min_active", 0u),
                mask.empty() ? "none" : mask.c_str(), p.value("qps", 0),
                denied.empty() ? "" : "  denied", denied.c_str());
    if (p.contains("fields")) {
      for (const json& f : p["fields"])
        std::printf("  field width %u init %u range %u-%u mask 0x%x\n", f.value("width", 0u),
                    f.value("init_val", 0u), f.value("min_val", 0u), f.value("max_val", 0u),
                    f.value("mask", 0u));
    }
    if (!p.contains("evs")) continue;
    std::string evs;  // explicit profile: its EV array, EV/port, copies included
    for (const json& e : p["evs"])
      evs += " " + ev_text(e["ev"]) + "/" + std::to_string(e["port"].get<int>());
    std::printf("  evs%s\n", evs.c_str());
  }
}

void print_ev_states(const json& answer) {
  for (const json& q : answer["qps"]) {
    std::printf("qp %u  profile %llu  %s  peer %s qp %u\n", q.value("qpn", 0u),
                q["profile"].get<unsigned long long>(), q.value("state", "?").c_str(),
                q.value("peer", "?").c_str(), q.value("dest_qpn", 0u));
    for (const json& e : q["evs"])
      std::printf("  ev %5u port %u%s%s  %-11s %-7s packets %llu  losses %llu  probes %llu/%llu\n",
                  e.value("ev", 0u), e.value("port", 0u), e.contains("path") ? "  path " : "",
                  e.value("path", "").c_str(), e.value("state", "?").c_str(),
                  e.value("active", false) ? "active" : "backup", e.value("packets", 0ull),
                  e.value("losses", 0ull), e.value("probes_answered", 0ull),
                  e.value("probes_sent", 0ull));
  }
}

// Optional "NAME VALUE" pairs after the fixed arguments, e.g. "profile 3 qp 17".
bool options_after(const std::vector<std::string>& a, size_t from,
                   const std::set<std::string>& names, json& out) {
  for (size_t i = from; i < a.size(); i += 2) {
    uint64_t v = 0;
    if (!names.count(a[i]) || i + 1 >= a.size()) return false;
    if (a[i] == "to") {  // an address, checked by the device's owner
      out["to"] = a[i + 1];
      continue;
    }
    if (!parse_uint(a[i + 1], UINT32_MAX, v)) return false;
    out[a[i] == "qp" ? "qpn" : a[i] == "timeout" ? "timeout_ms" : a[i]] = v;
  }
  return true;
}

int cmd_ev_probe(const Options& o, const std::vector<std::string>& a, json req) {
  req["op"] = "probe";
  return show(o, a[2], req, [&](const json& r) {
    for (const json& x : r["answers"])
      std::printf("ev %s port %s: answer %u on port %u, rtt %.1f us\n", a[3].c_str(), a[4].c_str(),
                  x.value("req_id", 0u), x.value("port", 0u), x.value("rtt_ns", 0u) / 1000.0);
    std::printf("%llu sent, %d answered\n", r["sent"].get<unsigned long long>(),
                r.value("answered", 0));
  });
}

int cmd_ev(const Options& o, const std::vector<std::string>& a) {
  if (a.size() == 4 && a[1] == "profile" && a[2] == "show")
    return show(o, a[3], {{"op", "ev-profiles"}}, print_ev_profiles);
  json req;
  if (a.size() >= 3 && a[1] == "show" && options_after(a, 3, {"profile", "qp"}, req)) {
    req["op"] = "ev-states";
    return show(o, a[2], req, print_ev_states);
  }
  uint64_t number = 0, port = 0;
  json ev;  // a source port, or an SRv6 EV's address (checked by the device's owner)
  const bool text_ev = a.size() >= 5 && a[3].find(':') != std::string::npos;  // SRv6 or STEV
  const bool ev_args =
      a.size() >= 5 && (text_ev || parse_uint(a[3], 65535, number)) && parse_uint(a[4], 255, port);
  if (ev_args) ev = text_ev ? json(a[3]) : json(number);
  if (ev_args && (a[1] == "deny" || a[1] == "allow") && options_after(a, 5, {"profile"}, req)) {
    req.update({{"op", "ev-set"},
                {"ev", ev},
                {"port", port},
                {"state", a[1] == "deny" ? "denied" : "good"}});
    return show(o, a[2], req, [&](const json& r) {
      if (!r.value("in_live_qps", false))
        std::printf(
            "note: no connected QP of the profile has EV %s port %llu yet; the state applies to "
            "QPs that connect later\n",
            a[3].c_str(), static_cast<unsigned long long>(port));
    });
  }
  req = json::object();
  if (ev_args && a[1] == "probe" && options_after(a, 5, {"qp", "to", "count", "timeout"}, req)) {
    req.update({{"ev", ev}, {"port", port}});
    return cmd_ev_probe(o, a, req);
  }
  return usage_error(
      "ev profile show DEV | ev show DEV [profile ID] [qp QPN] | ev deny|allow DEV EV PORT "
      "[profile ID] | ev probe DEV EV PORT [qp QPN | to ADDRESS] [count N] [timeout MS]");
}

int cmd_cc(const Options& o, const std::vector<std::string>& a) {
  if (a.size() != 3 || a[1] != "show") return usage_error("cc show DEV");
  return show(o, a[2], {{"op", "cc-profiles"}}, [](const json& r) {
    for (const json& p : r["profiles"]) {
      std::printf("profile %llu  %-7s  %s", p["id"].get<unsigned long long>(),
                  p.value("state", "?").c_str(), p.value("algorithm", "?").c_str());
      if (p.contains("config"))
        for (const auto& [k, v] : p["config"].items())
          std::printf("  %s %s", k.c_str(), v.dump().c_str());
      std::printf("\n");
    }
  });
}

int cmd_watch(const Options& o, const std::vector<std::string>& a) {
  uint64_t count = 0;
  if (a.size() != 2 && !(a.size() == 4 && a[2] == "count" && parse_uint(a[3], UINT32_MAX, count)))
    return usage_error("watch DEV [count N]");
  const int fd = connect_device(a[1]);
  if (fd < 0) return kExitUnreachable;
  std::string buffer;
  if (!send_request(fd, {{"op", "watch"}})) return kExitUnreachable;
  const json hello = json::parse(read_line(fd, buffer, 15000), nullptr, false);
  if (hello.is_discarded() || !hello.value("ok", false)) {
    std::fprintf(stderr, "mrcctl: %s: watch refused\n", a[1].c_str());
    return kExitRefused;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  for (uint64_t seen = 0; count == 0 || seen < count; ++seen) {
    const std::string line = read_line(fd, buffer, -1);
    const json e = json::parse(line, nullptr, false);
    if (line.empty() || e.is_discarded()) {
      std::fprintf(stderr, "mrcctl: %s: its process ended\n", a[1].c_str());
      return kExitUnreachable;
    }
    if (o.json_output)
      std::printf("%s\n", line.c_str());
    else if (e.value("event", "") == "lost")
      std::printf("%llu events lost\n", e["count"].get<unsigned long long>());
    else
      std::printf("qp %u  profile %llu  ev %u port %u  %s\n", e.value("qpn", 0u),
                  e["profile"].get<unsigned long long>(), e.value("ev", 0u), e.value("port", 0u),
                  e.value("state", "?").c_str());
  }
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string w = argv[i];
    if (w == "-h" || w == "--help" || w == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (w == "-j" || w == "--json")
      o.json_output = true;
    else if (!w.empty() && w[0] == '-')
      return usage_error("unknown option " + w);
    else
      o.words.push_back(w);
  }
  const auto& a = o.words;
  if (a.empty()) return usage_error("no object given");
  try {
    if (a[0] == "dev" && (a.size() == 1 || (a[1] == "show" && a.size() <= 3)))
      return cmd_dev(o, a.size() == 1 ? std::vector<std::string>{"dev"}
                                      : std::vector<std::string>(a.begin() + 1, a.end()));
    if (a[0] == "port") return cmd_port(o, a);
    if (a[0] == "ev") return cmd_ev(o, a);
    if (a[0] == "cc") return cmd_cc(o, a);
    if (a[0] == "watch") return cmd_watch(o, a);
  } catch (const std::exception& e) {  // an answer of an unexpected shape
    std::fprintf(stderr, "mrcctl: unexpected answer: %s\n", e.what());
    return kExitRefused;
  }
  return usage_error("unknown object or command '" + a[0] + "'");
}
