// OCP devices with threads=2 (lib_mrc.so on a host of two shards): queue pairs spread over the
// shards, one CQ per direction collecting from both, and what a round of either shard delivers
// outside the CQs (completion-channel events, a QP's fatal event). Two devices of one process,
// each of two planes, connected by several QP pairs that write both ways; every message is
// checked byte for byte where it landed, and by its immediate. No timing is checked: a wait
// that never ends is the ctest timeout's.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "mrc.h"
#include "mrc_ctl.h"

namespace {

constexpr int kPairs = 6;          // QP pairs: three in each shard of each device
constexpr int kSlots = 8;          // messages in flight per QP and direction
constexpr uint32_t kBytes = 6000;  // per message: a packet and a part on either MTU
constexpr int kRounds = 12;

// One device: context, PD, a send CQ and a receive CQ (with a completion channel) shared by
// every QP, and a buffer per QP of kSlots message slots, registered as one region.
struct Side {
  ibv_context* device = nullptr;
  mrc_context* context = nullptr;
  ibv_pd* pd = nullptr;
  mrc_comp_channel* channel = nullptr;
  mrc_cq* send_cq = nullptr;
  mrc_cq* recv_cq = nullptr;
  std::vector<mrc_qp*> qps;
  std::vector<uint8_t> buffer;  // [pair][slot][kBytes] received, then [pair][slot] to send
  ibv_mr* mr = nullptr;
  ibv_gid gid{};

