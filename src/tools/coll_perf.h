// `mrc allreduce-perf` (alias `mrc coll-perf`): collective bandwidth and correctness in the style
// of nccl-tests' all_reduce_perf. For each size of a sweep (-b, -e, -f) every rank runs the
// collective --warmup times, then --iters times timed, out of place and in place; then once
// more on fresh inputs whose result is checked element by element against a reference
// computed locally (#wrong). Rank 0 prints one row per size: size, count, type, redop, root,
// then time (us, the slowest rank's average), algbw (size / time) and busbw (algbw times the
// collective's bus factor, e.g. 2(n-1)/n for all-reduce) and #wrong for each placement.
//
// Launch: `--ranks N` forks N ranks on this host (each its own process, Context, UDP receive
// port --port + rank and EV source-port range), rendezvous through a file store in a temporary
// directory. Or start each rank yourself with --rank/--world-size and a --store
// (file:DIR on a shared filesystem, or tcp:HOST:PORT served by rank 0); under mpirun the rank
// and size come from Open MPI's (or PMI's) environment. MPI itself is never linked.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "host/options.h"

namespace mrc::tools {

struct CollPerfOptions {
  std::string collective = "allreduce";
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 32 << 20;
  uint64_t step_factor = 2;
  std::string dtype = "float32";
  std::string op = "sum";
  int root = 0;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  bool json = false;
  std::string algorithm = "auto";
  int local_ranks = 0;  // --ranks: fork this many ranks here
  int rank = -1;
  int world_size = 0;
  int local_rank = -1;  // port offset; default: the rank
  std::string store;    // file:DIR or tcp:HOST:PORT
  std::vector<std::string> planes{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
  uint16_t port = 5791;
  uint16_t ev_port_base = 10000;
  uint32_t chunk_kib = 0;  // 0: coll::auto_chunk_bytes
  uint32_t mtu_bytes = 0;  // payload bytes per packet (QpConfig::mtu_bytes); 0: auto
  // The host settings the tool takes as flags (tools/host_flags.h): threads, backend, gso,
  // srv6-paths, busy-poll-us, secure, key-file; its planes and ports are its own flags above.
  host::Options host;
  uint32_t slots = 8;
  std::string cc = "nscc";          // QpConfig::cc: nscc, aimd or fixed
  std::string path_policy = "p2c";  // QpConfig::path_policy (core/path_policy.h)
  double target_delay_us = 0;       // NSCC delay target; 0: the datapath's default
  uint32_t ack_every = 0;           // QpConfig::ack_every_packets; 0: the datapath's default
  uint32_t ev_burst = 0;            // QpConfig::ev_burst_packets; 0: the datapath's default
  uint64_t small_max_bytes = 128 << 10;
  double timeout_s = 30;
};

void add_coll_perf_options(CLI::App& app, CollPerfOptions& options);
int run_coll_perf(CollPerfOptions options);

}  // namespace mrc::tools
