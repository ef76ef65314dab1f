// Device groups (host/host.h) and the native API over several engine threads
// (ContextOptions::threads): each shard has its own ports, regions and protection domains
// have the same keys in every shard, QPNs are unique across shards, QPs are placed in turn;
// two contexts of 2 and 3 threads move verified data over 6 QPs whose completions all reach
// one CQ per side, through its eventfd; bad thread counts and ports say what to change.
//
// Ports: UDP 6100-6199 and EV source ports 41000-47499 and 48000-49499 (no other test uses them).
// (43900-44187: ApiThreads.ACqWithNotificationOffIsSignalledOnlyWhenTurnedOn.)
#include "host/host.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <cstring>
#include <set>

#include "loopback_device.h"
#include "mrc/mrc.hpp"

namespace mrc::host {
namespace {

using io::loopback_config;
using mrc::Backend;

TEST(Host, EachShardHasItsOwnPorts) {
  auto group = Host::open(loopback_config(6100, 41000), 3);
  ASSERT_TRUE(group.ok()) << group.error().message;
  Host& g = *group.value();
  ASSERT_EQ(g.size(), 3u);
  for (uint32_t s = 0; s < 3; ++s) {
    EXPECT_EQ(g.shard(s).config().planes[0].port, 6100 + s);
    EXPECT_EQ(g.shard(s).config().planes[1].port, 6100 + s);
    QpConfig c;
    g.shard(s).configure(c);
    EXPECT_EQ(c.ev_port_base, 41000 + s * ev_source_ports(2));
  }
}

TEST(Host, RegionsHaveTheSameKeysInEveryShard) {
  auto group = Host::open(loopback_config(6103, 42000), 3);
  ASSERT_TRUE(group.ok()) << group.error().message;
  Host& g = *group.value();
  const uint32_t pd = g.alloc_pd();
  std::vector<uint8_t> a(4096), b(8192);
  const auto ra = g.register_region(pd, a.data(), a.size(), kAccessRemoteWrite);
  const auto rb = g.register_region(pd, b.data(), b.size(), kAccessRemoteWrite);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_NE(ra.value().rkey, rb.value().rkey);
  for (uint32_t s = 0; s < 3; ++s) {
    MemoryRegionTable& table = g.shard(s).endpoint().memory();
    EXPECT_TRUE(table.pd_valid(pd));
    EXPECT_TRUE(table.lookup_remote(rb.value().rkey, pd, rb.value().address + 100, 100).ok())
        << "shard " << s;
  }
  ASSERT_TRUE(g.deregister(rb.value().lkey).ok());
  for (uint32_t s = 0; s < 3; ++s)
    EXPECT_FALSE(g.shard(s)
                     .endpoint()
                     .memory()
                     .lookup_remote(rb.value().rkey, pd, rb.value().address, 1)
                     .ok());
  EXPECT_FALSE(g.deregister(rb.value().lkey).ok());  // already gone: said, not ignored
  // A region registered in one shard alone would give the next one different keys: refused
  // everywhere, and the shards stay in step.
  (void)g.shard(1).endpoint().memory().register_region(pd, a.data(), a.size(), kAccessRemoteWrite);
  const auto skewed = g.register_region(pd, b.data(), b.size(), kAccessRemoteWrite);
  ASSERT_FALSE(skewed.ok());
  EXPECT_NE(skewed.error().message.find("other keys"), std::string::npos) << skewed.error().message;
  EXPECT_EQ(g.shard(0).endpoint().memory().regions_in_use(), 1u);
}

TEST(Host, QpnsAreUniqueAcrossShardsAndQpsArePlacedInTurn) {
  for (bool unpredictable : {false, true}) {
    DeviceConfig c = loopback_config(6106, 43000);
    c.unpredictable_ids = unpredictable;  // false: every shard numbers its QPs 0, 1, ...
    auto group = Host::open(c, 4);
    ASSERT_TRUE(group.ok()) << group.error().message;
    Host& g = *group.value();
    const uint32_t pd = g.alloc_pd();
    std::set<uint32_t> qpns;
    std::vector<uint32_t> placed;
    for (int i = 0; i < 12; ++i) {
      const uint32_t s = g.place_qp();
      placed.push_back(s);
      QpConfig qc;
      g.shard(s).configure(qc);
      CompletionQueue* cq = g.shard(s).create_cq(16);
      auto qp = g.shard(s).endpoint().create_qp(qc, pd, cq, cq);
      ASSERT_TRUE(qp.ok());
      qpns.insert(qp.value()->qpn().value);
    }
    EXPECT_EQ(qpns.size(), 12u) << "unpredictable_ids " << unpredictable;
    EXPECT_EQ(placed, (std::vector<uint32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  }
}

TEST(Host, BadThreadCountsAndPortsSayWhatToChange) {
  auto none = Host::open(loopback_config(6110, 44200), 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("1 to 16"), std::string::npos) << none.error().message;
  EXPECT_FALSE(Host::open(loopback_config(6110, 44200), kMaxDeviceThreads + 1).ok());
  DeviceConfig high = loopback_config(65534, 44200);
  high.port_setting = "--port";
  auto past = Host::open(high, 3);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("thread 2"), std::string::npos) << past.error().message;
  EXPECT_NE(past.error().message.find("--port"), std::string::npos) << past.error().message;
  auto taken = Host::open(loopback_config(6112, 45100), 1);  // holds 6112
  ASSERT_TRUE(taken.ok());
  auto clash = Host::open(loopback_config(6111, 45400), 2);  // its thread 1 wants 6112
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("thread 1 of 2"), std::string::npos)
      << clash.error().message;
  EXPECT_NE(clash.error().message.find("6112"), std::string::npos) << clash.error().message;
}

}  // namespace
}  // namespace mrc::host

