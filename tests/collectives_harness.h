// Test harness for the collectives: a group of ranks as threads in one process, each with its
// own Context (loopback planes 127.0.0.x) and progress thread, meeting through a MemoryStore.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.h"

namespace mrc::coll {

struct GroupConfig {
  int ranks = 2;
  int planes = 2;
  uint16_t port = 5800;
  uint16_t ev_port_base = 6000;
  uint32_t chunk_bytes = 1024;
  uint32_t slots = 4;
  uint64_t small_max_bytes = 256;
  uint32_t threads = 1;  // ContextOptions::threads of every rank
  std::chrono::milliseconds timeout{10000};
  QpConfig qp = CommOptions::default_qp_config();
};

inline CommOptions comm_options(const GroupConfig& g, int rank, const std::string& prefix) {
  CommOptions o;
  o.rank = rank;
  o.ranks = g.ranks;
  for (int p = 0; p < g.planes; ++p) o.context.planes.push_back("127.0.0." + std::to_string(p + 1));
  o.context.threads = g.threads;
  rank_ports(o.context, g.port, g.ev_port_base, rank);
  o.chunk_bytes = g.chunk_bytes;
  o.slots = g.slots;
  o.small_max_bytes = g.small_max_bytes;
  o.timeout = g.timeout;
  o.prefix = prefix;
  o.qp = g.qp;
  return o;
}

// n ranks as threads; each creates its communicator concurrently (the rendezvous needs that).
struct Group {
  MemoryStore store;
  std::vector<std::unique_ptr<Communicator>> comms;

  explicit Group(const GroupConfig& g, const std::string& prefix = "test") {
    comms.resize(static_cast<size_t>(g.ranks));
    std::vector<std::string> errors(comms.size());
    run_ranks(g.ranks, [&](int r) {
      auto c = Communicator::create(store, comm_options(g, r, prefix));
      if (c.ok())
        comms[r] = std::move(c.value());
      else
        errors[r] = c.error().message;
    });
    for (size_t r = 0; r < comms.size(); ++r) EXPECT_TRUE(comms[r] != nullptr) << errors[r];
  }
  bool ok() const {
    for (const auto& c : comms)
      if (!c) return false;
    return true;
  }
  static void run_ranks(int ranks, const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) threads.emplace_back(body, r);
    for (auto& t : threads) t.join();
  }
  void run(const std::function<void(int, Communicator&)>& body) {
    run_ranks(static_cast<int>(comms.size()), [&](int r) { body(r, *comms[r]); });
  }
  // Every rank closes at once (the closing handshake waits for all of them).
  void close() {
    run([](int, Communicator& c) {
      auto r = c.close();
      EXPECT_TRUE(r.ok()) << r.error().message;
    });
  }
};

}  // namespace mrc::coll
