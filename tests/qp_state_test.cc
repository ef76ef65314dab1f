// The queue-pair state machine and the checks on posted work requests: allowed and refused
// transitions, posting in each state, flushing on ERROR, failure when the peer vanishes, queue
// and gather-list limits, unsignaled sends, and configuration validation.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "pair.h"
#include "problem.h"

namespace mrc {
namespace {

using test::Pair;
using test::small_config;

// One endpoint and one queue pair, not connected to anything.
struct Solo {
  explicit Solo(const QpConfig& config = small_config()) {
    pd = endpoint.memory().alloc_pd();
    send_cq = endpoint.create_cq(64);
    recv_cq = endpoint.create_cq(64);
    qp = endpoint.create_qp(config, pd, send_cq, recv_cq).value();
    buffer.assign(1 << 16, 0x11);
    mr = endpoint.memory()
             .register_region(pd, buffer.data(), buffer.size(),
                              kAccessLocalWrite | kAccessRemoteWrite)
             .value();
  }
  void to_rts() {
    ASSERT_TRUE(qp->to_init().ok());
    ASSERT_TRUE(qp->to_rtr(RtrAttributes{Qpn(0x777), Psn(0)}).ok());
    ASSERT_TRUE(qp->to_rts(RtsAttributes{Psn(0)}).ok());
  }
  SendWr write(const Sge* sges, uint32_t count, uint64_t wr_id = 1) const {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = sges;
    wr.num_sge = count;
    wr.remote_addr = 0x10000;
    wr.rkey = 0x101;
    return wr;
  }
  Endpoint endpoint{EndpointConfig{1, 16, 16, 1}};
  uint32_t pd = 0;
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  QueuePair* qp = nullptr;
  std::vector<uint8_t> buffer;
  MemoryRegionInfo mr;
};

// Takes both QPs of a pair back to RESET and connects them again, calling `in_init` while both
// are in INIT. A sends from PSN 5000 and B expects it; B sends from 9000.
void reconnect(Pair& pair, const std::function<void()>& in_init) {
  for (auto& s : pair.side) {
    s.qp->to_reset();
    ASSERT_TRUE(s.qp->to_init().ok());
  }
  in_init();
  QueuePair* a = pair.side[0].qp;
  QueuePair* b = pair.side[1].qp;
  ASSERT_TRUE(a->to_rtr(RtrAttributes{b->qpn(), Psn(9000), 1}).ok());
  ASSERT_TRUE(b->to_rtr(RtrAttributes{a->qpn(), Psn(5000), 0}).ok());
  ASSERT_TRUE(a->to_rts(RtsAttributes{Psn(5000)}).ok());
  ASSERT_TRUE(b->to_rts(RtsAttributes{Psn(9000)}).ok());
}

std::vector<WcStatus> statuses(const std::vector<Completion>& done) {
  std::vector<WcStatus> out;
  out.reserve(done.size());
  for (const Completion& c : done) out.push_back(c.status);
  return out;
}

std::vector<uint64_t> wr_ids(const std::vector<Completion>& done) {
  std::vector<uint64_t> out;
  out.reserve(done.size());
  for (const Completion& c : done) out.push_back(c.wr_id);
  return out;
}

TEST(QpState, AllowedTransitionsResetInitRtrRts) {
  Solo s;
  EXPECT_EQ(s.qp->state(), QpState::kReset);
  ASSERT_TRUE(s.qp->to_init().ok());
  EXPECT_EQ(s.qp->state(), QpState::kInit);
  ASSERT_TRUE(s.qp->to_rtr(RtrAttributes{Qpn(0x777), Psn(10)}).ok());
  EXPECT_EQ(s.qp->state(), QpState::kRtr);
  ASSERT_TRUE(s.qp->to_rts(RtsAttributes{Psn(20)}).ok());
  EXPECT_EQ(s.qp->state(), QpState::kRts);
  s.qp->to_error();
  EXPECT_EQ(s.qp->state(), QpState::kError);
  s.qp->to_reset();
  EXPECT_EQ(s.qp->state(), QpState::kReset);
  ASSERT_TRUE(s.qp->to_init().ok());  // and round again
}

TEST(QpState, RefusedTransitionsReturnBadTransition) {
  Solo s;
  const RtrAttributes rtr{Qpn(0x777), Psn(0)};
  const RtsAttributes rts{Psn(0)};
  EXPECT_EQ(s.qp->to_rts(rts).error(), QpError::kBadTransition);  // RESET -> RTS
  EXPECT_EQ(s.qp->to_rtr(rtr).error(), QpError::kBadTransition);  // RESET -> RTR
  EXPECT_EQ(s.qp->state(), QpState::kReset);
  ASSERT_TRUE(s.qp->to_init().ok());
  EXPECT_EQ(s.qp->to_init().error(), QpError::kBadTransition);    // INIT -> INIT
  EXPECT_EQ(s.qp->to_rts(rts).error(), QpError::kBadTransition);  // INIT -> RTS
  EXPECT_EQ(s.qp->state(), QpState::kInit);
  ASSERT_TRUE(s.qp->to_rtr(rtr).ok());
  EXPECT_EQ(s.qp->to_rtr(rtr).error(), QpError::kBadTransition);  // RTR -> RTR
  EXPECT_EQ(s.qp->to_init().error(), QpError::kBadTransition);    // RTR -> INIT
  ASSERT_TRUE(s.qp->to_rts(rts).ok());
  EXPECT_EQ(s.qp->to_rtr(rtr).error(), QpError::kBadTransition);  // RTS -> RTR
  EXPECT_EQ(s.qp->to_init().error(), QpError::kBadTransition);    // RTS -> INIT
  EXPECT_EQ(s.qp->to_rts(rts).error(), QpError::kBadTransition);  // RTS -> RTS
  EXPECT_EQ(s.qp->state(), QpState::kRts);
  s.qp->to_error();
  EXPECT_EQ(s.qp->to_init().error(), QpError::kBadTransition);    // ERROR -> INIT
  EXPECT_EQ(s.qp->to_rtr(rtr).error(), QpError::kBadTransition);  // ERROR -> RTR
  EXPECT_EQ(s.qp->to_rts(rts).error(), QpError::kBadTransition);  // ERROR -> RTS
  EXPECT_EQ(s.qp->state(), QpState::kError);
  // The configuration is fixed once the windows are sized.
  Solo t;
  t.to_rts();
  EXPECT_EQ(t.qp->set_config(small_config()).error(), QpError::kBadTransition);
}

TEST(QpState, PostSendBeforeRtsIsRefused) {
  Solo s;
  Sge sge{s.mr.address, 100, s.mr.lkey};
  const SendWr wr = s.write(&sge, 1);
  EXPECT_EQ(s.qp->post_send(wr).error(), PostError::kQpState);  // RESET
  ASSERT_TRUE(s.qp->to_init().ok());
  EXPECT_EQ(s.qp->post_send(wr).error(), PostError::kQpState);  // INIT
  ASSERT_TRUE(s.qp->to_rtr(RtrAttributes{Qpn(0x777), Psn(0)}).ok());
  EXPECT_EQ(s.qp->post_send(wr).error(), PostError::kQpState);  // RTR
  ASSERT_TRUE(s.qp->to_rts(RtsAttributes{Psn(0)}).ok());
  EXPECT_TRUE(s.qp->post_send(wr).ok());
  s.qp->to_error();
  EXPECT_EQ(s.qp->post_send(wr).error(), PostError::kQpState);  // ERROR
  EXPECT_EQ(s.qp->post_recv(1).error(), PostError::kQpState);
}

TEST(QpState, ReceivesPostedInInitAreHeldUntilRtr) {
  Pair pair(2, small_config(), 1 << 18);
  QueuePair* b = pair.side[1].qp;
  b->to_reset();
  EXPECT_EQ(b->post_recv(1).error(), PostError::kQpState);  // RESET
  reconnect(pair, [&] {
    ASSERT_TRUE(b->post_recv(900).ok());
    ASSERT_TRUE(b->post_recv(901).ok());
  });
  ASSERT_TRUE(pair.write(0, 0, 5000, 1, true, 0xAAA).ok());
  ASSERT_TRUE(pair.write(0, 8192, 100, 2, true, 0xBBB).ok());
  pair.run(Instant{50'000'000});
  const auto recv = pair.drain(1, true);
  ASSERT_EQ(recv.size(), 2u);
  EXPECT_EQ(wr_ids(recv), (std::vector<uint64_t>{900, 901}));
  EXPECT_EQ(recv[0].immediate, 0xAAAu);
  EXPECT_EQ(recv[1].immediate, 0xBBBu);
  EXPECT_EQ(statuses(recv), (std::vector<WcStatus>{WcStatus::kSuccess, WcStatus::kSuccess}));
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 5000));
}