  uint8_t* received(int pair, int slot) {
    return buffer.data() + (static_cast<size_t>(pair) * kSlots + slot) * kBytes;
  }
  uint8_t* outgoing(int pair, int slot) { return received(pair + kPairs, slot); }
};

ibv_context* open_named(const char* name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* opened = nullptr;
  for (int i = 0; list != nullptr && i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) opened = ibv_open_device(list[i]);
  if (list != nullptr) ibv_free_device_list(list);
  return opened;
}

void open_side(Side& s, const char* name) {
  s.device = open_named(name);
  ASSERT_NE(s.device, nullptr) << name << " (MRC_DEVICES set?)";
  mrc_context_attr attr{};
  attr.mrc_api_version_used = MRC_API_CURRENT_VERSION;
  s.context = mrc_create_context(s.device, &attr);
  ASSERT_NE(s.context, nullptr);
  s.pd = ibv_alloc_pd(s.device);
  ASSERT_NE(s.pd, nullptr);
  ASSERT_EQ(mrc_create_comp_channel(s.context, &s.channel), 0);
  s.send_cq = mrc_create_cq(s.context, 4096, nullptr, nullptr, 0);
  s.recv_cq = mrc_create_cq(s.context, 4096, &s, s.channel, 0);
  ASSERT_TRUE(s.send_cq != nullptr && s.recv_cq != nullptr);
  s.buffer.assign(static_cast<size_t>(2 * kPairs) * kSlots * kBytes, 0);
  s.mr = ibv_reg_mr(s.pd, s.buffer.data(), s.buffer.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(s.mr, nullptr);
  ASSERT_EQ(ibv_query_gid(s.device, 1, 3, &s.gid), 0);
  for (int i = 0; i < kPairs; ++i) {
    mrc_qp_init_attr qa{};
    qa.send_cq = s.send_cq;
    qa.recv_cq = s.recv_cq;
    qa.pd = s.pd;
    qa.cap.max_send_wr = 2 * kSlots;
    qa.cap.max_recv_wr = 2 * kSlots;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    qa.protocol_version = MRC_PROTOCOL_VERSION_1;
    s.qps.push_back(mrc_create_qp(s.context, &qa));
    ASSERT_NE(s.qps.back(), nullptr) << "QP " << i << ": errno " << errno;
  }
}

uint32_t qpn_of(mrc_qp* qp) {
  uint32_t qpn = 0;
  EXPECT_EQ(mrc_get_qpn(qp, &qpn), 0);
  return qpn;
}

// RESET -> INIT -> RTR -> RTS toward `peer`'s QP of the same pair; with `short_retries`, a
// refused WRITE fails its QP soon.
// A nonzero `ev_profile` is the QP's EV profile, given at INIT.
int connect(mrc_qp* qp, const Side& peer, mrc_qp* peer_qp, bool short_retries,
            uint64_t ev_profile) {
  ibv_qp_attr v{};
  v.qp_state = IBV_QPS_INIT;
  v.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  mrc_qp_attr init{};
  init.profile.ev_profile_id = ev_profile;
  if (mrc_modify_qp(qp, &v, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &init,
                    ev_profile != 0 ? MRC_QP_EV_PROFILE_ID : 0) != 0)
    return -1;
  v = ibv_qp_attr{};
  v.qp_state = IBV_QPS_RTR;
  v.path_mtu = IBV_MTU_4096;
  v.ah_attr.is_global = 1;
  v.ah_attr.port_num = 1;
  v.ah_attr.grh.dgid = peer.gid;
  v.ah_attr.grh.sgid_index = 3;
  v.dest_qp_num = qpn_of(peer_qp);
  v.rq_psn = 0x100;
  constexpr int kRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (mrc_modify_qp(qp, &v, kRtr, nullptr, 0) != 0) return -1;
  mrc_qp_attr m{};
  m.timeout = 16;
  m.retry.linear_cnt = 2;
  m.retry.exp_cnt = 1;
  v = ibv_qp_attr{};
  v.qp_state = IBV_QPS_RTS;
  v.sq_psn = 0x100;
  return mrc_modify_qp(qp, &v, IBV_QP_STATE | IBV_QP_SQ_PSN, &m,
                       short_retries ? MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT : 0);
}

// The bytes of message `seq` of `pair` from the side numbered `from`.
uint8_t pattern(int from, int pair, int seq, uint32_t i) {
  return static_cast<uint8_t>(from * 131 + pair * 31 + seq * 7 + i * 13 + (i >> 8));
}

uint32_t immediate(int pair, int seq) {
  return htonl(static_cast<uint32_t>(pair) << 16 | static_cast<uint32_t>(seq));
}

void post_write(Side& from, int from_id, const Side& to, int pair, int seq, bool signaled) {
  const int slot = seq % kSlots;
  uint8_t* out = from.outgoing(pair, slot);
  for (uint32_t i = 0; i < kBytes; ++i) out[i] = pattern(from_id, pair, seq, i);
  ibv_sge sge{reinterpret_cast<uintptr_t>(out), kBytes, from.mr->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = static_cast<uint64_t>(pair) << 32 | static_cast<uint32_t>(seq);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.imm_data = immediate(pair, seq);
  // The peer's received slot of this pair: the peer's buffer is laid out as ours.
  const auto offset = static_cast<uint64_t>(out - from.buffer.data()) -
                      static_cast<uint64_t>(kPairs) * kSlots * kBytes;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(to.buffer.data()) + offset;
  wr.wr.rdma.rkey = to.mr->rkey;
  ASSERT_EQ(mrc_post_send(from.qps[pair], &wr, &bad), 0) << "pair " << pair << " seq " << seq;
}

// Takes `count` completions of `cq`, each successful, and hands each to `check`.
template <typename Check>
void drain(mrc_cq* cq, int count, Check check) {
  ibv_wc wc[16];
  for (int got = 0; got < count;) {
    const int n = mrc_poll_cq(cq, 16, wc);
    ASSERT_GE(n, 0);
    if (n == 0) std::this_thread::yield();  // the shards' threads run the rounds
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(wc[i].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[i].status);
      check(wc[i]);
    }
    got += n;
  }
}

// Received messages of a round: each in its slot with its pattern, named by its immediate, on
// the QP of its pair; every (pair, slot) once.
void check_received(Side& to, int from_id, int round) {
  std::vector<int> seen(static_cast<size_t>(kPairs) * kSlots, 0);
  drain(to.recv_cq, kPairs * kSlots, [&](const ibv_wc& wc) {
    ASSERT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    ASSERT_EQ(wc.byte_len, kBytes);
    const uint32_t imm = ntohl(wc.imm_data);
    const int pair = static_cast<int>(imm >> 16), seq = static_cast<int>(imm & 0xffff);
    ASSERT_LT(pair, kPairs);
    ASSERT_EQ(seq / kSlots, round);
    ASSERT_EQ(wc.qp_num, qpn_of(to.qps[pair]));
    ++seen[pair * kSlots + seq % kSlots];
    const uint8_t* at = to.received(pair, seq % kSlots);
    for (uint32_t i = 0; i < kBytes; ++i)
      ASSERT_EQ(at[i], pattern(from_id, pair, seq, i)) << "pair " << pair << " seq " << seq;
  });
  for (int n : seen) ASSERT_EQ(n, 1);
}

class OcpThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    open_side(a_, "mrc0");
    open_side(b_, "mrc1");
    if (ev_profile_ != 0) make_ev_profile(a_.context, ev_profile_);
    for (int i = 0; i < kPairs; ++i) {
      // Placed in turn: a QP number carries its shard above its 11 index bits (core/endpoint.h).
      ASSERT_EQ(qpn_of(a_.qps[i]) >> 11 & 1, static_cast<uint32_t>(i % 2)) << "pair " << i;
      ASSERT_EQ(qpn_of(b_.qps[i]) >> 11 & 1, static_cast<uint32_t>(i % 2)) << "pair " << i;
      const uint64_t profile = i == 1 ? ev_profile_ : 0;  // pair 1: shard 1's
      ASSERT_EQ(connect(a_.qps[i], b_, b_.qps[i], short_retries_, profile), 0) << "pair " << i;
      ASSERT_EQ(connect(b_.qps[i], a_, a_.qps[i], short_retries_, 0), 0) << "pair " << i;
    }
  }
  void TearDown() override {
    for (Side* s : {&a_, &b_}) {
      for (mrc_qp* qp : s->qps) EXPECT_EQ(mrc_destroy_qp(qp), 0);
      EXPECT_EQ(mrc_destroy_cq(s->send_cq), 0);
      EXPECT_EQ(mrc_destroy_cq(s->recv_cq), 0);
      EXPECT_EQ(mrc_destroy_comp_channel(s->channel), 0);
      EXPECT_EQ(ibv_dereg_mr(s->mr), 0);
      EXPECT_EQ(ibv_dealloc_pd(s->pd), 0);
      EXPECT_EQ(mrc_destroy_context(s->context), 0);
      EXPECT_EQ(ibv_close_device(s->device), 0);
    }
  }
  void post_recvs(Side& s, int count) {
    for (int pair = 0; pair < kPairs; ++pair)
      for (int i = 0; i < count; ++i) {
        ibv_recv_wr wr{};
        ibv_recv_wr* bad = nullptr;
        ASSERT_EQ(mrc_post_recv(s.qps[pair], &wr, &bad), 0);
      }
  }
  // Waits on `s`'s receive channel for its CQ's event, acknowledges it.
  void wait_channel_event(Side& s) {
    pollfd p{};
    ASSERT_EQ(mrc_get_comp_channel_fd(s.channel, &p.fd), 0);
    p.events = POLLIN;
    ASSERT_EQ(::poll(&p, 1, -1), 1);
    mrc_cq* cq = nullptr;
    void* context = nullptr;
    ASSERT_EQ(mrc_get_cq_event(s.channel, &cq, &context), 0);
    EXPECT_EQ(cq, s.recv_cq);
    EXPECT_EQ(context, &s);
    mrc_ack_cq_events(cq, 1);
  }
  // An AUTO EV profile of 16 EVs, ONLINE.
  static void make_ev_profile(mrc_context* context, uint64_t id) {
    mrc_ctl_ev_profile_attr ev{};
    ev.profile_state = MRC_CTL_PROFILE_OFFLINE;
    ev.ev_mode = MRC_CTL_EV_MODE_AUTO;
    ev.ev_count = 16;
    ev.ev_min_active = 4;
    ASSERT_EQ(
        mrc_ctl_modify_ev_profile(context, id, &ev,
                                  MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE |
                                      MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_MIN_ACTIVE),
        0);
    ev.profile_state = MRC_CTL_PROFILE_ONLINE;
    ASSERT_EQ(mrc_ctl_modify_ev_profile(context, id, &ev, MRC_CTL_EV_PROFILE_STATE), 0);
  }
  // Writes `count` messages on `pair` from a to b and checks each where it landed.
  void write_pair(int pair, int count) {
    for (int seq = 0; seq < count; ++seq) {
      ibv_recv_wr recv{};
      ibv_recv_wr* bad = nullptr;
      ASSERT_EQ(mrc_post_recv(b_.qps[pair], &recv, &bad), 0);
      post_write(a_, 0, b_, pair, seq, true);
      drain(b_.recv_cq, 1, [&](const ibv_wc& wc) {
        ASSERT_EQ(ntohl(wc.imm_data), static_cast<uint32_t>(pair) << 16 | seq);
      });
      drain(a_.send_cq, 1, [](const ibv_wc&) {});
      const uint8_t* at = b_.received(pair, seq % kSlots);
      for (uint32_t i = 0; i < kBytes; ++i) ASSERT_EQ(at[i], pattern(0, pair, seq, i));
    }
  }
  Side a_, b_;
  bool short_retries_ = false;
  uint64_t ev_profile_ = 0;  // nonzero: pair 1's QP of mrc0 has this EV profile
};

