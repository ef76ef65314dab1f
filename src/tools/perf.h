// `mrc perf`: the bandwidth/latency tool (in the spirit of ib_write_bw and iperf3) over the UDP
// datapath. A server and a client set up queue pairs over TCP, then the client (and with
// --bidir the server too) writes messages as RDMA WRITE-with-immediate; live per-interval lines
// show total and per-plane throughput; the summary gives bandwidth, message rate, latency
// percentiles, per-plane and per-EV figures; --verify checks every byte at the receiver.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "host/options.h"
#include "io/device.h"

namespace mrc::tools {

struct PerfOptions {
  bool server = false;
  std::string connect;  // client: the server's address (its OOB TCP listener)
  uint16_t oob_port = 18515;
  std::vector<std::string> planes{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
  // 0: the defaults below, which keep a server and a client on the same addresses (loopback)
  // apart at any thread count: a server of T threads uses ports 4791 .. 4791 + T - 1.
  uint16_t port = 0;  // 0: 4791 for the server, 4791 + 16 (kMaxDeviceThreads) for the client
  uint16_t ev_port_base =
      0;              // 0: 50000 for the server, after 16 server threads' EV ranges for the client
  uint64_t size = 0;  // 0: 1 MiB, or for --pingpong 8 bytes (64 KiB with --sweep-sizes)
  bool sweep_sizes = false;
  // --pingpong: each side writes-with-immediate when it sees the other's (ib_write_lat's
  // pattern); the client times each round trip, after `warmup` exchanges per size.
  bool pingpong = false;
  uint64_t warmup = 100;
  std::string samples_file;  // --samples: every timed latency, as CSV
  uint64_t bytes = 0;
  double duration_s = 0;
  uint64_t iterations = 0;
  uint32_t qps = 1;
  uint32_t depth = 0;         // 0: 16, or 1 with --pingpong
  uint64_t buffer_bytes = 0;  // --buffer: memory the messages cycle through (0: one area each)
  bool bidir = false;
  bool verify = false;
  std::vector<std::string> fail_plane;  // "P@T" or "P@T+D"
  std::vector<std::string> flap_plane;  // "P:DOWN_FOR:EVERY" (mrc::PlaneFlap)
  double drop = 0;
  double delay_us = 0;
  double reorder = 0;
  double interval_s = 1;
  bool json = false;
  bool once = false;
  std::string cc = "nscc";
  std::string path_policy = "p2c";  // QpConfig::path_policy (core/path_policy.h)
  uint32_t ev_count = 128;
  uint32_t window_kib = 2048;
  uint32_t mtu = 0;             // QpConfig::mtu_bytes (0: from the planes' interfaces)
  uint32_t ev_burst = 0;        // QpConfig::ev_burst_packets (0: the datapath's default)
  uint32_t ack_every = 0;       // QpConfig::ack_every_packets (0: the datapath's default)
  double target_delay_us = -1;  // NsccConfig::target_delay_ns; < 0: the datapath's default
  bool gso = true;              // UdpHostConfig::gso and ::gro
  // The host settings taken as flags (tools/host_flags.h): threads (QP q on shard q %
  // threads), busy-poll-us, backend, srv6-paths, secure, key-file. Planes, ports, GSO, drop and
  // metrics are perf's own flags above and below (a side's default ports, --no-gso, impairments,
  // a metrics endpoint fed from its loop).
  host::Options host;
  uint16_t metrics_port = 0;  // 0: no Prometheus endpoint
  std::string metrics_bind = "127.0.0.1";
};

void add_perf_options(CLI::App& app, PerfOptions& options);
int run_perf(const PerfOptions& options);

}  // namespace mrc::tools
