// Prometheus text for one engine (see metrics.h and docs/METRICS.md). Each render_* function
// writes one group of families; MetricsWriter keeps every family contiguous with its HELP and
// TYPE lines, whatever order the samples come in.
#include "host/metrics.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>

#include "core/wire/packet.h"

namespace mrc::host {

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

MetricLabels with(MetricLabels labels, const char* key, std::string value) {
  labels.emplace_back(key, std::move(value));
  return labels;
}

double seconds(int64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

}  // namespace

MetricsWriter::Family& MetricsWriter::family(const std::string& name, const char* help,
                                             const char* type) {
  const auto [it, inserted] = index_.try_emplace(name, families_.size());
  if (inserted) families_.push_back({name, help, type, {}});
  return families_[it->second];
}

std::string MetricsWriter::series(const std::string& name, const MetricLabels& labels) const {
  std::string out = name;
  const size_t n = base_.size() + labels.size();
  if (n == 0) return out;
  out += '{';
  size_t i = 0;
  for (const MetricLabels* set : {&base_, &labels}) {
    for (const auto& [key, value] : *set) {
      out += key;
      out += "=\"";
      out += escape_label_value(value);
      out += ++i < n ? "\"," : "\"";
    }
  }
  out += '}';
  return out;
}

void MetricsWriter::counter(const std::string& name, const char* help, const MetricLabels& labels,
                            uint64_t value) {
  family(name, help, "counter").samples +=
      series(name, labels) + ' ' + std::to_string(value) + '\n';
}

void MetricsWriter::gauge(const std::string& name, const char* help, const MetricLabels& labels,
                          double value) {
  family(name, help, "gauge").samples += series(name, labels) + ' ' + format_value(value) + '\n';
}

std::string MetricsWriter::text() const {
  std::string out;
  for (const Family& f : families_) {
    out += "# HELP " + f.name + ' ' + f.help + '\n';
    out += "# TYPE " + f.name + ' ' + f.type + '\n';
    out += f.samples;
  }
  return out;
}

namespace {

void render_endpoint(MetricsWriter& w, Endpoint& e) {
  const EndpointStats& s = e.stats();
  w.counter("mrc_endpoint_datagrams_received_total", "Datagrams handed to the engine.", {},
            s.datagrams_received);
  w.counter("mrc_endpoint_datagrams_sent_total", "Datagrams the engine produced.", {},
            s.datagrams_sent);
  for (size_t r = 0; r < s.decode_errors.size(); ++r) {
    std::string name(wire::to_string(static_cast<wire::DecodeError>(r)));
    const bool known = name != "unknown decode error";
    if (!known && s.decode_errors[r] == 0) continue;
    for (char& c : name)
      c = c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    w.counter("mrc_endpoint_decode_errors_total", "Datagrams refused by the decoder, by reason.",
              {{"reason", known ? name : "code_" + std::to_string(r)}}, s.decode_errors[r]);
  }
  w.counter("mrc_endpoint_unknown_qp_total", "Datagrams for a queue pair that does not exist.", {},
            s.unknown_qp);
  for (size_t r = 0; r < s.security_drops.size(); ++r) {
    w.counter("mrc_endpoint_security_drops_total",
              "Datagrams refused by secure mode before any queue pair saw them, by reason.",
              {{"reason", to_string(static_cast<SecurityDrop>(r))}}, s.security_drops[r]);
  }
  size_t qps = 0;
  e.for_each_qp([&](QueuePair&) { ++qps; });
  w.gauge("mrc_queue_pairs", "Queue pairs on this endpoint.", {}, static_cast<double>(qps));
}

void render_qp_state(MetricsWriter& w, const QueuePair& qp, const MetricLabels& l) {
  for (const QpState s :
       {QpState::kReset, QpState::kInit, QpState::kRtr, QpState::kRts, QpState::kError})
    w.gauge("mrc_qp_state", "Queue pair state: 1 for the current state, 0 for the others.",
            with(l, "state", to_string(s)), qp.state() == s ? 1 : 0);
}

void render_qp_traffic(MetricsWriter& w, const QpStats& s, const MetricLabels& l) {
  w.counter("mrc_qp_data_packets_sent_total", "Data packets sent, retransmissions included.", l,
            s.data_packets_sent);
  w.counter("mrc_qp_data_sent_bytes_total",
            "Payload bytes of data packets sent, retransmissions included.", l, s.data_bytes_sent);
  w.counter("mrc_qp_retransmits_total", "Data packets sent again.", l, s.retransmits);
  w.counter("mrc_qp_data_packets_received_total", "Data packets received and placed.", l,
            s.data_packets_received);
  w.counter("mrc_qp_placed_bytes_total", "Payload bytes placed in memory.", l, s.data_bytes_placed);
  w.counter("mrc_qp_sacks_sent_total", "SACKs sent.", l, s.sacks_sent);
  w.counter("mrc_qp_sacks_received_total", "SACKs received.", l, s.sacks_received);
  w.counter("mrc_qp_stale_sacks_total", "SACKs that arrived after a newer one.", l, s.stale_sacks);
  w.counter("mrc_qp_trims_received_total", "Trimmed packets received (responder).", l,
            s.trims_received);
  w.counter("mrc_qp_ecn_marks_received_total", "ECN marks received.", l, s.ecn_marks_received);
  w.counter("mrc_qp_timeouts_total", "Retransmission timer expiries.", l, s.timeouts);
  w.counter("mrc_qp_tail_probes_total", "Tail-loss probes sent.", l, s.tail_probes);
  w.counter("mrc_qp_ev_probes_total", "Background EV probes sent.", l, s.ev_probes);
  w.counter("mrc_qp_wimm_delivered_total", "WRITE-with-immediate messages delivered.", l,
            s.wimm_delivered);
  w.counter("mrc_qp_work_requests_completed_total", "Send work requests completed.", l,
            s.work_requests_completed);
  w.counter("mrc_qp_control_queue_overflows_total", "Control packets lost to a full control queue.",
            l, s.control_queue_overflows);
  w.counter("mrc_qp_answers_limited_total",
            "SACKs to duplicates and NACKs to PSNs beyond the window held back by the rate limit.",
            l, s.answers_limited);
  w.counter("mrc_qp_access_naks_sent_total",
            "NAKs 'remote access error' sent for WRITEs whose key, access or bounds failed.", l,
            s.access_naks_sent);
  w.counter("mrc_qp_access_naks_received_total",
            "NAKs 'remote access error' received for packets still in flight.", l,
            s.access_naks_received);
}

void render_qp_reasons(MetricsWriter& w, const QpStats& s, const MetricLabels& l) {
  for (int code = 0; code < kNackReasonSlots; ++code) {
    const std::string_view name = wire::to_string(static_cast<wire::NackReason>(code));
    const bool known = name != "UNKNOWN_NACK_REASON";
    if (!known && s.nacks_sent[code] == 0 && s.nacks_received[code] == 0) continue;
    const MetricLabels rl =
        with(l, "reason", known ? std::string(name) : "code_" + std::to_string(code));
    w.counter("mrc_qp_nacks_sent_total", "NACKs sent, by NACK reason.", rl, s.nacks_sent[code]);
    w.counter("mrc_qp_nacks_received_total", "NACKs received, by NACK reason.", rl,
              s.nacks_received[code]);
  }
  const std::pair<const char*, uint64_t> losses[] = {{"fast", s.losses_fast},
                                                     {"probe", s.losses_probe},
                                                     {"tail", s.losses_tail},
                                                     {"timeout", s.losses_timeout},
                                                     {"port", s.losses_port}};
  for (const auto& [detector, n] : losses)
    w.counter("mrc_qp_losses_total", "Packets declared lost, by detector.",
              with(l, "detector", detector), n);
  for (size_t r = 0; r < s.drops.size(); ++r)
    w.counter("mrc_qp_drops_total", "Received packets not placed, by reason.",
              with(l, "reason", to_string(static_cast<DropReason>(r))), s.drops[r]);
}

void render_qp_gauges(MetricsWriter& w, const QpStats& s, const MetricLabels& l) {
  w.gauge("mrc_qp_rtt_min_seconds", "Smallest RTT sample.", l, seconds(s.rtt.min_ns));
  w.gauge("mrc_qp_rtt_avg_seconds", "Mean of all RTT samples.", l, seconds(s.rtt.avg_ns()));
  w.gauge("mrc_qp_rtt_max_seconds", "Largest RTT sample.", l, seconds(s.rtt.max_ns));
  w.gauge("mrc_qp_rtt_smoothed_seconds", "Smoothed RTT (RFC 6298).", l, seconds(s.rtt.smoothed_ns));
  w.gauge("mrc_qp_rtt_variation_seconds", "RTT variation (RFC 6298).", l,
          seconds(s.rtt.variation_ns));
  w.counter("mrc_qp_rtt_samples_total", "RTT samples taken.", l, s.rtt.samples);
  w.gauge("mrc_qp_cwnd_bytes", "Congestion window.", l, static_cast<double>(s.window_bytes));
  w.gauge("mrc_qp_in_flight_bytes", "Bytes sent and not yet acknowledged or declared lost.", l,
          static_cast<double>(s.in_flight_bytes));
}

void render_ev_transitions(MetricsWriter& w, const EvSet& evs, const MetricLabels& l) {
  const EvTransitions& t = evs.transitions();
  const std::pair<const char*, uint64_t> rows[] = {
      {"to_skip", t.to_skip},      {"to_assumed_bad", t.to_assumed_bad},
      {"revived", t.revived},      {"to_denied", t.to_denied},
      {"replaced", t.replaced},    {"regenerated", t.regenerated},
      {"floor_held", t.floor_held}};
  for (const auto& [name, n] : rows)
    w.counter("mrc_qp_ev_transitions_total", "EV state machine events, by kind.",
              with(l, "transition", name), n);
  for (const EvState st :
       {EvState::kGood, EvState::kSkip, EvState::kAssumedBad, EvState::kDenied}) {
    size_t n = 0;
    for (size_t i = 0; i < evs.size(); ++i) {
      const EvSet::Slot& slot = evs.slot(static_cast<uint16_t>(i));
      n += slot.active && slot.state == st ? 1 : 0;
    }
    w.gauge("mrc_qp_active_evs", "EVs in rotation, by state.", with(l, "state", to_string(st)),
            static_cast<double>(n));
  }
}

bool ev_has_activity(const EvSet::Slot& slot, const EvStats& s) {
  return s.packets > 0 || s.probes_sent > 0 || s.state_changes > 0 || slot.state != EvState::kGood;
}

void render_ev(MetricsWriter& w, const EvSet::Slot& slot, const EvStats& s,
               const MetricLabels& qp_labels) {
  const MetricLabels l = with(with(qp_labels, "plane", std::to_string(slot.plane.value)), "ev",
                              std::to_string(slot.ev.value));
  w.counter("mrc_ev_data_packets_sent_total", "Data packets sent on this EV.", l, s.packets);
  w.counter("mrc_ev_data_sent_bytes_total", "Payload bytes sent on this EV.", l, s.bytes);
  w.counter("mrc_ev_losses_total", "Losses charged to this EV.", l, s.losses);
  w.counter("mrc_ev_ecn_marks_total", "ECN marks echoed for this EV.", l, s.ecn_marks);
  w.counter("mrc_ev_trims_total", "Trims reported for this EV.", l, s.trims);
  w.counter("mrc_ev_probes_sent_total", "Background probes sent on this EV.", l, s.probes_sent);
  w.counter("mrc_ev_probes_answered_total", "Background probes answered on this EV.", l,
            s.probes_answered);
  w.counter("mrc_ev_state_changes_total", "State changes of this EV.", l, s.state_changes);
  w.gauge("mrc_ev_active", "1 if the EV is in rotation, 0 if it is a backup.", l,
          slot.active ? 1 : 0);
  for (const EvState st : {EvState::kGood, EvState::kSkip, EvState::kAssumedBad, EvState::kDenied})
    w.gauge("mrc_ev_state", "EV state: 1 for the current state, 0 for the others.",
            with(l, "state", to_string(st)), slot.state == st ? 1 : 0);
}

void render_qp(MetricsWriter& w, QueuePair& qp, const MetricsOptions& o) {
  const MetricLabels l = {{"qpn", std::to_string(qp.qpn().value)}};
  const QpStats s = qp.stats();
  render_qp_state(w, qp, l);
  render_qp_traffic(w, s, l);
  render_qp_reasons(w, s, l);
  render_qp_gauges(w, s, l);
  for (int p = 0; p < qp.planes(); ++p)
    w.gauge("mrc_qp_plane_usable", "1 if both ends' ports on the plane are up.",
            with(l, "plane", std::to_string(p)), (qp.usable_planes() >> p) & 1);
  const EvSet* evs = qp.evs();
  if (evs == nullptr) return;
  render_ev_transitions(w, *evs, l);
  for (size_t i = 0; i < evs->size(); ++i) {
    const EvSet::Slot& slot = evs->slot(static_cast<uint16_t>(i));
    const EvStats stats = evs->stats(static_cast<uint16_t>(i));
    if (o.all_evs || ev_has_activity(slot, stats)) render_ev(w, slot, stats, l);
  }
}

void render_engine_planes(MetricsWriter& w, Endpoint& e) {
  std::vector<PlaneStats> sum(e.planes());
  e.for_each_qp([&](QueuePair& qp) {
    const QpStats s = qp.stats();
    for (int p = 0; p < e.planes(); ++p) {
      sum[p].packets_sent += s.planes[p].packets_sent;
      sum[p].bytes_sent += s.planes[p].bytes_sent;
      sum[p].packets_received += s.planes[p].packets_received;
      sum[p].bytes_received += s.planes[p].bytes_received;
      sum[p].retransmits += s.planes[p].retransmits;
    }
  });
  for (int p = 0; p < e.planes(); ++p) {
    const MetricLabels l = {{"plane", std::to_string(p)}};
    w.gauge("mrc_plane_up", "1 if the local port on the plane is up.", l,
            e.port_up(PlaneId(static_cast<uint8_t>(p))) ? 1 : 0);
    w.counter("mrc_plane_data_packets_sent_total",
              "Data packets sent on the plane, all queue pairs.", l, sum[p].packets_sent);
    w.counter("mrc_plane_data_sent_bytes_total",
              "Payload bytes sent on the plane, all queue pairs.", l, sum[p].bytes_sent);
    w.counter("mrc_plane_retransmits_total", "Retransmissions sent on the plane, all queue pairs.",
              l, sum[p].retransmits);
    w.counter("mrc_plane_data_packets_received_total",
              "Data packets placed from the plane, all queue pairs.", l, sum[p].packets_received);
    w.counter("mrc_plane_placed_bytes_total",
              "Payload bytes placed from the plane, all queue pairs.", l, sum[p].bytes_received);
  }
}

void render_udp_planes(MetricsWriter& w, const io::UdpHost& host) {
  for (int p = 0; p < host.planes(); ++p) {
    const MetricLabels l = {{"plane", std::to_string(p)}};
    const mrc::UdpPlaneStats& s = host.plane_stats(p);
    w.counter("mrc_plane_udp_packets_sent_total", "UDP datagrams sent on the plane.", l,
              s.packets_sent);
    w.counter("mrc_plane_udp_sent_bytes_total", "UDP payload bytes sent on the plane.", l,
              s.bytes_sent);
    w.counter("mrc_plane_udp_packets_received_total", "UDP datagrams received on the plane.", l,
              s.packets_received);
    w.counter("mrc_plane_udp_received_bytes_total", "UDP payload bytes received on the plane.", l,
              s.bytes_received);
    w.counter("mrc_plane_udp_send_errors_total",
              "Datagrams the socket refused to send (lost; the engine recovers).", l,
              s.send_errors);
    w.counter("mrc_plane_udp_send_calls_total",
              "System calls that sent datagrams (one per GSO batch or sendmmsg).", l, s.send_calls);
    w.counter("mrc_plane_udp_receive_calls_total", "recvmmsg calls that returned datagrams.", l,
              s.receive_calls);
    w.counter("mrc_plane_impairment_drops_total",
              "Datagrams dropped on purpose by the impairment layer.", l, s.impairment_drops);
    w.counter("mrc_plane_xdp_receive_refused_total",
              "xdp backend: frames refused on receive (bad RoCEv2 ICRC, malformed headers).", l,
              s.receive_refused);
    w.counter("mrc_plane_xdp_unresolved_neighbour_total",
              "xdp backend: datagrams not sent because the next hop's MAC was not known yet.", l,
              s.unresolved_neighbour);
  }
}

}  // namespace

namespace {

void render_engine(MetricsWriter& w, Endpoint& endpoint, const io::UdpHost* host,
                   const MetricsOptions& options) {
  render_endpoint(w, endpoint);
  render_engine_planes(w, endpoint);
  if (host != nullptr) render_udp_planes(w, *host);
  endpoint.for_each_qp([&](QueuePair& qp) { render_qp(w, qp, options); });
}

}  // namespace

std::string render_metrics(Endpoint& endpoint, const io::UdpHost* host,
                           const MetricsOptions& options) {
  MetricsWriter w(options.labels);
  render_engine(w, endpoint, host, options);
  return w.text();
}

std::string render_metrics(std::span<const MetricsSource> sources, const MetricsOptions& options) {
  MetricsWriter w(options.labels);
  for (size_t i = 0; i < sources.size(); ++i) {
    MetricLabels base = options.labels;
    base.emplace_back("thread", std::to_string(i));
    w.set_base(std::move(base));
    render_engine(w, *sources[i].endpoint, sources[i].host, options);
  }
  return w.text();
}

}  // namespace mrc::host