class OcpThreadsEvProfile : public OcpThreads {
 protected:
  OcpThreadsEvProfile() { ev_profile_ = 5; }
};

class OcpThreadsFailing : public OcpThreads {
 protected:
  OcpThreadsFailing() { short_retries_ = true; }
};

// Every pair writes both ways, round after round; each side's one receive CQ gets every pair's
// messages, whichever shard the pair's QPs are in.
TEST_F(OcpThreads, QueuePairsOnBothShardsWriteBothWaysVerified) {
  for (int round = 0; round < kRounds; ++round) {
    post_recvs(a_, kSlots);
    post_recvs(b_, kSlots);
    for (int k = 0; k < kSlots; ++k)
      for (int pair = 0; pair < kPairs; ++pair) {
        post_write(a_, 0, b_, pair, round * kSlots + k, true);
        post_write(b_, 1, a_, pair, round * kSlots + k, k % 2 == 0);
      }
    check_received(b_, 0, round);
    check_received(a_, 1, round);
    drain(a_.send_cq, kPairs * kSlots, [](const ibv_wc&) {});
    drain(b_.send_cq, kPairs * kSlots / 2, [](const ibv_wc&) {});
  }
}

// An armed receive CQ gets its channel event when a message of a QP in either shard arrives.
TEST_F(OcpThreads, CompletionChannelHearsEveryShard) {
  for (int pair = 0; pair < kPairs; ++pair) {
    ibv_recv_wr recv{};
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(mrc_post_recv(b_.qps[pair], &recv, &bad), 0);
    ASSERT_EQ(mrc_req_notify_cq(b_.recv_cq, 0), 0);
    post_write(a_, 0, b_, pair, pair, true);
    wait_channel_event(b_);
    drain(b_.recv_cq, 1, [&](const ibv_wc& wc) {
      ASSERT_EQ(ntohl(wc.imm_data), static_cast<uint32_t>(pair) << 16 | pair);
    });
    drain(a_.send_cq, 1, [](const ibv_wc&) {});
    const uint8_t* at = b_.received(pair, pair % kSlots);
    for (uint32_t i = 0; i < kBytes; ++i) ASSERT_EQ(at[i], pattern(0, pair, pair, i));
  }
}

