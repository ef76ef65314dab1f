// FI_MRC_STALL_REPORT_MS: what an endpoint waits for when nothing has completed for a while.
//
// An application whose operations stop completing (an MPI rank waiting in a collective) sees
// only that it waits. The provider knows more: which receives are posted and for what, which
// messages arrived that no receive took, and how far each link got (credits, queued and
// unacknowledged sends, rendezvous under way, its queue pair's state and counters). With the
// setting on, the progress thread watches each endpoint: when it has operations outstanding
// and none of them completed for the given time, that state goes to stderr once, and again only
// after the endpoint has completed something since. The watch counts completions (a counter
// the completion paths bump), so the datapath reads no clock for it.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "fabric/provider.h"

namespace mrc::fabric {
namespace {

constexpr size_t kListed = 8;  // receives and unexpected messages listed per endpoint

std::string source_text(uint64_t source) {
  return source == kAnySource ? "any" : std::to_string(source);
}

void report_matcher(Endpoint& ep) {
  size_t shown = 0;
  std::fprintf(stderr, "  posted receives: %zu (outstanding %zu)\n", ep.matcher.posted(),
               ep.rx_outstanding);
  ep.matcher.for_each_posted([&](const PostedRecv& r) {
    if (shown++ >= kListed) return;
    std::fprintf(stderr, "    %s from %s tag 0x%016" PRIx64 " ignore 0x%016" PRIx64 ", %zu bytes\n",
                 r.tagged ? "tagged" : "untagged", source_text(r.source).c_str(), r.tag, r.ignore,
                 r.buffer.bytes);
  });
  std::fprintf(stderr, "  unexpected messages: %zu, %" PRIu64 " bytes\n",
               ep.matcher.unexpected().size(), ep.matcher.unexpected_bytes());
  shown = 0;
  for (const Unexpected& u : ep.matcher.unexpected()) {
    if (shown++ >= kListed) break;
    std::fprintf(stderr, "    %s from %s tag 0x%016" PRIx64 ", %" PRIu64 " bytes%s%s%s%s\n",
                 u.arrival.tagged ? "tagged" : "untagged", source_text(u.arrival.source).c_str(),
                 u.arrival.tag, u.bytes(), u.complete ? "" : ", incomplete",
                 u.rendezvous ? ", rendezvous" : "", u.claimed ? ", claimed" : "",
                 u.waiting ? ", a receive waits for it" : "");
  }
}

std::string qp_text(const Qp* qp) {
  if (qp == nullptr) return "no queue pair";
  const QpStats s = qp->stats();
  char text[256];
  std::snprintf(text, sizeof text,
                "qp %u %s: data packets sent %" PRIu64 " received %" PRIu64 ", retransmits %" PRIu64
                ", timeouts %" PRIu64,
                qp->qpn(), to_string(qp->state()), s.data_packets_sent, s.data_packets_received,
                s.retransmits, s.timeouts);
  return text;
}

const char* state_text(TxLink::State s) {
  switch (s) {
    case TxLink::State::kConnecting:
      return "connecting";
    case TxLink::State::kReady:
      return "ready";
    case TxLink::State::kFailed:
      return "failed";
  }
  return "?";
}

void report_links(Endpoint& ep) {
  for (auto& [key, l] : ep.tx_links) {
    size_t awaiting = 0;
    for (const auto& op : l->awaiting_cts) awaiting += op != nullptr ? 1 : 0;
    std::fprintf(stderr,
                 "  to %s: %s, credits %u of %u, queued %zu, fragments unacknowledged %zu, "
                 "rendezvous awaiting CTS %zu, FINs %zu, RMA %zu; %s%s%s\n",
                 to_string(l->peer).c_str(), state_text(l->state), l->credits, l->slots,
                 l->queue.size(), l->in_flight.size(), awaiting, l->fins.size(),
                 l->rma_in_flight.size(), qp_text(l->qp).c_str(), l->failure.empty() ? "" : "; ",
                 l->failure.c_str());
  }
  for (const auto& l : ep.rx_links) {
    size_t pending = 0;
    for (const auto& p : l->pending) pending += p.has_value() ? 1 : 0;
    std::fprintf(stderr,
                 "  from %s (fi_addr %s): %s, slots arrived %u, taken not credited %u, credit "
                 "writes %u, %s, rendezvous pending %zu%s; %s\n",
                 to_string(l->peer).c_str(), source_text(l->known_source).c_str(),
                 l->linked ? "linked" : "accepting", l->arrived, l->freed, l->credit_writes,
                 l->in_message ? "in a message" : "between messages", pending,
                 l->broken ? ", dropped" : "", qp_text(l->qp).c_str());
  }
}

void report(Endpoint& ep, int64_t stalled_ms) {
  std::fprintf(stderr,
               "mrc-fi: stall report, endpoint %s: %zu sends and %zu receives outstanding, none "
               "completed for %" PRId64 " ms\n",
               to_string(ep.name).c_str(), ep.tx_outstanding, ep.rx_outstanding, stalled_ms);
  report_matcher(ep);
  report_links(ep);
  std::fflush(stderr);
}

}  // namespace

void report_stalls(Domain& d) {
  if (d.config.stall_report_ms <= 0) return;
  const int64_t now = now_ns();
  for (Endpoint* ep : d.endpoints) {
    EndpointWatch& w = ep->watch;
    // Measured from the last look that saw a completion or nothing outstanding (or the first).
    if (ep->completions != w.completions_seen || ep->tx_outstanding + ep->rx_outstanding == 0 ||
        w.since_ns == 0) {
      w.completions_seen = ep->completions;
      w.since_ns = now;
      w.reported = false;
      continue;
    }
    const int64_t stalled_ms = (now - w.since_ns) / 1000000;
    if (w.reported || stalled_ms < d.config.stall_report_ms) continue;
    w.reported = true;
    report(*ep, stalled_ms);
  }
}

}  // namespace mrc::fabric
