// The collectives library over real loopback planes: every collective x type x operator at 2,
// 3, 4 and 8 ranks (threads in one process, each rank with its own Context and progress
// thread) against a reference computed locally, with odd and zero counts, in place and out of
// place, small chunks so that pipelining and uneven segments are exercised, and guard bytes
// after every output buffer. Then a plane taken down and up in the middle of all-reduces, the
// errors (a vanished peer, mismatched calls, a rank that never arrives), the stores, and the
// 16-bit float conversions.
//
// Ports: UDP receive ports 5800-5999 and EV source ports 2000-3999 and 6000-19999, one disjoint
// range per test (ctest runs tests in parallel) across the collectives tests; nothing else uses
// them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "collectives_harness.h"

namespace mrc::coll {
namespace {

constexpr uint8_t kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;

// ---- inputs and references -----------------------------------------------------------------

// Values chosen so that every result is exact in every type whatever the reduction order:
// small integers for sum/avg, +-1 and 2 for prod, anything for min/max.
double input_value(ReduceOp op, int rank, size_t i) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<double>((rank * 7 + static_cast<int>(i % 1000) * 3) % 11);
    case ReduceOp::kProd: {
      const double choices[] = {1, 2, -1};
      return choices[(static_cast<size_t>(rank) + i) % 3];
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return static_cast<double>((rank * 13 + static_cast<int>(i % 1000) * 7) % 100 - 50);
  }
  return 0;
}

std::vector<uint8_t> make_input(DataType type, ReduceOp op, int rank, size_t count,
                                size_t salt = 0) {
  std::vector<uint8_t> out(count * size_of(type));
  for (size_t i = 0; i < count; ++i)
    store_value(type, out.data() + i * size_of(type), input_value(op, rank, i + salt));
  return out;
}

// The reduction of every rank's input, in rank order, then the average's division.
std::vector<uint8_t> reference(DataType type, ReduceOp op, int ranks, size_t count,
                               size_t salt = 0) {
  std::vector<uint8_t> acc = make_input(type, op, 0, count, salt);
  for (int r = 1; r < ranks; ++r) {
    const std::vector<uint8_t> x = make_input(type, op, r, count, salt);
    reduce_into(type, op, acc.data(), x.data(), count);
  }
  finalize_average(type, op, acc.data(), count, ranks);
  return acc;
}

// A buffer with guard bytes after its `bytes`; guards_intact() says nothing wrote past it.
struct Guarded {
  std::vector<uint8_t> storage;
  size_t bytes;
  explicit Guarded(size_t n) : storage(n + kGuardBytes, 0), bytes(n) {
    std::memset(storage.data() + n, kGuard, kGuardBytes);
  }
  uint8_t* data() { return storage.data(); }
  bool guards_intact() const {
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (storage[bytes + i] != kGuard) return false;
    return true;
  }
  bool equals(const std::vector<uint8_t>& want, size_t at = 0) const {
    return want.empty() || std::memcmp(storage.data() + at, want.data(), want.size()) ==
                               0;  // no null data to memcmp
  }
};

std::string what(const char* name, DataType t, ReduceOp op, size_t count, bool in_place, int rank) {
  return std::string(name) + " " + to_string(t) + " " + to_string(op) +
         " count=" + std::to_string(count) + (in_place ? " in-place" : " out-of-place") +
         " rank=" + std::to_string(rank);
}

// ---- the matrix ----------------------------------------------------------------------------

void check_all_reduce(Communicator& c, int rank, int ranks) {
  const size_t counts[] = {0, 1, 7, static_cast<size_t>(ranks) * 37 + 3, 1001};
  for (DataType t : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      for (size_t count : counts)
        for (AllReduceAlgorithm algorithm :
             {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kDirect,
              AllReduceAlgorithm::kRecursiveDoubling, AllReduceAlgorithm::kAuto})
          for (bool in_place : {false, true}) {
            const std::vector<uint8_t> input = make_input(t, op, rank, count);
            Guarded out(input.size());
            if (in_place && !input.empty()) std::memcpy(out.data(), input.data(), input.size());
            auto r = c.all_reduce(in_place ? out.data() : input.data(), out.data(), count, t, op,
                                  algorithm);
            const std::string name =
                what("all_reduce", t, op, count, in_place, rank) + " " + to_string(algorithm);
            ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
            EXPECT_TRUE(out.equals(reference(t, op, ranks, count))) << name;
            EXPECT_TRUE(out.guards_intact()) << name;
          }
}

void check_reduce_scatter(Communicator& c, int rank, int ranks) {
  for (DataType t : kAllDataTypes)
    for (ReduceOp op : kAllReduceOps)
      for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{301}})
        for (bool in_place : {false, true}) {
          const size_t e = size_of(t), total = count * static_cast<size_t>(ranks);
          const std::vector<uint8_t> input = make_input(t, op, rank, total);
          const std::vector<uint8_t> full = reference(t, op, ranks, total);
          const std::vector<uint8_t> want(
              full.begin() + static_cast<ptrdiff_t>(rank * count * e),
              full.begin() + static_cast<ptrdiff_t>((rank + 1) * count * e));
          Guarded buffer(in_place ? input.size() : count * e);
          if (in_place && !input.empty()) std::memcpy(buffer.data(), input.data(), input.size());
          uint8_t* out = buffer.data() + (in_place ? rank * count * e : 0);
          auto r = c.reduce_scatter(in_place ? buffer.data() : input.data(), out, count, t, op);
          const std::string name = what("reduce_scatter", t, op, count, in_place, rank);
          ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
          EXPECT_TRUE(buffer.equals(want, in_place ? rank * count * e : 0)) << name;
          EXPECT_TRUE(buffer.guards_intact()) << name;
        }
}