// A WRITE with a wrong rkey fails its QP, in whichever shard: the error completion on the shared
// send CQ, and the QP's fatal event from that shard's round; the other QPs keep working.
TEST_F(OcpThreadsFailing, FatalEventComesFromTheQueuePairsShard) {
  for (int pair : {0, 1}) {  // placed in turn: one QP of each shard
    ibv_sge sge{reinterpret_cast<uintptr_t>(a_.outgoing(pair, 0)), 64, a_.mr->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 77;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b_.buffer.data());
    wr.wr.rdma.rkey = b_.mr->rkey + 1;
    ASSERT_EQ(mrc_post_send(a_.qps[pair], &wr, &bad), 0);
    ibv_wc wc{};
    int n = 0;
    while ((n = mrc_poll_cq(a_.send_cq, 1, &wc)) == 0) std::this_thread::yield();
    ASSERT_EQ(n, 1);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(wc.qp_num, qpn_of(a_.qps[pair]));
    mrc_async_event ev{};
    do {
      ASSERT_EQ(mrc_get_async_event(a_.context, &ev), 0);
      mrc_ack_async_event(&ev);
    } while (ev.event_type != IBV_EVENT_QP_FATAL);
    EXPECT_EQ(ev.element.qp, a_.qps[pair]);
  }
  post_recvs(b_, 1);  // the QPs of pairs 2.. still move data
  for (int pair = 2; pair < kPairs; ++pair) post_write(a_, 0, b_, pair, 0, true);
  drain(b_.recv_cq, kPairs - 2, [&](const ibv_wc& wc) {
    const int pair = static_cast<int>(ntohl(wc.imm_data) >> 16);
    ASSERT_GE(pair, 2);
    const uint8_t* at = b_.received(pair, 0);
    for (uint32_t i = 0; i < kBytes; ++i) ASSERT_EQ(at[i], pattern(0, pair, 0, i));
  });
  drain(a_.send_cq, kPairs - 2, [](const ibv_wc&) {});
}

}  // namespace

