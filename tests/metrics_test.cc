// Prometheus metrics (src/host/metrics.h, metrics_server.h): the text parses as the exposition
// format (HELP and TYPE before samples, families contiguous, no duplicate series, valid names,
// labels and values), key numbers equal the engine's own counters after transfers with loss,
// ECN and trimming (tests/pair.h) and over real UDP planes, and the HTTP server serves the
// published snapshot at /metrics, 404 elsewhere, and reports a port in use.
#include "host/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "host/metrics_server.h"
#include "http_get.h"
#include "pair.h"

namespace mrc::host {
namespace {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

struct Parsed {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;
  std::vector<std::string> errors;

  // The value of the one series with exactly these labels; NaN (and a test failure) if absent.
  double value(const std::string& name, const Labels& labels) const {
    for (const Sample& s : samples)
      if (s.name == name && s.labels == labels) return s.value;
    ADD_FAILURE() << "no series " << name;
    return std::nan("");
  }
  // Sum over every series of `name` whose labels include `match`.
  double sum(const std::string& name, const Labels& match) const {
    double total = 0;
    for (const Sample& s : samples) {
      bool ok = s.name == name;
      for (const auto& [k, v] : match) ok = ok && s.labels.count(k) && s.labels.at(k) == v;
      if (ok) total += s.value;
    }
    return total;
  }
  size_t count(const std::string& name) const {
    size_t n = 0;
    for (const Sample& s : samples) n += s.name == name;
    return n;
  }
};

const std::regex kName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
const std::regex kHelp("# HELP ([^ ]+) (.+)");
const std::regex kType("# TYPE ([^ ]+) (counter|gauge)");

// Parses `name{k="v",...}`; returns false on a syntax error.
bool parse_series(const std::string& text, std::string& name, Labels& labels) {
  const size_t brace = text.find('{');
  name = text.substr(0, brace);
  if (!std::regex_match(name, kName)) return false;
  if (brace == std::string::npos) return true;
  size_t i = brace + 1;
  while (i < text.size() && text[i] != '}') {
    const size_t eq = text.find("=\"", i);
    if (eq == std::string::npos) return false;
    const std::string key = text.substr(i, eq - i);
    if (!std::regex_match(key, kLabelName) || labels.count(key)) return false;
    std::string value;
    for (i = eq + 2; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\n') return false;
      if (text[i] != '\\') {
        value += text[i];
        continue;
      }
      if (++i == text.size()) return false;
      if (text[i] == 'n')
        value += '\n';
      else if (text[i] == '\\' || text[i] == '"')
        value += text[i];
      else
        return false;
    }
    if (i == text.size()) return false;
    labels[key] = value;
    if (text[++i] == ',') ++i;
  }
  return i + 1 == text.size();
}

bool parse_value(const std::string& text, double& value) {
  if (text == "NaN" || text == "+Inf" || text == "-Inf") return (value = 0, true);
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0';
}

// Parses the exposition text, recording every rule it breaks in `errors`.
Parsed parse(const std::string& text) {
  Parsed p;
  std::set<std::string> helped, closed, series;
  std::string current;
  auto enter = [&](const std::string& family, int line) {
    if (family == current) return;
    if (closed.count(family))
      p.errors.push_back("line " + std::to_string(line) + ": family " + family + " not contiguous");
    if (!current.empty()) closed.insert(current);
    current = family;
  };
  if (!text.empty() && text.back() != '\n') p.errors.push_back("text does not end with a newline");
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) {
      enter(m[1], n);
      if (!helped.insert(m[1]).second) p.errors.push_back("duplicate HELP " + m[1].str());
      continue;
    }
    if (std::regex_match(line, m, kType)) {
      enter(m[1], n);
      if (!helped.count(m[1]) || p.types.count(m[1]))
        p.errors.push_back("TYPE without HELP, or twice: " + m[1].str());
      p.types[m[1]] = m[2];
      continue;
    }
    const size_t space = line.rfind(' ');
    Sample s;
    if (space == std::string::npos || !parse_series(line.substr(0, space), s.name, s.labels) ||
        !parse_value(line.substr(space + 1), s.value)) {
      p.errors.push_back("line " + std::to_string(n) + " does not parse: " + line);
      continue;
    }
    enter(s.name, n);
    if (!p.types.count(s.name)) p.errors.push_back("sample before HELP/TYPE: " + s.name);
    const bool counter = p.types[s.name] == "counter";
    const bool total = s.name.size() > 6 && s.name.compare(s.name.size() - 6, 6, "_total") == 0;
    if (counter != total) p.errors.push_back("counter iff _total: " + s.name);
    if (s.name.rfind("mrc_", 0) != 0) p.errors.push_back("no mrc_ prefix: " + s.name);
    if (counter && s.value < 0) p.errors.push_back("negative counter: " + line);
    if (!series.insert(line.substr(0, space)).second)
      p.errors.push_back("duplicate series: " + line);
    p.samples.push_back(std::move(s));
  }
  return p;
}