void check_all_gather(Communicator& c, int rank, int ranks) {
  for (DataType t : kAllDataTypes)
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{301}})
      for (bool in_place : {false, true}) {
        const size_t e = size_of(t);
        std::vector<uint8_t> want;
        for (int r = 0; r < ranks; ++r) {
          const auto block = make_input(t, ReduceOp::kMin, r, count);
          want.insert(want.end(), block.begin(), block.end());
        }
        const std::vector<uint8_t> input = make_input(t, ReduceOp::kMin, rank, count);
        Guarded out(want.size());
        if (in_place && !input.empty())
          std::memcpy(out.data() + rank * count * e, input.data(), input.size());
        auto r = c.all_gather(in_place ? out.data() + rank * count * e : input.data(), out.data(),
                              count, t);
        const std::string name = what("all_gather", t, ReduceOp::kMin, count, in_place, rank);
        ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
        EXPECT_TRUE(out.equals(want)) << name;
        EXPECT_TRUE(out.guards_intact()) << name;
      }
}

void check_broadcast_and_reduce(Communicator& c, int rank, int ranks) {
  for (DataType t : kAllDataTypes)
    for (int root : {0, ranks - 1})
      for (size_t count : {size_t{0}, size_t{3}, size_t{777}})
        for (bool in_place : {false, true}) {
          const std::vector<uint8_t> source = make_input(t, ReduceOp::kMax, root, count);
          const std::vector<uint8_t> input = make_input(t, ReduceOp::kMax, rank, count);
          Guarded out(source.size());
          if (in_place && !input.empty()) std::memcpy(out.data(), input.data(), input.size());
          auto r = c.broadcast(in_place ? out.data() : input.data(), out.data(), count, t, root);
          std::string name = what("broadcast", t, ReduceOp::kMax, count, in_place, rank) +
                             " root=" + std::to_string(root);
          ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
          EXPECT_TRUE(out.equals(source)) << name;
          EXPECT_TRUE(out.guards_intact()) << name;
          for (ReduceOp op : kAllReduceOps) {
            const std::vector<uint8_t> mine = make_input(t, op, rank, count, 5);
            Guarded reduced(mine.size());
            if (in_place && !mine.empty()) std::memcpy(reduced.data(), mine.data(), mine.size());
            auto rr = c.reduce(in_place ? reduced.data() : mine.data(), reduced.data(), count, t,
                               op, root);
            name = what("reduce", t, op, count, in_place, rank) + " root=" + std::to_string(root);
            ASSERT_TRUE(rr.ok()) << name << ": " << rr.error().message;
            if (rank == root) {
              EXPECT_TRUE(reduced.equals(reference(t, op, ranks, count, 5))) << name;
            }
            EXPECT_TRUE(reduced.guards_intact()) << name;
          }
        }
}

