// Spray granularity (QpConfig::ev_burst_packets): new data goes out in runs of k packets on one
// EV, a run ends early when its EV stops being GOOD, retransmissions take the next EV, and the
// bytes arrive intact whatever k is.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/wire/packet.h"
#include "pair.h"
#include "problem.h"

namespace mrc {
namespace {

using test::Pair;
using test::small_config;

QpConfig burst_config(uint16_t k) {
  QpConfig c = small_config();
  c.ev_burst_packets = k;
  return c;
}

// Bursts of k under a fixed window of `packets` packets, a SACK for every packet.
QpConfig fixed_window_config(uint16_t k, uint64_t packets) {
  QpConfig c = burst_config(k);
  c.cc = CcAlgorithm::kFixed;
  c.fixed_window_bytes = packets * (c.mtu_bytes + 64);
  c.ack_every_packets = 1;
  return c;
}

// Per plane, the EVs of the new data packets (first transmissions) side 0 sent, in order, as
// runs (EV, length).
using Runs = std::map<int, std::vector<std::pair<uint32_t, int>>>;

bool first_transmission(const std::vector<uint8_t>& bytes) {
  auto decoded = wire::decode(bytes);
  if (!decoded.ok()) return false;
  const auto* data = std::get_if<wire::DataPacket>(&decoded.value());
  return data != nullptr && !data->header.bth.retransmit;
}

// Adds a packet to its plane's runs; returns the length of the run it is in.
int note_run(Runs& runs, const TxMeta& tx) {
  auto& r = runs[tx.plane.value];
  if (!r.empty() && r.back().first == tx.ev.value) {
    ++r.back().second;
  } else {
    r.emplace_back(tx.ev.value, 1);
  }
  return r.back().second;
}

void record_runs(Pair& pair, Runs& runs) {
  pair.filter = [&runs](int from, std::vector<uint8_t>& bytes, RxMeta&, const TxMeta& tx) {
    if (from == 0 && tx.is_data && first_transmission(bytes)) note_run(runs, tx);
    return true;
  };
}

TEST(EvBurst, NewDataGoesOutInRunsOfKOnOneEv) {
  for (const int k : {0, 1, 2, 4, 8}) {
    SCOPED_TRACE(k);
    Pair pair(2, burst_config(static_cast<uint16_t>(k)), 1 << 20);
    Runs runs;
    record_runs(pair, runs);
    ASSERT_TRUE(pair.write(0, 0, 1 << 20, 1).ok());
    pair.run(Instant{200'000'000});
    ASSERT_EQ(pair.drain(0, false).size(), 1u);
    EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 1 << 20));
    ASSERT_EQ(runs.size(), 2u);
    for (const auto& [plane, r] : runs) {
      // Every run but a plane's last is whole bursts of k: one burst, or two or more when the
      // rotation's reshuffle happens to give the EV that just ended its burst again.
      for (size_t i = 0; i + 1 < r.size(); ++i)
        EXPECT_EQ(r[i].second % std::max(k, 1), 0) << "plane " << plane << " run " << i;
    }
  }
}

TEST(EvBurst, ARunEndsWhenItsEvIsMarked) {
  // A window of 3 packets and a SACK for every packet: a burst spans several round trips, so
  // the echo of a mark comes back while its EV's burst is still going.
  Pair pair(1, fixed_window_config(8, 3), 1 << 20);
  Runs runs;
  uint64_t marked = 0;
  pair.filter = [&](int from, std::vector<uint8_t>& bytes, RxMeta& rx, const TxMeta& tx) {
    if (from != 0 || !tx.is_data || !first_transmission(bytes)) return true;
    // The third packet of every 10th run arrives ECN-marked: its EV turns SKIP once the SACK
    // that echoes the mark comes back, which ends that EV's run if it is still going.
    if (note_run(runs, tx) == 3 && runs[0].size() % 10 == 0) {
      rx.ecn_ce = true;
      ++marked;
    }
    return true;
  };
  ASSERT_TRUE(pair.write(0, 0, 1 << 20, 1).ok());
  pair.run(Instant{200'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 1 << 20));
  EXPECT_GT(marked, 0u);
  // Without marks every run is whole bursts (the test above); here some end early.
  int ended_early = 0;
  for (size_t i = 0; i + 1 < runs[0].size(); ++i) ended_early += runs[0][i].second % 8 != 0 ? 1 : 0;
  EXPECT_GT(ended_early, 0);
}

// A window that reopens one packet per SACK: a new burst waits until the window has room for
// all of it, then leaves whole at one instant (one GSO send in the datapath), instead of one
// packet per SACK (a send each).
TEST(EvBurst, ABurstStartsOnlyWhenTheWindowHasRoomForAllOfIt) {
  Pair pair(2, fixed_window_config(4, 12), 1 << 20);
  Runs runs;
  std::map<int, std::vector<Instant>> run_start;  // per plane: when each run's first packet left
  std::map<int, int> split_runs;                  // per plane: runs whose packets left apart
  pair.filter = [&](int from, std::vector<uint8_t>& bytes, RxMeta&, const TxMeta& tx) {
    if (from != 0 || !tx.is_data || !first_transmission(bytes)) return true;
    const int plane = tx.plane.value;
    if (note_run(runs, tx) == 1) {
      run_start[plane].push_back(pair.now());
    } else if (run_start[plane].back() != pair.now()) {
      ++split_runs[plane];
    }
    return true;
  };
  ASSERT_TRUE(pair.write(0, 0, 1 << 20, 1).ok());
  pair.run(Instant{500'000'000});
  ASSERT_EQ(pair.drain(0, false).size(), 1u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 1 << 20));
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& [plane, r] : runs) {
    EXPECT_GT(r.size(), 10u) << "plane " << plane;
    EXPECT_EQ(split_runs[plane], 0) << "plane " << plane;
  }
}