void expect_valid(const Parsed& p) {
  EXPECT_TRUE(p.errors.empty()) << p.errors.size() << " errors, first: " << p.errors.front();
  EXPECT_FALSE(p.samples.empty());
}

// Both directions write with every 29th datagram from A dropped, every 13th ECN-marked and
// every 41st data packet trimmed, so losses, retransmissions, NACKs and EV transitions happen.
void run_lossy_transfer(test::Pair& pair) {
  uint64_t n = 0;
  pair.filter = [&n](int from, std::vector<uint8_t>& bytes, RxMeta& meta, const TxMeta& tx) {
    if (from != 0) return true;
    ++n;
    if (n % 13 == 0) meta.ecn_ce = true;
    if (tx.is_data && n % 41 == 0) {
      bytes.resize(tx.header_bytes);
      meta.trimmed = true;
    }
    return n % 29 != 0;
  };
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(pair.write(0, i * 100000ull, 100000, i).ok());
    ASSERT_TRUE(pair.write(1, i * 100000ull, 100000, i).ok());
  }
  pair.run(Instant{2'000'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 8u);
  ASSERT_EQ(pair.drain(1, false).size(), 8u);
}

void expect_qp_matches(const Parsed& p, const std::string& role, QueuePair& qp) {
  const QpStats s = qp.stats();
  const Labels l = {{"role", role}, {"qpn", std::to_string(qp.qpn().value)}};
  auto with = [&](const char* k, const std::string& v) {
    Labels out = l;
    out[k] = v;
    return out;
  };
  EXPECT_EQ(p.value("mrc_qp_data_packets_sent_total", l), s.data_packets_sent);
  EXPECT_EQ(p.value("mrc_qp_data_sent_bytes_total", l), s.data_bytes_sent);
  EXPECT_EQ(p.value("mrc_qp_retransmits_total", l), s.retransmits);
  EXPECT_EQ(p.value("mrc_qp_data_packets_received_total", l), s.data_packets_received);
  EXPECT_EQ(p.value("mrc_qp_placed_bytes_total", l), s.data_bytes_placed);
  EXPECT_EQ(p.value("mrc_qp_sacks_sent_total", l), s.sacks_sent);
  EXPECT_EQ(p.value("mrc_qp_sacks_received_total", l), s.sacks_received);
  EXPECT_EQ(p.value("mrc_qp_trims_received_total", l), s.trims_received);
  EXPECT_EQ(p.value("mrc_qp_ecn_marks_received_total", l), s.ecn_marks_received);
  EXPECT_EQ(p.value("mrc_qp_timeouts_total", l), s.timeouts);
  EXPECT_EQ(p.value("mrc_qp_losses_total", with("detector", "fast")), s.losses_fast);
  EXPECT_EQ(p.value("mrc_qp_losses_total", with("detector", "timeout")), s.losses_timeout);
  EXPECT_EQ(p.sum("mrc_qp_losses_total", l),
            s.losses_fast + s.losses_probe + s.losses_tail + s.losses_timeout + s.losses_port);
  const auto trimmed = static_cast<size_t>(wire::NackReason::kTrimmed);
  EXPECT_EQ(p.value("mrc_qp_nacks_sent_total", with("reason", "TRIMMED")), s.nacks_sent[trimmed]);
  EXPECT_EQ(p.value("mrc_qp_nacks_received_total", with("reason", "TRIMMED")),
            s.nacks_received[trimmed]);
  const auto duplicate = static_cast<size_t>(DropReason::kDuplicate);
  EXPECT_EQ(p.value("mrc_qp_drops_total", with("reason", "duplicate")), s.drops[duplicate]);
  EXPECT_DOUBLE_EQ(p.value("mrc_qp_rtt_min_seconds", l), static_cast<double>(s.rtt.min_ns) / 1e9);
  EXPECT_DOUBLE_EQ(p.value("mrc_qp_rtt_smoothed_seconds", l),
                   static_cast<double>(s.rtt.smoothed_ns) / 1e9);
  EXPECT_EQ(p.value("mrc_qp_cwnd_bytes", l), s.window_bytes);
  EXPECT_EQ(p.value("mrc_qp_in_flight_bytes", l), s.in_flight_bytes);
  EXPECT_EQ(p.value("mrc_qp_state", with("state", "RTS")), 1);
  EXPECT_EQ(p.sum("mrc_qp_state", l), 1);
  // Every data packet is charged to an EV, and EVs with packets are always listed.
  EXPECT_EQ(p.sum("mrc_ev_data_packets_sent_total", l), s.data_packets_sent);
  EXPECT_EQ(p.sum("mrc_ev_data_sent_bytes_total", l), s.data_bytes_sent);
  const EvTransitions& t = qp.evs()->transitions();
  EXPECT_EQ(p.value("mrc_qp_ev_transitions_total", with("transition", "to_skip")), t.to_skip);
  EXPECT_EQ(p.value("mrc_qp_ev_transitions_total", with("transition", "to_assumed_bad")),
            t.to_assumed_bad);
  EXPECT_EQ(p.value("mrc_qp_ev_transitions_total", with("transition", "replaced")), t.replaced);
}