void check_all_to_all_and_point_to_point(Communicator& c, int rank, int ranks) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kUint8})
    for (size_t count : {size_t{0}, size_t{1}, size_t{333}})
      for (bool in_place : {false, true}) {
        const size_t e = size_of(t);
        // Block j of rank i holds input_value(min, i * ranks + j, k).
        std::vector<uint8_t> input, want;
        for (int j = 0; j < ranks; ++j) {
          const auto mine = make_input(t, ReduceOp::kMin, rank * ranks + j, count);
          const auto theirs = make_input(t, ReduceOp::kMin, j * ranks + rank, count);
          input.insert(input.end(), mine.begin(), mine.end());
          want.insert(want.end(), theirs.begin(), theirs.end());
        }
        Guarded out(want.size());
        if (in_place && !input.empty()) std::memcpy(out.data(), input.data(), input.size());
        auto r = c.all_to_all(in_place ? out.data() : input.data(), out.data(), count, t);
        const std::string name = what("all_to_all", t, ReduceOp::kMin, count, in_place, rank);
        ASSERT_TRUE(r.ok()) << name << ": " << r.error().message;
        EXPECT_TRUE(out.equals(want)) << name << " " << e;
        EXPECT_TRUE(out.guards_intact()) << name;
      }
  // Around the ring: rank 0 sends first, every other rank receives first.
  for (size_t count : {size_t{0}, size_t{1}, size_t{5000}}) {
    const auto mine = make_input(DataType::kInt32, ReduceOp::kMin, rank, count);
    const auto want =
        make_input(DataType::kInt32, ReduceOp::kMin, (rank + ranks - 1) % ranks, count);
    Guarded got(want.size());
    const int next = (rank + 1) % ranks, previous = (rank + ranks - 1) % ranks;
    if (rank == 0) {
      ASSERT_TRUE(c.send(mine.data(), count, DataType::kInt32, next).ok());
    }
    ASSERT_TRUE(c.recv(got.data(), count, DataType::kInt32, previous).ok());
    if (rank != 0) {
      ASSERT_TRUE(c.send(mine.data(), count, DataType::kInt32, next).ok());
    }
    EXPECT_TRUE(got.equals(want)) << "send/recv count=" << count << " rank=" << rank;
    EXPECT_TRUE(got.guards_intact());
  }
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.barrier().ok());
}

void run_matrix(const GroupConfig& config) {
  Group group(config);
  ASSERT_TRUE(group.ok());
  group.run([&](int rank, Communicator& c) {
    check_all_reduce(c, rank, config.ranks);
    check_reduce_scatter(c, rank, config.ranks);
    check_all_gather(c, rank, config.ranks);
    check_broadcast_and_reduce(c, rank, config.ranks);
    check_all_to_all_and_point_to_point(c, rank, config.ranks);
  });
  // Every rank's traffic was sprayed over both planes.
  for (auto& c : group.comms)
    for (int p = 0; p < config.planes; ++p) EXPECT_GT(c->context().plane_stats(p).bytes_sent, 0u);
  group.close();
}