namespace mrc {
namespace {

ContextOptions threaded(uint16_t port, uint16_t ev_port_base, uint32_t threads,
                        bool caller_progress) {
  ContextOptions o;
  o.planes = {"127.0.0.1", "127.0.0.2"};
  o.port = port;
  o.ev_port_base = ev_port_base;
  o.threads = threads;
  o.caller_progress = caller_progress;
  return o;
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}
bool readable(int fd) {
  return wait_readable(fd, 0);
}

// 6 QPs between a context of 2 threads and one of 3 (so QP i sits in shard i % 2 on one side
// and i % 3 on the other), each writing its own 256 KiB with an immediate; every completion
// arrives at the one CQ of each side, the bytes are equal, and each CQ's eventfd is readable
// exactly while it holds completions.
// Each caller gives its own ports (ctest runs tests in parallel): UDP port .. port + 12, EV
// source ports ev_port_base .. ev_port_base + 1464.
void expect_six_qps_move_verified_data(bool caller_progress, uint16_t port, uint16_t ev_port_base) {
  auto a = Context::open(threaded(port, ev_port_base, 2, caller_progress));
  auto b = Context::open(threaded(port + 10, ev_port_base + 600, 3, false));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  Context& ca = *a.value();
  Context& cb = *b.value();
  constexpr size_t kQps = 6, kBytes = 256 << 10;
  std::vector<uint8_t> src(kQps * kBytes), dst(kQps * kBytes, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + i / 4099);
  const uint32_t pa = ca.alloc_pd(), pb = cb.alloc_pd();
  const auto src_mr = ca.register_memory(pa, src.data(), src.size(), kAccessLocalWrite).value();
  const auto dst_mr = cb.register_memory(pb, dst.data(), dst.size(), kAccessRemoteWrite).value();
  Cq* cqa = ca.create_cq(64);
  Cq* cqb = cb.create_cq(64);
  std::vector<Qp*> qa, qb;
  std::set<std::string> ports_b;
  for (size_t i = 0; i < kQps; ++i) {
    qa.push_back(ca.create_qp(pa, cqa, cqa).value());
    qb.push_back(cb.create_qp(pb, cqb, cqb).value());
    ports_b.insert(qb.back()->local_info().planes[0]);
  }
  EXPECT_EQ(ports_b.size(), 3u);  // b's QPs listen at its 3 threads' ports
  for (size_t i = 0; i < kQps; ++i) {
    ASSERT_TRUE(
        qa[i]->connect(ConnectionInfo::parse(qb[i]->local_info().to_string()).value()).ok());
    ASSERT_TRUE(
        qb[i]->connect(ConnectionInfo::parse(qa[i]->local_info().to_string()).value()).ok());
    ASSERT_TRUE(qb[i]->post_recv(100 + i).ok());
  }
  EXPECT_FALSE(readable(cqb->event_fd()));
  for (size_t i = 0; i < kQps; ++i) {
    const Sge sge{src_mr.address + i * kBytes, static_cast<uint32_t>(kBytes), src_mr.lkey};
    ASSERT_TRUE(qa[i]
                    ->post_write_imm(i, std::span(&sge, 1), dst_mr.address + i * kBytes,
                                     dst_mr.rkey, static_cast<uint32_t>(0xA000 + i))
                    .ok());
  }
  std::set<uint64_t> sent, received;
  Completion wc[8];
  for (int round = 0; round < 400 && (sent.size() < kQps || received.size() < kQps); ++round) {
    for (size_t k = 0, n = cqa->wait(wc, 10); k < n; ++k) {
      EXPECT_EQ(wc[k].status, WcStatus::kSuccess);
      sent.insert(wc[k].wr_id);
    }
    if (received.size() < kQps && wait_readable(cqb->event_fd(), 10)) {
      for (size_t k = 0, n = cqb->poll(wc); k < n; ++k) {
        EXPECT_EQ(wc[k].immediate, 0xA000 + (wc[k].wr_id - 100));
        EXPECT_EQ(wc[k].byte_len, kBytes);
        received.insert(wc[k].wr_id);
      }
    }
  }
  EXPECT_EQ(sent.size(), kQps);
  EXPECT_EQ(received.size(), kQps);
  EXPECT_FALSE(readable(cqb->event_fd()));  // all taken: not readable any more
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), src.size()));
  uint64_t placed = 0;
  for (Qp* q : qb) placed += q->stats().data_bytes_placed;
  EXPECT_EQ(placed, src.size());
}