TEST(Metrics, PairAfterLossyTransferParsesAndMatchesEngine) {
  test::Pair pair(4, test::small_config(), 1 << 20);
  run_lossy_transfer(pair);
  const char* roles[] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    Endpoint& e = *pair.side[i].endpoint;
    const Parsed p = parse(render_metrics(e, nullptr, {{{"role", roles[i]}}, false}));
    expect_valid(p);
    expect_qp_matches(p, roles[i], *pair.side[i].qp);
    const QpStats s = pair.side[i].qp->stats();
    EXPECT_EQ(p.value("mrc_endpoint_datagrams_sent_total", {{"role", roles[i]}}),
              e.stats().datagrams_sent);
    EXPECT_EQ(p.value("mrc_queue_pairs", {{"role", roles[i]}}), 1);
    for (int pl = 0; pl < 4; ++pl) {
      const Labels l = {{"role", roles[i]}, {"plane", std::to_string(pl)}};
      EXPECT_EQ(p.value("mrc_plane_data_sent_bytes_total", l), s.planes[pl].bytes_sent);
      EXPECT_EQ(p.value("mrc_plane_retransmits_total", l), s.planes[pl].retransmits);
      EXPECT_EQ(p.value("mrc_plane_up", l), 1);
    }
    EXPECT_EQ(p.count("mrc_plane_udp_packets_sent_total"), 0u);  // no UdpHost given
  }
  // The faults really exercised the recovery counters that were compared.
  const QpStats a = pair.side[0].qp->stats();
  EXPECT_GT(a.retransmits, 0u);
  EXPECT_GT(a.ecn_marks_received + pair.side[1].qp->stats().ecn_marks_received, 0u);
  EXPECT_GT(pair.side[1].qp->stats().trims_received, 0u);
}

TEST(Metrics, EvSeriesActiveOnlyOrAll) {
  test::Pair pair(2, test::small_config(), 1 << 20);
  ASSERT_TRUE(pair.write(0, 0, 20000, 1).ok());
  pair.run(Instant{100'000'000});
  Endpoint& e = *pair.side[0].endpoint;
  const EvSet& evs = *pair.side[0].qp->evs();
  const Parsed all = parse(render_metrics(e, nullptr, {{}, true}));
  const Parsed active = parse(render_metrics(e, nullptr, {{}, false}));
  expect_valid(all);
  expect_valid(active);
  EXPECT_EQ(all.count("mrc_ev_data_packets_sent_total"), evs.size());
  EXPECT_EQ(all.count("mrc_ev_state"), evs.size() * 4);
  EXPECT_EQ(all.sum("mrc_ev_state", {}), static_cast<double>(evs.size()));  // one state each
  size_t with_packets = 0;
  for (size_t i = 0; i < evs.size(); ++i)
    with_packets += evs.slot(static_cast<uint16_t>(i)).packets > 0;
  EXPECT_GT(with_packets, 0u);
  EXPECT_LT(active.count("mrc_ev_data_packets_sent_total"), evs.size());
  EXPECT_GE(active.count("mrc_ev_data_packets_sent_total"), with_packets);
  // The responder side sent no data: none of its EVs is listed.
  const Parsed idle = parse(render_metrics(*pair.side[1].endpoint, nullptr, {{}, false}));
  EXPECT_EQ(idle.count("mrc_ev_data_packets_sent_total"), 0u);
  expect_valid(idle);
}