// chunk_bytes 0: 1 MiB slots while ranks x 2 x slots x chunk stays within 128 MiB, halved
// beyond, never below 256 KiB.
TEST(Collectives, AutoChunkBytes) {
  EXPECT_EQ(auto_chunk_bytes(1, 8), 1u << 20);
  EXPECT_EQ(auto_chunk_bytes(2, 8), 1u << 20);
  EXPECT_EQ(auto_chunk_bytes(8, 8), 1u << 20);
  EXPECT_EQ(auto_chunk_bytes(9, 8), 512u << 10);
  EXPECT_EQ(auto_chunk_bytes(16, 8), 512u << 10);
  EXPECT_EQ(auto_chunk_bytes(17, 8), 256u << 10);
  EXPECT_EQ(auto_chunk_bytes(4096, 8), 256u << 10);
  EXPECT_EQ(auto_chunk_bytes(2, 64), 512u << 10);
  EXPECT_EQ(auto_chunk_bytes(2, 1024), 256u << 10);
}

// 2 planes per rank: each context binds 2 x 144 EV source ports.
TEST(Collectives, EveryCollectiveTypeAndOpOnTwoRanks) {
  run_matrix({.ranks = 2, .port = 5800, .ev_port_base = 6000});
}
TEST(Collectives, EveryCollectiveTypeAndOpOnThreeRanks) {
  run_matrix({.ranks = 3, .port = 5810, .ev_port_base = 6600});
}
TEST(Collectives, EveryCollectiveTypeAndOpOnFourRanks) {
  run_matrix({.ranks = 4, .port = 5820, .ev_port_base = 7500});
}
// Each rank with 2 engine threads: its QPs (one per peer) sit in both, each thread with its
// own ports (UDP 5900-5905, EV 16000-17727).
TEST(Collectives, EveryCollectiveTypeAndOpOnThreeRanksOfTwoThreads) {
  run_matrix({.ranks = 3, .port = 5900, .ev_port_base = 16000, .threads = 2});
}
TEST(Collectives, EveryCollectiveTypeAndOpOnEightRanks) {
  run_matrix({.ranks = 8, .port = 5830, .ev_port_base = 8700});
}

}  // namespace
}  // namespace mrc::coll

namespace mrc::coll {
namespace {

// Every rank of a ring queues its sends (to both neighbours) before its receives, each message
// many times larger than the staging slots, so no send can finish before the peer receives:
// queued together (PointToPoint) they complete, and every byte is the sender's.
TEST(Collectives, SendsQueuedBeforeReceivesNeverDeadlock) {
  GroupConfig g{.ranks = 3, .port = 5870, .ev_port_base = 2000};
  Group group(g, "p2p");
  ASSERT_TRUE(group.ok());
  const size_t bytes = 13 * g.slots * g.chunk_bytes + 77;  // and a short last chunk
  auto pattern = [&](int from, int to) {
    std::vector<uint8_t> v(bytes);
    for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(from * 31 + to * 7 + i * 13);
    return v;
  };
  group.run([&](int rank, Communicator& c) {
    const int next = (rank + 1) % 3, previous = (rank + 2) % 3;
    const auto to_next = pattern(rank, next), to_previous = pattern(rank, previous);
    std::vector<uint8_t> from_next(bytes), from_previous(bytes);
    PointToPoint& p2p = c.point_to_point();
    c.begin("ring exchange");
    p2p.add_send(to_next.data(), bytes, next);
    p2p.add_send(to_previous.data(), bytes, previous);
    p2p.add_receive(from_previous.data(), bytes, previous);
    p2p.add_receive(from_next.data(), bytes, next);
    std::vector<PointToPoint::Ticket> done;
    while (!p2p.idle()) {
      auto moved = p2p.step(done);
      ASSERT_TRUE(moved.ok()) << moved.error().message;
      auto r = c.progress(!moved.value());
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
    EXPECT_EQ(done.size(), 4u);
    EXPECT_TRUE(from_previous == pattern(previous, rank)) << "rank " << rank;
    EXPECT_TRUE(from_next == pattern(next, rank)) << "rank " << rank;
  });
  group.close();
}

}  // namespace
}  // namespace mrc::coll
