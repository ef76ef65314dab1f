// The endpoint's QP schedule: transmit opportunities go round robin over exactly the QPs that
// have something to send, and the endpoint's deadline is always the earliest of its QPs'.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/endpoint.h"
#include "pair.h"

namespace mrc {
namespace {

constexpr int kQps = 9;

struct Host {
  std::unique_ptr<Endpoint> endpoint;
  std::vector<QueuePair*> qps;
  std::vector<uint8_t> memory = std::vector<uint8_t>(1 << 17, 7);
  MemoryRegionInfo mr;
};

// Endpoints 0 and 1 with kQps QPs each, QP i of one connected to QP i of the other; TxMeta::peer
// of QP i is i, so a transmitted packet names the QP that produced it.
std::vector<Host> connected_hosts(int qps = kQps) {
  std::vector<Host> hosts(2);
  for (int h = 0; h < 2; ++h) {
    Host& host = hosts[h];
    host.endpoint = std::make_unique<Endpoint>(EndpointConfig{1, 64, 64, 1u + h});
    const uint32_t pd = host.endpoint->memory().alloc_pd();
    CompletionQueue* cq = host.endpoint->create_cq(4096);
    const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
    host.mr = host.endpoint->memory()
                  .register_region(pd, host.memory.data(), host.memory.size(), access)
                  .value();
    for (int i = 0; i < qps; ++i)
      host.qps.push_back(host.endpoint->create_qp(test::small_config(), pd, cq, cq).value());
  }
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < qps; ++i) {
      QueuePair* qp = hosts[h].qps[i];
      (void)qp->to_init();
      const Qpn peer_qp = hosts[1 - h].qps[i]->qpn();
      (void)qp->to_rtr(RtrAttributes{peer_qp, Psn(100), static_cast<uint32_t>(i)});
      (void)qp->to_rts(RtsAttributes{Psn(100)});
    }
  }
  return hosts;
}

void write(Host& from, const Host& to, int qp, uint32_t length) {
  Sge sge{from.mr.address, length, from.mr.lkey};
  SendWr wr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = to.mr.address;
  wr.rkey = to.mr.rkey;
  ASSERT_TRUE(from.qps[qp]->post_send(wr).ok());
}

bool scanned_wants_to_send(Endpoint& endpoint, Instant now) {
  bool wants = false;
  endpoint.for_each_qp([&](QueuePair& qp) { wants = wants || qp.wants_to_send(now); });
  return wants;
}

Instant scanned_deadline(Endpoint& endpoint) {
  Instant deadline = Instant::never();
  endpoint.for_each_qp([&](QueuePair& qp) { deadline = std::min(deadline, qp.next_deadline()); });
  return deadline;
}

// Few QPs and many give the same order.
class QpScheduleRoundRobin : public ::testing::TestWithParam<int> {};

TEST_P(QpScheduleRoundRobin, OverTheQpsWithWork) {
  std::vector<Host> hosts = connected_hosts(GetParam());
  write(hosts[0], hosts[1], 1, 32 * 1024);
  write(hosts[0], hosts[1], 3, 32 * 1024);
  std::vector<uint32_t> order;
  std::vector<uint8_t> buffer(wire::kMaxDatagramBytes);
  for (int k = 0; k < 6; ++k) {
    TxMeta meta;
    ASSERT_GT(hosts[0].endpoint->poll_transmit(Instant{0}, PlaneId(0), buffer, meta), 0u);
    order.push_back(meta.peer);
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{1, 3, 1, 3, 1, 3}));
  ASSERT_TRUE(hosts[0].endpoint->destroy_qp(hosts[0].qps[1]->qpn()).ok());
  TxMeta meta;
  ASSERT_GT(hosts[0].endpoint->poll_transmit(Instant{0}, PlaneId(0), buffer, meta), 0u);
  EXPECT_EQ(meta.peer, 3u);
  EXPECT_EQ(hosts[0].endpoint->next_deadline(), scanned_deadline(*hosts[0].endpoint));
}

INSTANTIATE_TEST_SUITE_P(QpCounts, QpScheduleRoundRobin, ::testing::Values(4, kQps));

// Both directions of every QP, ideal 2 us links, with a check after every step that the
// endpoint's deadline is the earliest QP deadline and that it wants to send exactly when one
// of its QPs does (the simulator stops polling a host's planes when it does not).
TEST(QpSchedule, DeadlineIsTheEarliestOfAllQps) {
  std::vector<Host> hosts = connected_hosts();
  for (int i = 0; i < kQps; ++i) {
    write(hosts[0], hosts[1], i, 8 * 1024 * (i + 1));
    if (i % 2 == 0) write(hosts[1], hosts[0], i, 16 * 1024);
  }
  std::multimap<Instant, std::pair<int, std::vector<uint8_t>>> wire;
  std::vector<uint8_t> buffer(wire::kMaxDatagramBytes);
  Instant now{0};
  for (int step = 0; step < 100000; ++step) {
    for (int h = 0; h < 2; ++h) {
      TxMeta meta;
      const size_t n = hosts[h].endpoint->poll_transmit(now, PlaneId(0), buffer, meta);
      if (n == 0) continue;
      std::vector<uint8_t> bytes(buffer.begin(), buffer.begin() + static_cast<ptrdiff_t>(n));
      wire.emplace(now + Duration{2000}, std::pair{1 - h, std::move(bytes)});
    }
    for (auto& host : hosts) {
      ASSERT_EQ(host.endpoint->next_deadline(), scanned_deadline(*host.endpoint));
      ASSERT_EQ(host.endpoint->wants_to_send(now), scanned_wants_to_send(*host.endpoint, now))
          << "step " << step;
    }
    Instant next = now + Duration{100};  // one packet per 100 ns per port
    if (!wire.empty() && wire.begin()->first < next) next = wire.begin()->first;
    now = next;
    while (!wire.empty() && wire.begin()->first <= now) {
      auto& [to, bytes] = wire.begin()->second;
      hosts[to].endpoint->handle_datagram(now, bytes, RxMeta{PlaneId(0), Ev(1), false, false, 0});
      wire.erase(wire.begin());
    }
    for (auto& host : hosts)
      if (host.endpoint->next_deadline() <= now) host.endpoint->handle_timeout(now);
    bool busy = !wire.empty();
    for (auto& host : hosts) busy |= host.endpoint->wants_to_send(now);
    if (!busy && now > Instant{2'000'000}) break;
  }
  for (int i = 0; i < kQps; ++i) {
    EXPECT_EQ(hosts[1].qps[i]->stats().data_bytes_placed, 8u * 1024 * (i + 1));
    EXPECT_EQ(hosts[0].qps[i]->stats().data_bytes_placed, i % 2 == 0 ? 16u * 1024 : 0u);
  }
}

}  // namespace
}  // namespace mrc