// The checker itself catches what it is there to catch.
TEST(Metrics, CheckerRejectsBrokenText) {
  const std::string head = "# HELP mrc_a_total A.\n# TYPE mrc_a_total counter\n";
  EXPECT_TRUE(parse(head + "mrc_a_total{x=\"1\"} 3\n").errors.empty());
  EXPECT_FALSE(parse("mrc_a_total 3\n").errors.empty());                        // no HELP/TYPE
  EXPECT_FALSE(parse(head + "mrc_a_total 3\nmrc_a_total 4\n").errors.empty());  // duplicate series
  EXPECT_FALSE(parse(head + "mrc_a_total{x=1} 3\n").errors.empty());            // unquoted label
  EXPECT_FALSE(parse(head + "mrc_a_total three\n").errors.empty());             // bad value
  EXPECT_FALSE(parse("# HELP mrc_a A.\n# TYPE mrc_a counter\nmrc_a 1\n")
                   .errors.empty());  // counter without _total
  const std::string b = "# HELP mrc_b B.\n# TYPE mrc_b gauge\nmrc_b 1\n";
  EXPECT_FALSE(parse(head + "mrc_a_total 1\n" + b + "mrc_a_total{y=\"2\"} 1\n")
                   .errors.empty());  // split family
}

TEST(Metrics, LabelValuesAreEscaped) {
  test::Pair pair(1, test::small_config(), 4096);
  const std::string odd = "a\"b\\c\nd";
  const Parsed p = parse(
      render_metrics(*pair.side[0].endpoint, nullptr, {{{"role", odd}, {"host", "h1"}}, false}));
  expect_valid(p);
  EXPECT_EQ(p.value("mrc_queue_pairs", {{"role", odd}, {"host", "h1"}}), 1);
  EXPECT_EQ(escape_label_value(odd), "a\\\"b\\\\c\\nd");
}

// Two UdpHosts on loopback planes 127.0.0.1-2: after a transfer, the per-plane UDP families
// equal the host's plane counters, and a plane taken down shows as down.
TEST(Metrics, UdpHostPlanesMatch) {
  std::unique_ptr<io::UdpHost> host[2];
  QueuePair* qp[2];
  std::vector<uint8_t> buffer(1 << 20, 0x5A);
  MemoryRegionInfo mr[2];
  std::vector<io::PlaneAddress> planes[2];
  for (int i = 0; i < 2; ++i) {
    io::UdpHostConfig c;
    for (int p = 0; p < 2; ++p)
      planes[i].push_back(io::parse_plane_address("127.0.0." + std::to_string(p + 1),
                                                  static_cast<uint16_t>(24791 + i))
                              .value());
    c.planes = planes[i];
    c.ev_port_base =
        static_cast<uint16_t>(47400 + i * 300);  // clear of the device-group tests' 45100-45687
    auto h = io::UdpHost::open(c);
    ASSERT_TRUE(h.ok()) << h.error().message;
    host[i] = std::move(h.value());
    Endpoint& e = host[i]->endpoint();
    const uint32_t pd = e.memory().alloc_pd();
    CompletionQueue* cq = e.create_cq(64);
    QpConfig qc;
    qc.ev_count = 16;
    qc.ev_port_base = c.ev_port_base;
    qp[i] = e.create_qp(qc, pd, cq, cq).value();
    mr[i] = e.memory()
                .register_region(pd, buffer.data(), buffer.size(),
                                 kAccessLocalWrite | kAccessRemoteWrite)
                .value();
  }
  for (int i = 0; i < 2; ++i) {
    const uint32_t peer = host[i]->add_peer(planes[1 - i]).value();
    ASSERT_TRUE(qp[i]->to_init().ok());
    ASSERT_TRUE(qp[i]->to_rtr(RtrAttributes{qp[1 - i]->qpn(), Psn(7), peer}).ok());
    ASSERT_TRUE(qp[i]->to_rts(RtsAttributes{Psn(7)}).ok());
  }
  Sge sge{mr[0].address, 1 << 19, mr[0].lkey};
  SendWr wr;
  wr.opcode = SendOpcode::kWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = mr[1].address + (1 << 19);
  wr.rkey = mr[1].rkey;
  ASSERT_TRUE(qp[0]->post_send(wr).ok());
  for (int k = 0; k < 20000 && qp[1]->stats().data_bytes_placed < (1u << 19); ++k)
    for (auto& h : host) h->progress(Duration::from_us(100));
  for (int k = 0; k < 50; ++k)  // let the last SACKs land
    for (auto& h : host) h->progress(Duration::from_us(100));
  ASSERT_EQ(qp[1]->stats().data_bytes_placed, 1u << 19);
  host[0]->set_plane_up(1, false);
  const Parsed p =
      parse(render_metrics(host[0]->endpoint(), host[0].get(), {{{"role", "client"}}, false}));
  expect_valid(p);
  for (int pl = 0; pl < 2; ++pl) {
    const Labels l = {{"role", "client"}, {"plane", std::to_string(pl)}};
    const mrc::UdpPlaneStats& s = host[0]->plane_stats(pl);
    EXPECT_GT(s.packets_sent, 0u);
    EXPECT_EQ(p.value("mrc_plane_udp_packets_sent_total", l), s.packets_sent);
    EXPECT_EQ(p.value("mrc_plane_udp_sent_bytes_total", l), s.bytes_sent);
    EXPECT_EQ(p.value("mrc_plane_udp_packets_received_total", l), s.packets_received);
    EXPECT_EQ(p.value("mrc_plane_udp_received_bytes_total", l), s.bytes_received);
    EXPECT_EQ(p.value("mrc_plane_udp_send_errors_total", l), s.send_errors);
    EXPECT_EQ(p.value("mrc_plane_impairment_drops_total", l), s.impairment_drops);
    EXPECT_EQ(p.value("mrc_plane_up", l), pl == 0 ? 1 : 0);
  }
}