namespace {

// The controller names a QP's EVs by the device's source ports (shard 0's ranges: 2 planes of
// 144 from ev-port-base 42100, ev_source_ports_per_plane) whichever shard the QP is in, and acts
// on the QP in its own shard: an EV of a shard-1 QP denied and allowed again by that name.
TEST_F(OcpThreadsEvProfile, ControllerNamesAndChangesEvsOfAShardOneQp) {
  constexpr int kEvBase = 42100, kPerPlane = 144;
  mrc_ctl_ev_op_entry entries[256];
  mrc_ctl_ev_profile_attr q{};
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  q.ev_op.entries = entries;
  q.ev_op.entry_count = 256;
  ASSERT_EQ(mrc_ctl_query_ev_profile(a_.context, 5, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  ASSERT_GE(q.ev_op.entry_count, 16);  // the profile's 16 and the EV set's backups
  for (int i = 0; i < q.ev_op.entry_count; ++i) {
    const mrc_ctl_ev& ev = entries[i].ev;
    const int port = ev.val[0] << 8 | ev.val[1];
    const int plane = ev.port - 1;
    ASSERT_TRUE(plane == 0 || plane == 1) << i;
    EXPECT_GE(port, kEvBase + plane * kPerPlane) << i;
    EXPECT_LT(port, kEvBase + (plane + 1) * kPerPlane) << i;
  }
  mrc_ctl_ev_op_entry e = entries[0];
  mrc_ctl_ev_profile_attr m{};
  m.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
  m.ev_op.entries = &e;
  m.ev_op.entry_count = 1;
  e.state = MRC_CTL_EV_DENIED;
  ASSERT_EQ(mrc_ctl_modify_ev_profile(a_.context, 5, &m, MRC_CTL_EV_PROFILE_EV_OP), 0);
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  q.ev_op.entries = &e;
  q.ev_op.entry_count = 1;
  e.state = MRC_CTL_EV_UNKNOWN;
  ASSERT_EQ(mrc_ctl_query_ev_profile(a_.context, 5, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  EXPECT_EQ(e.state, MRC_CTL_EV_DENIED);  // read from the QP in shard 1
  write_pair(1, 2 * kSlots);
  e.state = MRC_CTL_EV_GOOD;
  ASSERT_EQ(mrc_ctl_modify_ev_profile(a_.context, 5, &m, MRC_CTL_EV_PROFILE_EV_OP), 0);
  e.state = MRC_CTL_EV_UNKNOWN;
  ASSERT_EQ(mrc_ctl_query_ev_profile(a_.context, 5, &q, MRC_CTL_EV_PROFILE_EV_OP), 0);
  EXPECT_EQ(e.state, MRC_CTL_EV_GOOD);
  write_pair(1, kSlots);
}

// SRv6 and STEV EVs of the controller bind one engine's source ports: a device of several
// threads whose planes would take them (mrc2: ::1 in SRv6 mode) neither advertises nor takes
// their formats.
TEST(OcpThreadsSrv6, Srv6AndStevFormatsNeedOneThread) {
  ibv_context* device = open_named("mrc2");
  ASSERT_NE(device, nullptr);
  mrc_context* context = mrc_create_context(device, nullptr);
  ASSERT_NE(context, nullptr);
  mrc_ctl_device_attr attr{};
  ASSERT_EQ(mrc_ctl_query_device_ex(device, context, &attr, nullptr), 0);
  EXPECT_EQ(attr.ev.ev_fmt_mode_mask, MRC_CTL_EV_FMT_MODE_UDP);
  for (mrc_ctl_ev_fmt_mode mode : {MRC_CTL_EV_FMT_MODE_SRV6, MRC_CTL_EV_FMT_MODE_STEV}) {
    mrc_ctl_ev_fmt_profile_attr f{};
    f.ev_fmt_mode = mode;
    f.profile_state = MRC_CTL_PROFILE_OFFLINE;
    errno = 0;
    EXPECT_NE(mrc_ctl_modify_ev_fmt_profile(
                  context, 7, &f, MRC_CTL_EV_FMT_PROFILE_MODE | MRC_CTL_EV_FMT_PROFILE_STATE),
              0);
    EXPECT_EQ(errno, EINVAL);
  }
  EXPECT_EQ(mrc_destroy_context(context), 0);
  EXPECT_EQ(ibv_close_device(device), 0);
}

}  // namespace

// pcap= (mrc0's entry, "%p": this process): the device's datagrams go to a capture file, which
// the writer puts on disk as they come (the first at once), so it is readable while it runs.
TEST_F(OcpThreads, PcapEntryCapturesTheDevicesDatagrams) {
  post_recvs(b_, 1);
  post_write(a_, 0, b_, 0, 0, true);
  drain(b_.recv_cq, 1, [](const ibv_wc&) {});
  drain(a_.send_cq, 1, [](const ibv_wc&) {});
  const char* dir = std::getenv("MRC_TEST_PCAP_DIR");
  ASSERT_NE(dir, nullptr) << "MRC_TEST_PCAP_DIR (the ctest environment) not set";
  const std::string path = std::string(dir) + "/ocp-threads-" + std::to_string(getpid()) + ".pcap";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "no capture at " << path;
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in), {}};
  ASSERT_GE(bytes.size(), 24u + 16u + 28u) << "a pcap header and one UDP record";
  uint32_t magic = 0;
  std::memcpy(&magic, bytes.data(), 4);
  EXPECT_TRUE(magic == 0xA1B2C3D4u || magic == 0xA1B23C4Du) << std::hex << magic;
  std::remove(path.c_str());  // (the device's writer keeps its open file)
}