TEST(QpState, ReceivesHeldInInitAreBoundedAndFlushed) {
  QpConfig config = small_config();
  config.max_recv_wr = 2;
  Solo s(config);
  ASSERT_TRUE(s.qp->to_init().ok());
  ASSERT_TRUE(s.qp->post_recv(1).ok());
  ASSERT_TRUE(s.qp->post_recv(2).ok());
  EXPECT_EQ(s.qp->post_recv(3).error(), PostError::kQueueFull);
  s.qp->to_error();
  std::vector<Completion> done(8);
  done.resize(s.recv_cq->poll(done));
  EXPECT_EQ(wr_ids(done), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(statuses(done),
            (std::vector<WcStatus>{WcStatus::kWrFlushError, WcStatus::kWrFlushError}));
}

TEST(QpState, ToErrorFlushesEverySendAndReceive) {
  Pair pair(2, small_config(), 1 << 20);
  pair.filter = [](int, std::vector<uint8_t>&, RxMeta&, const TxMeta&) { return false; };
  QueuePair* a = pair.side[0].qp;
  for (uint64_t i = 1; i <= 4; ++i) ASSERT_TRUE(pair.write(0, i * 50000, 30000, i).ok());
  ASSERT_TRUE(a->post_recv(71).ok());
  ASSERT_TRUE(a->post_recv(72).ok());
  pair.run(Instant{5'000});  // some packets are in flight (and lost), none acknowledged
  EXPECT_GT(a->stats().data_packets_sent, 0u);
  EXPECT_TRUE(pair.drain(0, false).empty());
  a->to_error();
  EXPECT_EQ(a->state(), QpState::kError);
  const auto sends = pair.drain(0, false);
  EXPECT_EQ(wr_ids(sends), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(statuses(sends), std::vector<WcStatus>(4, WcStatus::kWrFlushError));
  const auto recvs = pair.drain(0, true);
  EXPECT_EQ(wr_ids(recvs), (std::vector<uint64_t>{71, 72}));
  EXPECT_EQ(statuses(recvs), std::vector<WcStatus>(2, WcStatus::kWrFlushError));
  // Nothing more comes out of a QP in ERROR.
  TxMeta meta;
  std::vector<uint8_t> out(wire::kMaxDatagramBytes);
  EXPECT_EQ(pair.side[0].endpoint->poll_transmit(pair.now(), PlaneId(0), out, meta), 0u);
  EXPECT_TRUE(pair.side[0].endpoint->next_deadline().is_never());
}

TEST(QpState, VanishedPeerFailsTheQpWithRetryExceeded) {
  QpConfig config = small_config();
  config.timeout = 4;  // 16 us
  config.retry_linear = 2;
  config.retry_exp = 2;
  Pair pair(2, config, 1 << 20);
  pair.filter = [](int, std::vector<uint8_t>&, RxMeta&, const TxMeta&) { return false; };
  QueuePair* a = pair.side[0].qp;
  for (uint64_t i = 1; i <= 3; ++i) ASSERT_TRUE(pair.write(0, i * 10000, 9000, i).ok());
  ASSERT_TRUE(a->post_recv(55).ok());
  pair.run(Instant{1'000'000'000});
  EXPECT_EQ(a->state(), QpState::kError);
  EXPECT_GT(a->stats().timeouts, config.retry_linear + config.retry_exp - 1u);
  const auto sends = pair.drain(0, false);
  EXPECT_EQ(wr_ids(sends), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(statuses(sends),
            (std::vector<WcStatus>{WcStatus::kRetryExceeded, WcStatus::kWrFlushError,
                                   WcStatus::kWrFlushError}));
  const auto recvs = pair.drain(0, true);
  EXPECT_EQ(wr_ids(recvs), (std::vector<uint64_t>{55}));
  EXPECT_EQ(statuses(recvs), (std::vector<WcStatus>{WcStatus::kWrFlushError}));
  EXPECT_EQ(a->post_send(SendWr{}).error(), PostError::kQpState);
}

// A WRITE with a key the responder does not know: the responder NAKs each copy with "remote
// access error", the requester keeps retrying as for a lost packet, and when its retries run
// out the work request completes with kRemoteAccessError (the later ones flushed).
TEST(QpState, WrongRkeyFailsWithRemoteAccessErrorAtTheRetryLimit) {
  QpConfig config = small_config();
  config.timeout = 4;  // 16 us
  config.retry_linear = 2;
  config.retry_exp = 2;
  Pair pair(2, config, 1 << 20);
  QueuePair* a = pair.side[0].qp;
  Sge sge{pair.side[0].source_mr.address, 5000, pair.side[0].source_mr.lkey};
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = SendOpcode::kWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = pair.side[1].target_mr.address;
  wr.rkey = pair.side[1].target_mr.rkey + 1;  // same slot, another generation
  ASSERT_TRUE(a->post_send(wr).ok());
  ASSERT_TRUE(pair.write(0, 0, 3000, 2).ok());  // a good one behind it
  pair.run(Instant{1'000'000'000});
  EXPECT_EQ(a->state(), QpState::kError);
  EXPECT_GT(pair.side[1].qp->stats().access_naks_sent, 0u);
  EXPECT_GT(a->stats().access_naks_received, 0u);
  EXPECT_GT(a->stats().timeouts,
            config.retry_linear + config.retry_exp - 1u);  // not failed at once
  const auto sends = pair.drain(0, false);
  EXPECT_EQ(wr_ids(sends), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(statuses(sends),
            (std::vector<WcStatus>{WcStatus::kRemoteAccessError, WcStatus::kWrFlushError}));
}

TEST(QpState, SendQueueFull) {
  QpConfig config = small_config();
  config.max_send_wr = 4;
  Solo s(config);
  s.to_rts();
  Sge sge{s.mr.address, 100, s.mr.lkey};
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(s.qp->post_send(s.write(&sge, 1, i)).ok());
  EXPECT_EQ(s.qp->post_send(s.write(&sge, 1, 9)).error(), PostError::kQueueFull);
}

TEST(QpState, ReceiveQueueFull) {
  QpConfig config = small_config();
  config.max_recv_wr = 3;
  Solo s(config);
  s.to_rts();
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(s.qp->post_recv(i).ok());
  EXPECT_EQ(s.qp->post_recv(9).error(), PostError::kQueueFull);
}

TEST(QpState, BadWorkRequestsAreRefusedWithoutUsingASlot) {
  QpConfig config = small_config();
  config.max_sge = 2;
  config.max_send_wr = 2;
  Solo s(config);
  s.to_rts();
  const uint32_t other_pd = s.endpoint.memory().alloc_pd();
  std::vector<uint8_t> other(4096);
  const auto foreign = s.endpoint.memory()
                           .register_region(other_pd, other.data(), other.size(), kAccessLocalWrite)
                           .value();
  const Sge three[] = {
      {s.mr.address, 10, s.mr.lkey}, {s.mr.address, 10, s.mr.lkey}, {s.mr.address, 10, s.mr.lkey}};
  EXPECT_EQ(s.qp->post_send(s.write(three, 3)).error(), PostError::kTooManySge);
  const Sge bad_key{s.mr.address, 10, s.mr.lkey + 1};
  EXPECT_EQ(s.qp->post_send(s.write(&bad_key, 1)).error(), PostError::kBadLkey);
  const Sge no_key{s.mr.address, 10, 0};
  EXPECT_EQ(s.qp->post_send(s.write(&no_key, 1)).error(), PostError::kBadLkey);
  const Sge other_pd_key{foreign.address, 10, foreign.lkey};
  EXPECT_EQ(s.qp->post_send(s.write(&other_pd_key, 1)).error(), PostError::kBadLkey);
  const Sge outside{s.mr.address + s.mr.length - 5, 10, s.mr.lkey};
  EXPECT_EQ(s.qp->post_send(s.write(&outside, 1)).error(), PostError::kLocalOutOfBounds);
  const Sge two[] = {{s.mr.address, 100, s.mr.lkey}, {s.mr.address + 200, 100, s.mr.lkey}};
  SendWr wrap = s.write(two, 2);
  wrap.remote_addr = UINT64_MAX - 150;  // + 200 bytes wraps around 2^64
  EXPECT_EQ(s.qp->post_send(wrap).error(), PostError::kAddressOverflow);
  wrap.remote_addr = UINT64_MAX;
  EXPECT_EQ(s.qp->post_send(wrap).error(), PostError::kAddressOverflow);
  // None of the refusals took a send-queue slot.
  ASSERT_TRUE(s.qp->post_send(s.write(two, 2, 1)).ok());
  ASSERT_TRUE(s.qp->post_send(s.write(two, 2, 2)).ok());
  EXPECT_EQ(s.qp->post_send(s.write(two, 2, 3)).error(), PostError::kQueueFull);
}

TEST(QpState, ScatterGatherListsAreGatheredInOrder) {
  Pair pair(2, small_config(), 1 << 20);
  test::Side& a = pair.side[0];
  test::Side& b = pair.side[1];
  // Pieces that cross packet boundaries at odd places, one empty, one a single byte.
  const Sge sges[] = {{a.source_mr.address + 100, 3000, a.source_mr.lkey},
                      {a.source_mr.address + 50000, 5000, a.source_mr.lkey},
                      {a.source_mr.address + 7, 0, a.source_mr.lkey},
                      {a.source_mr.address + 9000, 1, a.source_mr.lkey},
                      {a.source_mr.address + 20000, 4095, a.source_mr.lkey},
                      {a.source_mr.address + 300000, 8192, a.source_mr.lkey}};
  std::vector<uint8_t> expected;
  for (const Sge& s : sges) {
    const uint8_t* p = a.source.data() + (s.address - a.source_mr.address);
    expected.insert(expected.end(), p, p + s.length);
  }
  SendWr wr;
  wr.wr_id = 31;
  wr.sg_list = sges;
  wr.num_sge = static_cast<uint32_t>(std::size(sges));
  wr.remote_addr = b.target_mr.address + 400000;
  wr.rkey = b.target_mr.rkey;
  ASSERT_TRUE(a.qp->post_send(wr).ok());
  pair.run(Instant{50'000'000});
  const auto done = pair.drain(0, false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(done[0].byte_len, expected.size());
  EXPECT_EQ(0, std::memcmp(b.target.data() + 400000, expected.data(), expected.size()));
  EXPECT_EQ(b.target[400000 - 1], 0);
  EXPECT_EQ(b.target[400000 + expected.size()], 0);
}

TEST(QpState, UnsignaledSendsProduceNoCompletionOnSuccess) {
  Pair pair(2, small_config(), 1 << 20);
  test::Side& a = pair.side[0];
  test::Side& b = pair.side[1];
  for (uint64_t i = 0; i < 5; ++i) {
    Sge sge{a.source_mr.address + i * 10000, 9000, a.source_mr.lkey};
    SendWr wr;
    wr.wr_id = 100 + i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = b.target_mr.address + i * 10000;
    wr.rkey = b.target_mr.rkey;
    wr.signaled = i == 2 || i == 4;
    ASSERT_TRUE(a.qp->post_send(wr).ok());
  }
  pair.run(Instant{50'000'000});
  const auto done = pair.drain(0, false);
  EXPECT_EQ(wr_ids(done), (std::vector<uint64_t>{102, 104}));
  EXPECT_EQ(statuses(done), std::vector<WcStatus>(2, WcStatus::kSuccess));
  EXPECT_EQ(a.qp->stats().work_requests_completed, 5u);
  for (uint64_t i = 0; i < 5; ++i)
    EXPECT_EQ(0, std::memcmp(a.source.data() + i * 10000, b.target.data() + i * 10000, 9000));
}

TEST(QpState, UnsignaledSendsAreStillFlushedOnError) {
  Pair pair(2, small_config(), 1 << 20);
  pair.filter = [](int, std::vector<uint8_t>&, RxMeta&, const TxMeta&) { return false; };
  test::Side& a = pair.side[0];
  Sge sge{a.source_mr.address, 9000, a.source_mr.lkey};
  SendWr wr;
  wr.wr_id = 5;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = pair.side[1].target_mr.address;
  wr.rkey = pair.side[1].target_mr.rkey;
  wr.signaled = false;
  ASSERT_TRUE(a.qp->post_send(wr).ok());
  pair.run(Instant{5'000});
  a.qp->to_error();
  const auto done = pair.drain(0, false);
  EXPECT_EQ(wr_ids(done), (std::vector<uint64_t>{5}));
  EXPECT_EQ(statuses(done), (std::vector<WcStatus>{WcStatus::kWrFlushError}));
}

// ---- configuration --------------------------------------------------------------------------

struct BadConfig {
  const char* field;
  std::function<void(QpConfig&)> mutate;
  int planes = 1;
};

TEST(QpState, ConfigValidationNamesTheField) {
  EXPECT_EQ(problem(QpConfig{}.validate(1)), "");
  EXPECT_EQ(problem(QpConfig{}.validate(4)), "");
  EXPECT_EQ(problem(small_config().validate(16)), "");
  const BadConfig cases[] = {
      {"planes", [](QpConfig&) {}, 0},
      {"planes", [](QpConfig&) {}, kMaxPlanes + 1},
      {"mtu_bytes", [](QpConfig& c) { c.mtu_bytes = 100; }},
      {"mtu_bytes", [](QpConfig& c) { c.mtu_bytes = 9001; }},
      {"max_send_wr", [](QpConfig& c) { c.max_send_wr = 0; }},
      {"max_send_wr", [](QpConfig& c) { c.max_send_wr = 70000; }},
      {"max_recv_wr", [](QpConfig& c) { c.max_recv_wr = 0; }},
      {"max_sge", [](QpConfig& c) { c.max_sge = 0; }},
      {"max_sge", [](QpConfig& c) { c.max_sge = kMaxSge + 1; }},
      {"ev_count", [](QpConfig& c) { c.ev_count = 257; }},
      {"ev_count", [](QpConfig& c) { c.ev_count = 2; }, 4},
      {"ev_count", [](QpConfig& c) { c.ev_count = 18; }, 4},  // not a multiple of planes
      {"ev_backup_per_plane", [](QpConfig& c) { c.ev_backup_per_plane = 65; }},
      {"ev_min_active", [](QpConfig& c) { c.ev_min_active = 0; }},
      {"ev_min_active", [](QpConfig& c) { c.ev_min_active = 200; }},
      {"ev_probe_interval_ns", [](QpConfig& c) { c.ev_probe_interval_ns = 10; }},
      {"ev_revive_probes", [](QpConfig& c) { c.ev_revive_probes = 0; }},
      {"mpr", [](QpConfig& c) { c.mpr = 0; }},
      {"mpr_dest", [](QpConfig& c) { c.mpr_dest = 0; }},
      {"max_wimm", [](QpConfig& c) { c.max_wimm = 0; }},
      {"max_wimm_dest", [](QpConfig& c) { c.max_wimm_dest = 0; }},
      {"max_wimm_dest", [](QpConfig& c) { c.max_wimm_dest = 5000; }},
      {"timeout", [](QpConfig& c) { c.timeout = 25; }},
      {"retry_linear", [](QpConfig& c) { c.retry_linear = 8; }},
      {"retry_exp", [](QpConfig& c) { c.retry_exp = kRetryInfinite + 1; }},
      {"ack_every_packets", [](QpConfig& c) { c.ack_every_packets = 65; }},
      {"max_message_bytes", [](QpConfig& c) { c.max_message_bytes = 100; }},
      {"max_message_bytes", [](QpConfig& c) { c.max_message_bytes = 4096 * 3 + 1; }},
      {"max_message_bytes", [](QpConfig& c) { c.max_message_bytes = 1ull << 32; }},
      {"min_window_bytes", [](QpConfig& c) { c.nscc.min_window_bytes = 100; }},
      {"max_window_bytes", [](QpConfig& c) { c.nscc.max_window_bytes = 1000; }},
      {"fixed_window_bytes", [](QpConfig& c) { c.fixed_window_bytes = 10; }},
  };
  for (const BadConfig& bad : cases) {
    QpConfig c;
    bad.mutate(c);
    const std::string error = problem(c.validate(bad.planes));
    EXPECT_NE(error.find(bad.field), std::string::npos)
        << "expected an error naming " << bad.field << ", got \"" << error << "\"";
  }
}

TEST(QpState, BadConfigIsRefusedAtCreationAndByModify) {
  Endpoint endpoint(EndpointConfig{2, 16, 16, 1});
  const uint32_t pd = endpoint.memory().alloc_pd();
  CompletionQueue* cq = endpoint.create_cq(16);
  QpConfig bad;
  bad.ev_count = 3;  // not a multiple of 2 planes
  EXPECT_EQ(endpoint.create_qp(bad, pd, cq, cq).error(), QpError::kBadConfig);
  EXPECT_EQ(endpoint.create_qp(QpConfig{}, pd + 7, cq, cq).error(), QpError::kBadProtectionDomain);
  EXPECT_EQ(endpoint.create_qp(QpConfig{}, pd, nullptr, cq).error(), QpError::kNoCompletionQueue);
  QueuePair* qp = endpoint.create_qp(QpConfig{}, pd, cq, cq).value();
  EXPECT_EQ(qp->set_config(bad).error(), QpError::kBadConfig);
  EXPECT_NE(qp->config_error().find("ev_count"), std::string::npos);
  EXPECT_EQ(qp->config().ev_count, QpConfig{}.ev_count);  // the refused config was not applied
  // A refused modify leaves the QP as it was: it can still be brought up.
  EXPECT_TRUE(qp->to_init().ok());
  QpConfig good;
  good.mpr = 8;
  EXPECT_TRUE(qp->set_config(good).ok());  // allowed in INIT
  EXPECT_EQ(qp->config().mpr, 8);
  EXPECT_TRUE(qp->to_rtr(RtrAttributes{Qpn(0x777), Psn(0)}).ok());
  EXPECT_EQ(qp->set_config(good).error(), QpError::kBadTransition);
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

// The hook a poller of many queues uses (the simulator polls only the hosts it named): it
// fires when a push makes the queue non-empty, not for pushes into a non-empty queue, and not
// for a push that overruns.
TEST(CompletionQueueNotify, FiresWhenTheQueueBecomesNonEmpty) {
  CompletionQueue cq(2);
  struct Counter final : CompletionNotifier {
    int calls = 0;
    uint32_t tag = 0;
    void on_nonempty(uint32_t t) override {
      ++calls;
      tag = t;
    }
  } counter;
  cq.set_notifier(&counter, 7);
  const int& calls = counter.calls;
  EXPECT_TRUE(cq.push(Completion{1}));
  EXPECT_TRUE(cq.push(Completion{2}));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(cq.push(Completion{3}));  // full: an overrun, no event
  EXPECT_EQ(calls, 1);
  std::vector<Completion> out(4);
  EXPECT_EQ(cq.poll(out), 2u);
  EXPECT_TRUE(cq.push(Completion{4}));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(counter.tag, 7u);
  EXPECT_EQ(cq.overruns(), 1u);
}

}  // namespace
}  // namespace mrc
