// The public datapath vocabulary's functions (include/mrc/datapath.hpp): backend names, the
// plane counters' sum over shards, a flapping plane's schedule, and the pre-shared key file.
#include "mrc/datapath.hpp"

#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "util/hex.h"

namespace mrc {

UdpPlaneStats& UdpPlaneStats::operator+=(const UdpPlaneStats& o) {
  packets_sent += o.packets_sent;
  bytes_sent += o.bytes_sent;
  packets_received += o.packets_received;
  bytes_received += o.bytes_received;
  send_errors += o.send_errors;
  send_calls += o.send_calls;
  receive_calls += o.receive_calls;
  impairment_drops += o.impairment_drops;
  ev_port_mismatches += o.ev_port_mismatches;
  receive_refused += o.receive_refused;
  unresolved_neighbour += o.unresolved_neighbour;
  return *this;
}

const char* to_string(Backend backend) {
  return backend == Backend::kXdp ? "xdp" : "udp";
}

Result<Backend, Error> parse_backend(const std::string& text) {
  if (text == "udp") return Backend::kUdp;
  if (text == "xdp") return Backend::kXdp;
  return fail(Errc::kInvalidArgument, "unknown backend '" + text + "': expected udp or xdp");
}

bool PlaneFlap::down_at(Duration t) const {
  return t >= every && t.ns % every.ns < down_for.ns;
}

Duration PlaneFlap::next_change(Duration t) const {
  if (t < every) return every;
  const Duration period_start{t.ns - t.ns % every.ns};
  return down_at(t) ? period_start + down_for : period_start + every;
}

Result<std::vector<uint8_t>, Error> read_key_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return fail(Errc::kNotFound, "key file " + path +
                                     ": no such file (make one with: openssl "
                                     "rand -hex 32 > " +
                                     path + "; chmod 600 " + path + ")");
  if (!S_ISREG(st.st_mode) || st.st_size > 4096)
    return fail(Errc::kInvalidArgument,
                "key file " + path + ": not a regular file of at most 4096 bytes");
  if ((st.st_mode & 077) != 0)
    return fail(Errc::kPermission,
                "key file " + path + " is readable by others: chmod 600 " + path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string digits;
  for (const char c : text.str())
    if (!std::isspace(static_cast<unsigned char>(c))) digits += c;
  std::vector<uint8_t> key;
  if (!from_hex(digits, key) || key.size() < kMinPresharedKeyBytes)
    return fail(Errc::kInvalidArgument,
                "key file " + path + ": must hold at least 32 hex digits (openssl rand -hex 32)");
  return key;
}

}  // namespace mrc