TEST(MetricsServer, ServesTheLatestSnapshotAt404Elsewhere) {
  auto started = MetricsServer::start("127.0.0.1", 0);
  ASSERT_TRUE(started.ok()) << started.error().message;
  MetricsServer& server = *started.value();
  ASSERT_GT(server.port(), 0);
  int renders = 0;
  server.maybe_publish([&] { return ++renders, std::string("mrc_x_total 1\n"); });
  server.maybe_publish([&] { return ++renders, std::string("mrc_x_total 2\n"); });
  EXPECT_EQ(renders, 1);  // the second came within the refresh interval
  std::string r = http_get(server.port(), "/metrics");
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_NE(r.find("text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nmrc_x_total 1\n"), std::string::npos) << r;
  server.set_refresh(std::chrono::milliseconds(0));
  server.maybe_publish([&] { return ++renders, std::string("mrc_x_total 3\n"); });
  EXPECT_EQ(renders, 2);
  EXPECT_NE(http_get(server.port(), "/metrics").find("mrc_x_total 3\n"), std::string::npos);
  r = http_get(server.port(), "/");
  EXPECT_NE(r.find("HTTP/1.1 404"), std::string::npos) << r;
  EXPECT_NE(http_get(server.port(), "/metricsx").find("HTTP/1.1 404"), std::string::npos);
}

// A scraper is the only client the server expects, but it serves one at a time: a client that
// connects and says nothing is dropped (after 2 s), one that sends garbage or an oversized
// request gets a 404 or is dropped, and the next scrape is answered either way.
TEST(MetricsServer, SilentGarbageAndOversizedClientsDoNotStopIt) {
  auto started = MetricsServer::start("127.0.0.1", 0);
  ASSERT_TRUE(started.ok()) << started.error().message;
  MetricsServer& server = *started.value();
  server.render_on_scrape([] { return std::string("mrc_x_total 7\n"); });
  const auto connect_to = [&] {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server.port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
    return fd;
  };
  const int silent = connect_to();
  EXPECT_NE(http_get(server.port(), "/metrics").find("\r\n\r\nmrc_x_total 7\n"), std::string::npos);
  close(silent);
  const int big = connect_to();
  const std::string junk(64 << 10, 'x');
  (void)!send(big, junk.data(), junk.size(), MSG_NOSIGNAL);  // the server may close first
  EXPECT_NE(http_get(server.port(), "/metrics").find("mrc_x_total 7"), std::string::npos);
  close(big);
  EXPECT_NE(http_get(server.port(), "GARBAGE").find("HTTP/1.1 404"), std::string::npos);
  EXPECT_NE(http_get(server.port(), "/metrics").find("mrc_x_total 7"), std::string::npos);
}

TEST(MetricsServer, PortInUseIsAClearError) {
  auto first = MetricsServer::start("127.0.0.1", 0);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const uint16_t port = first.value()->port();
  auto second = MetricsServer::start("127.0.0.1", port);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
  EXPECT_EQ(second.error().code, Errc::kAddressInUse);
  auto bad = MetricsServer::start("192.0.2.1", port);  // not a local address
  ASSERT_FALSE(bad.ok());
}

}  // namespace
}  // namespace mrc::host