TEST(EvBurst, LossesAreRecoveredOnOtherEvs) {
  for (const int k : {1, 4, 16}) {
    SCOPED_TRACE(k);
    Pair pair(4, burst_config(static_cast<uint16_t>(k)), 1 << 20, 3);
    uint64_t dropped = 0;
    std::map<uint32_t, uint32_t> lost_on;  // PSN -> EV it was lost on
    uint64_t resent_on_same_ev = 0;
    pair.filter = [&](int from, std::vector<uint8_t>& bytes, RxMeta&, const TxMeta& tx) {
      if (from != 0 || !tx.is_data) return true;
      auto decoded = wire::decode(bytes);
      if (!decoded.ok()) return true;
      const auto* data = std::get_if<wire::DataPacket>(&decoded.value());
      if (data == nullptr) return true;
      const uint32_t psn = data->header.bth.psn.value;
      if (auto it = lost_on.find(psn); it != lost_on.end() && it->second == tx.ev.value)
        ++resent_on_same_ev;
      if (!data->header.bth.retransmit && psn % 53 == 0) {
        lost_on[psn] = tx.ev.value;
        ++dropped;
        return false;
      }
      return true;
    };
    ASSERT_TRUE(pair.write(0, 0, 1 << 20, 1).ok());
    pair.run(Instant{500'000'000});
    ASSERT_EQ(pair.drain(0, false).size(), 1u);
    EXPECT_GT(dropped, 0u);
    EXPECT_EQ(resent_on_same_ev, 0u);
    EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 1 << 20));
  }
}

// Two QPs of one endpoint, each with a write queued, k = ev_burst_packets: the runs of
// (QP, EV) in the order the endpoint hands packets out, for the first 8k packets of plane 0.
std::vector<std::pair<std::pair<uint32_t, uint32_t>, int>> turns(int k, bool burst_turns) {
  EndpointConfig ec{1, 64, 64, 7};
  ec.burst_turns = burst_turns;
  Endpoint endpoint(ec);
  const uint32_t pd = endpoint.memory().alloc_pd();
  CompletionQueue* cq = endpoint.create_cq(64);
  std::vector<uint8_t> source(1 << 20, 0x5a);
  const MemoryRegionInfo mr =
      endpoint.memory()
          .register_region(pd, source.data(), source.size(), kAccessLocalWrite)
          .value();
  for (uint32_t peer = 1; peer <= 2; ++peer) {
    QueuePair* qp = endpoint.create_qp(burst_config(static_cast<uint16_t>(k)), pd, cq, cq).value();
    EXPECT_TRUE(qp->to_init().ok());
    EXPECT_TRUE(qp->to_rtr(RtrAttributes{Qpn(0x300 + peer), Psn(5), peer}).ok());
    EXPECT_TRUE(qp->to_rts(RtsAttributes{Psn(9)}).ok());
    Sge sge{mr.address, static_cast<uint32_t>(source.size()), mr.lkey};
    SendWr wr;
    wr.opcode = SendOpcode::kWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = 0x1000;
    wr.rkey = 1;
    EXPECT_TRUE(qp->post_send(wr).ok());
  }
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, int>> runs;
  std::vector<uint8_t> buf(wire::kMaxDatagramBytes);
  for (int i = 0; i < 8 * k; ++i) {
    TxMeta tx;
    if (endpoint.poll_transmit(Instant{1000}, PlaneId(0), buf, tx) == 0 || !tx.is_data) break;
    const std::pair<uint32_t, uint32_t> key{tx.peer, tx.ev.value};
    if (!runs.empty() && runs.back().first == key) {
      ++runs.back().second;
    } else {
      runs.emplace_back(key, 1);
    }
  }
  return runs;
}

// With burst turns (EndpointConfig::burst_turns) each QP keeps the transmit turn for its
// whole burst: k packets of one QP on one EV, then k of the other. Without, the QPs alternate
// packet by packet.
TEST(EvBurst, BurstTurnsKeepAQpsBurstTogether) {
  for (const int k : {1, 4, 8}) {
    SCOPED_TRACE(k);
    const auto runs = turns(k, true);
    ASSERT_EQ(runs.size(), 8u);
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(runs[i].second, k) << "run " << i;
      EXPECT_EQ(runs[i].first.first, i % 2 == 0 ? 1u : 2u) << "run " << i;  // the QPs alternate
    }
    const auto packet_turns = turns(k, false);
    ASSERT_EQ(packet_turns.size(), static_cast<size_t>(8 * k));
    for (size_t i = 0; i < packet_turns.size(); ++i)
      EXPECT_EQ(packet_turns[i].first.first, i % 2 == 0 ? 1u : 2u) << "packet " << i;
  }
}

TEST(EvBurst, ValidateBoundsTheBurst) {
  QpConfig c = small_config();
  c.ev_burst_packets = 0;  // the datapath's choice
  EXPECT_EQ(problem(c.validate(2)), "");
  c.ev_burst_packets = kMaxEvBurstPackets + 1;
  EXPECT_NE(problem(c.validate(2)).find("ev_burst_packets"), std::string::npos);
  c.ev_burst_packets = kMaxEvBurstPackets;
  EXPECT_EQ(problem(c.validate(2)), "");
}

}  // namespace
}  // namespace mrc