TEST(ApiThreads, SixQpsOverTwoAndThreeThreadsMoveVerifiedData) {
  expect_six_qps_move_verified_data(false, 6120, 46000);
}

TEST(ApiThreads, CallerDrivenProgressDrivesShardZeroAndTheThreadsTheRest) {
  expect_six_qps_move_verified_data(true, 6140, 48000);
}

// Notification off: completions arrive (the progress thread places the data) without the CQ's
// descriptor becoming readable; turned on, it is readable at once; polled empty, it is not.
TEST(ApiThreads, ACqWithNotificationOffIsSignalledOnlyWhenTurnedOn) {
  auto c = Context::open(threaded(6160, 43900, 1, false));
  ASSERT_TRUE(c.ok()) << c.error().message;
  Context& ctx = *c.value();
  std::vector<uint8_t> src(64 << 10, 0x5A), dst(64 << 10, 0);
  const uint32_t pd = ctx.alloc_pd();
  const auto src_mr = ctx.register_memory(pd, src.data(), src.size(), kAccessLocalWrite).value();
  const auto dst_mr = ctx.register_memory(pd, dst.data(), dst.size(), kAccessRemoteWrite).value();
  Cq* tx = ctx.create_cq(16);
  Cq* rx = ctx.create_cq(16);
  rx->set_notify(false);
  Qp* a = ctx.create_qp(pd, tx, tx).value();
  Qp* b = ctx.create_qp(pd, rx, rx).value();
  ASSERT_TRUE(a->connect(ConnectionInfo::parse(b->local_info().to_string()).value()).ok());
  ASSERT_TRUE(b->connect(ConnectionInfo::parse(a->local_info().to_string()).value()).ok());
  ASSERT_TRUE(b->post_recv(7).ok());
  const Sge sge{src_mr.address, static_cast<uint32_t>(src.size()), src_mr.lkey};
  ASSERT_TRUE(a->post_write_imm(1, std::span(&sge, 1), dst_mr.address, dst_mr.rkey, 0xBEEF).ok());
  Completion wc[4];
  size_t sent = 0;
  for (int i = 0; i < 500 && sent == 0; ++i) sent = tx->wait(wc, 10);
  ASSERT_EQ(sent, 1u);  // acknowledged, so the receiver has the write and its completion
  EXPECT_EQ(b->stats().data_bytes_placed, src.size());
  EXPECT_FALSE(wait_readable(rx->event_fd(), 50));
  rx->set_notify(true);
  EXPECT_TRUE(readable(rx->event_fd()));
  ASSERT_EQ(rx->poll(wc), 1u);
  EXPECT_EQ(wc[0].immediate, 0xBEEFu);
  EXPECT_FALSE(readable(rx->event_fd()));
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace mrc
