// `mrc allreduce-perf` / `mrc coll-perf` (see coll_perf.h). One Bench per rank process: a
// communicator, a send and a receive buffer of the largest size, the size loop, the check
// against a locally computed reference; rank 0 gathers the slowest time and the total of wrong
// elements through the communicator itself and prints. The launcher forks the local ranks
// before any thread exists and kills the rest if one fails, so a failure never hangs the run.
#include "tools/coll_perf.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "collectives/communicator.h"
#include "io/device.h"
#include "io/netdev.h"
#include "tools/host_flags.h"
#include "tools/host_memory.h"

namespace mrc::tools {

namespace {

using coll::Communicator;
using coll::DataType;
using coll::ReduceOp;
using coll::store_value;
using nlohmann::json;

enum class Kind { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll };

struct CollectiveInfo {
  const char* name;
  Kind kind;
};
constexpr CollectiveInfo kCollectives[] = {
    {"allreduce", Kind::kAllReduce}, {"reducescatter", Kind::kReduceScatter},
    {"allgather", Kind::kAllGather}, {"broadcast", Kind::kBroadcast},
    {"reduce", Kind::kReduce},       {"alltoall", Kind::kAllToAll}};

bool reduces(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduceScatter || k == Kind::kReduce;
}
bool per_rank_blocks(Kind k) {
  return k == Kind::kReduceScatter || k == Kind::kAllGather || k == Kind::kAllToAll;
}
bool has_root(Kind k) {
  return k == Kind::kBroadcast || k == Kind::kReduce;
}

// nccl-tests' bus bandwidth factors: what each rank's link carries relative to the size.
double bus_factor(Kind k, int n) {
  const double ranks = n;
  switch (k) {
    case Kind::kAllReduce:
      return 2 * (ranks - 1) / ranks;
    case Kind::kReduceScatter:
    case Kind::kAllGather:
    case Kind::kAllToAll:
      return (ranks - 1) / ranks;
    case Kind::kBroadcast:
    case Kind::kReduce:
      return 1;
  }
  return 1;
}

// Input element i of `rank`: small integers (sum/avg), +-1 and 2 (prod) or -50..49, so that
// every reduction is exact in every type, whatever order the algorithm reduces in.
double input_value(ReduceOp op, int rank, uint64_t i) {
  const int64_t k = static_cast<int64_t>(i % 1000);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<double>((int64_t{rank} * 7 + k * 3) % 11);
    case ReduceOp::kProd:
      return (static_cast<uint64_t>(rank) + i) % 3 == 0
                 ? 1.0
                 : ((static_cast<uint64_t>(rank) + i) % 3 == 1 ? 2.0 : -1.0);
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return static_cast<double>((int64_t{rank} * 13 + k * 7) % 100 - 50);
  }
  return 0;
}

void fill(DataType type, ReduceOp op, int rank, uint64_t first, uint8_t* out, size_t count) {
  const size_t e = coll::size_of(type);
  for (size_t i = 0; i < count; ++i)
    store_value(type, out + i * e, input_value(op, rank, first + i));
}

struct Measured {
  double time_us = 0;  // this rank's average
  uint64_t wrong = 0;  // elements of this rank's output that differ from the reference
};

struct Row {
  uint64_t bytes = 0;
  uint64_t count = 0;
  Measured placement[2];  // out of place, in place
};

class Bench {
 public:
  Bench(Communicator& c, const CollPerfOptions& o, Kind kind, DataType type, ReduceOp op,
        coll::AllReduceAlgorithm algorithm)
      : c_(c),
        o_(o),
        kind_(kind),
        type_(type),
        op_(op),
        algorithm_(algorithm),
        e_(coll::size_of(type)),
        n_(c.ranks()),
        r_(c.rank()) {
    send_.resize(o.max_bytes + 64);
    recv_.resize(o.max_bytes + 64);
  }
  // Elements per rank block (per_rank_blocks) or in the buffer, for a size in bytes.
  uint64_t unit_count(uint64_t bytes) const {
    return per_rank_blocks(kind_) ? bytes / e_ / static_cast<uint64_t>(n_) : bytes / e_;
  }
  size_t element_bytes() const { return e_; }
  uint64_t total_count(uint64_t unit) const {
    return per_rank_blocks(kind_) ? unit * static_cast<uint64_t>(n_) : unit;
  }
  Result<Measured, Error> measure(uint64_t unit, bool in_place);

 private:
  Result<Ok, Error> run(uint64_t unit, bool in_place);
  void fill_inputs(uint64_t unit, bool in_place);
  uint64_t count_wrong(uint64_t unit, bool in_place);
  void expected(uint64_t unit, uint64_t first, uint8_t* out, size_t count) const;

  Communicator& c_;
  const CollPerfOptions& o_;
  Kind kind_;
  DataType type_;
  ReduceOp op_;
  coll::AllReduceAlgorithm algorithm_;
  size_t e_;
  int n_;
  int r_;
  std::vector<uint8_t> send_, recv_;
};

Result<Ok, Error> Bench::run(uint64_t unit, bool in_place) {
  uint8_t* recv = recv_.data();
  const size_t block = unit * e_;
  switch (kind_) {
    case Kind::kAllReduce:
      return c_.all_reduce(in_place ? recv : send_.data(), recv, unit, type_, op_, algorithm_);
    case Kind::kReduceScatter:
      return in_place
                 ? c_.reduce_scatter(recv, recv + static_cast<size_t>(r_) * block, unit, type_, op_)
                 : c_.reduce_scatter(send_.data(), recv, unit, type_, op_);
    case Kind::kAllGather:
      return c_.all_gather(in_place ? recv + static_cast<size_t>(r_) * block : send_.data(), recv,
                           unit, type_);
    case Kind::kBroadcast:
      return c_.broadcast(in_place ? recv : send_.data(), recv, unit, type_, o_.root);
    case Kind::kReduce:
      return c_.reduce(in_place ? recv : send_.data(), recv, unit, type_, op_, o_.root);
    case Kind::kAllToAll:
      return c_.all_to_all(in_place ? recv : send_.data(), recv, unit, type_);
  }
  return Ok{};
}

// The send buffer's layout: element i of rank q's input is input_value(q, i).
void Bench::fill_inputs(uint64_t unit, bool in_place) {
  const ReduceOp pattern = reduces(kind_) ? op_ : ReduceOp::kMin;
  const uint64_t send_count = kind_ == Kind::kAllGather ? unit : total_count(unit);
  uint8_t* into = in_place ? recv_.data() : send_.data();
  if (in_place && kind_ == Kind::kAllGather) into += static_cast<size_t>(r_) * unit * e_;
  fill(type_, pattern, r_, 0, into, send_count);
  if (in_place) return;
  std::memset(recv_.data(), 0, total_count(unit) * e_);
}

// Elements [first, first + count) of this rank's expected output.
void Bench::expected(uint64_t unit, uint64_t first, uint8_t* out, size_t count) const {
  const ReduceOp pattern = reduces(kind_) ? op_ : ReduceOp::kMin;
  if (kind_ == Kind::kAllGather || kind_ == Kind::kAllToAll) {
    for (size_t i = 0; i < count; ++i) {
      const uint64_t at = first + i, block = at / unit;
      const uint64_t index =
          kind_ == Kind::kAllGather ? at % unit : static_cast<uint64_t>(r_) * unit + at % unit;
      store_value(type_, out + i * e_, input_value(pattern, static_cast<int>(block), index));
    }
    return;
  }
  if (kind_ == Kind::kBroadcast) return fill(type_, pattern, o_.root, first, out, count);
  const uint64_t offset = kind_ == Kind::kReduceScatter ? static_cast<uint64_t>(r_) * unit : 0;
  std::vector<uint8_t> other(count * e_);
  fill(type_, op_, 0, offset + first, out, count);
  for (int q = 1; q < n_; ++q) {
    fill(type_, op_, q, offset + first, other.data(), count);
    coll::reduce_into(type_, op_, out, other.data(), count);
  }
  coll::finalize_average(type_, op_, out, count, n_);
}

uint64_t Bench::count_wrong(uint64_t unit, bool in_place) {
  if (kind_ == Kind::kReduce && r_ != o_.root) return 0;
  const bool scatter = kind_ == Kind::kReduceScatter;
  const uint64_t count = scatter ? unit : total_count(unit);
  const uint8_t* got =
      recv_.data() + (scatter && in_place ? static_cast<size_t>(r_) * unit * e_ : 0);
  std::vector<uint8_t> want;
  uint64_t wrong = 0;
  constexpr size_t kBatch = 1 << 16;
  for (uint64_t first = 0; first < count; first += kBatch) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBatch, count - first));
    want.resize(n * e_);
    expected(unit, first, want.data(), n);
    for (size_t i = 0; i < n; ++i)
      wrong += std::memcmp(got + (first + i) * e_, want.data() + i * e_, e_) != 0;
  }
  return wrong;
}

Result<Measured, Error> Bench::measure(uint64_t unit, bool in_place) {
  Measured m;
  fill_inputs(unit, in_place);
  for (int i = 0; i < o_.warmup; ++i) {
    auto r = run(unit, in_place);
    if (!r.ok()) return Err{r.error()};
  }
  auto b = c_.barrier();
  if (!b.ok()) return Err{b.error()};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o_.iters; ++i) {
    auto r = run(unit, in_place);
    if (!r.ok()) return Err{r.error()};
  }
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  m.time_us = o_.iters > 0 ? elapsed.count() / o_.iters : 0;
  if (!o_.check) return m;
  fill_inputs(unit, in_place);
  auto r = run(unit, in_place);
  if (!r.ok()) return Err{r.error()};
  m.wrong = count_wrong(unit, in_place);
  return m;
}

// ---- per-rank run -----------------------------------------------------------------------

struct Setup {
  Kind kind;
  DataType type;
  ReduceOp op;
  coll::AllReduceAlgorithm algorithm;
};

void print_header(const CollPerfOptions& o, const Setup& s, int ranks) {
  std::printf("# mrc %s-perf: %d ranks, planes", o.collective.c_str(), ranks);
  for (size_t i = 0; i < o.planes.size(); ++i)
    std::printf("%s%s", i ? "," : " ", o.planes[i].c_str());
  std::printf("; %d iters, %d warmup, chunk %u KiB x %u slots, mtu %u%s%s\n", o.iters, o.warmup,
              o.chunk_kib != 0 ? o.chunk_kib : coll::auto_chunk_bytes(ranks, o.slots) >> 10,
              o.slots, o.mtu_bytes, s.kind == Kind::kAllReduce ? ", algorithm " : "",
              s.kind == Kind::kAllReduce ? coll::to_string(s.algorithm) : "");
  std::printf("#%75s%38s\n", "out-of-place", "in-place");
  std::printf("#%11s %12s %9s %7s %5s %9s %8s %8s %6s %9s %8s %8s %6s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
              "#wrong");
  std::printf("#%11s %12s %9s %7s %5s %9s %8s %8s %6s %9s %8s %8s %6s\n", "(B)", "(elements)", "",
              "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

double algbw_gbps(const Row& row, int p) {
  const double t = row.placement[p].time_us;
  return t > 0 ? static_cast<double>(row.bytes) / (t * 1e3) : 0;
}

void print_row(const Row& row, const Setup& s, const CollPerfOptions& o, int ranks) {
  std::printf(" %11llu %12llu %9s %7s %5d", static_cast<unsigned long long>(row.bytes),
              static_cast<unsigned long long>(row.count), coll::to_string(s.type),
              reduces(s.kind) ? coll::to_string(s.op) : "none", has_root(s.kind) ? o.root : -1);
  for (int p = 0; p < 2; ++p)
    std::printf(" %9.1f %8.3f %8.3f %6llu", row.placement[p].time_us, algbw_gbps(row, p),
                algbw_gbps(row, p) * bus_factor(s.kind, ranks),
                static_cast<unsigned long long>(row.placement[p].wrong));
  std::printf("\n");
  std::fflush(stdout);
}

json to_json(const std::vector<Row>& rows, const Setup& s, const CollPerfOptions& o, int ranks,
             uint64_t wrong_total, double busbw_avg) {
  json out = json::array();
  for (const Row& row : rows) {
    json r = {{"size", row.bytes}, {"count", row.count}};
    const char* names[2] = {"out_of_place", "in_place"};
    for (int p = 0; p < 2; ++p)
      r[names[p]] = {{"time_us", row.placement[p].time_us},
                     {"algbw_gbps", algbw_gbps(row, p)},
                     {"busbw_gbps", algbw_gbps(row, p) * bus_factor(s.kind, ranks)},
                     {"wrong", row.placement[p].wrong}};
    out.push_back(r);
  }
  return {{"collective", o.collective},
          {"ranks", ranks},
          {"dtype", coll::to_string(s.type)},
          {"op", reduces(s.kind) ? coll::to_string(s.op) : "none"},
          {"root", has_root(s.kind) ? o.root : -1},
          {"algorithm", coll::to_string(s.algorithm)},
          {"planes", o.planes},
          {"iters", o.iters},
          {"warmup", o.warmup},
          {"mtu_bytes", o.mtu_bytes},
          {"backend", mrc::to_string(o.host.context.backend)},
          {"threads", o.host.context.threads},
          {"checked", o.check},
          {"rows", out},
          {"wrong", wrong_total},
          {"avg_busbw_gbps", busbw_avg},
          {"ok", wrong_total == 0}};
}

// Measures one size on every rank; rank 0's row holds the slowest time and all wrong elements.
Result<Row, Error> measure_row(Communicator& c, Bench& bench, uint64_t bytes) {
  Row row;
  const uint64_t unit = bench.unit_count(bytes);
  row.count = bench.total_count(unit);
  row.bytes = row.count * bench.element_bytes();
  double times[2];
  int64_t wrong[2];
  for (int p = 0; p < 2; ++p) {
    auto m = bench.measure(unit, p == 1);
    if (!m.ok()) return Err{m.error()};
    times[p] = m.value().time_us;
    wrong[p] = static_cast<int64_t>(m.value().wrong);
  }
  auto t = c.all_reduce(times, times, 2, DataType::kFloat64, ReduceOp::kMax);
  if (!t.ok()) return Err{t.error()};
  auto w = c.all_reduce(wrong, wrong, 2, DataType::kInt64, ReduceOp::kSum);
  if (!w.ok()) return Err{w.error()};
  for (int p = 0; p < 2; ++p) row.placement[p] = {times[p], static_cast<uint64_t>(wrong[p])};
  return row;
}

Result<std::unique_ptr<Communicator>, Error> open_communicator(const CollPerfOptions& o,
                                                               coll::Store& store) {
  coll::CommOptions co;
  co.rank = o.rank;
  co.ranks = o.world_size;
  host::Options h = o.host;  // the host flags, with this tool's planes and ports
  h.context.planes = o.planes;
  h.context.port = o.port;
  h.context.ev_port_base = o.ev_port_base;
  if (auto finished = host::finish(h, kFlagSpelling); !finished.ok())  // the key, the families
    return Err{finished.error()};
  co.context = h.context;
  coll::rank_ports(co.context, o.port, o.ev_port_base, o.local_rank >= 0 ? o.local_rank : o.rank);
  co.chunk_bytes = o.chunk_kib << 10;
  co.qp.set_mtu(o.mtu_bytes);
  if (o.ack_every != 0) co.qp.ack_every_packets = o.ack_every;
  co.qp.ev_burst_packets = static_cast<uint16_t>(o.ev_burst);  // 0: the datapath's default
  co.qp.cc = parse_cc_algorithm(o.cc).value();  // the CLI accepts the three names only
  co.qp.path_policy = parse_path_policy(o.path_policy).value();  // likewise the policies' names
  if (o.target_delay_us > 0)
    co.qp.nscc.target_delay_ns = static_cast<int64_t>(o.target_delay_us * 1000);
  co.slots = o.slots;
  co.small_max_bytes = o.small_max_bytes;
  co.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  co.prefix = "mrc-coll-perf";
  return Communicator::create(store, co);
}

int sweep(Communicator& c, const CollPerfOptions& o, const Setup& s) {
  Bench bench(c, o, s.kind, s.type, s.op, s.algorithm);
  if (c.rank() == 0 && !o.json) print_header(o, s, c.ranks());
  std::vector<Row> rows;
  uint64_t wrong_total = 0;
  double busbw_sum = 0;
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
    auto row = measure_row(c, bench, bytes);
    if (!row.ok()) {
      std::fprintf(stderr, "mrc %s-perf: rank %d: %s\n", o.collective.c_str(), c.rank(),
                   row.error().message.c_str());
      return 1;
    }
    rows.push_back(row.value());
    wrong_total += row.value().placement[0].wrong + row.value().placement[1].wrong;
    busbw_sum += algbw_gbps(row.value(), 0) * bus_factor(s.kind, c.ranks());
    if (c.rank() == 0 && !o.json) print_row(row.value(), s, o, c.ranks());
    if (o.step_factor < 2) break;
  }
  const double busbw_avg = rows.empty() ? 0 : busbw_sum / static_cast<double>(rows.size());
  if (c.rank() == 0 && o.json)
    std::cout << to_json(rows, s, o, c.ranks(), wrong_total, busbw_avg).dump(2) << std::endl;
  if (c.rank() == 0 && !o.json) {
    std::printf("# Wrong elements       : %llu %s\n", static_cast<unsigned long long>(wrong_total),
                wrong_total ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %.3f GB/s (out of place)\n", busbw_avg);
  }
  return wrong_total == 0 ? 0 : 1;
}

int run_rank(const CollPerfOptions& o, const Setup& s) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  std::unique_ptr<coll::TcpStoreServer> server;  // rank 0 serves a tcp: store
  if (o.rank == 0 && o.store.rfind("tcp:", 0) == 0) {
    auto started = coll::TcpStoreServer::start(
        static_cast<uint16_t>(std::atoi(o.store.c_str() + o.store.rfind(':') + 1)));
    if (!started.ok()) {
      std::fprintf(stderr, "mrc %s-perf: rank 0: %s\n", o.collective.c_str(),
                   started.error().message.c_str());
      return 1;
    }
    server = std::move(started.value());
  }
  auto store = coll::open_store(o.store, timeout);
  if (!store.ok()) {
    std::fprintf(stderr, "mrc %s-perf: rank %d: %s\n", o.collective.c_str(), o.rank,
                 store.error().message.c_str());
    return 1;
  }
  auto comm = open_communicator(o, *store.value());
  if (!comm.ok()) {
    std::fprintf(stderr, "mrc %s-perf: rank %d: %s\n", o.collective.c_str(), o.rank,
                 comm.error().message.c_str());
    return 1;
  }
  int rc = sweep(*comm.value(), o, s);
  if (rc != 0) comm.value()->abort();
  auto closed = comm.value()->close();
  if (!closed.ok() && rc == 0) {
    std::fprintf(stderr, "mrc %s-perf: rank %d: closing: %s\n", o.collective.c_str(), o.rank,
                 closed.error().message.c_str());
    rc = 1;
  }
  return rc;
}

// Forks the ranks (no thread exists yet), waits, and kills the others when one fails.
int launch_local(CollPerfOptions o, const Setup& s) {
  char directory[] = "/tmp/mrc-coll-perf-XXXXXX";
  if (mkdtemp(directory) == nullptr) {
    std::perror("mrc coll-perf: mkdtemp");
    return 1;
  }
  o.store = std::string("file:") + directory;
  o.world_size = o.local_ranks;
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int r = 0; r < o.local_ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      o.rank = o.local_rank = r;
      const int rc = run_rank(o, s);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(rc);
    }
    if (pid > 0) children.push_back(pid);
  }
  int worst = children.size() == static_cast<size_t>(o.local_ranks) ? 0 : 1;
  for (size_t left = children.size(); left > 0; --left) {
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0) break;
    const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed && worst == 0) {
      for (pid_t other : children)
        if (other != pid) kill(other, SIGKILL);
      for (size_t r = 0; r < children.size(); ++r)
        if (children[r] == pid && !WIFEXITED(status))
          std::fprintf(stderr, "mrc %s-perf: rank %zu died (signal %d)\n", o.collective.c_str(), r,
                       WTERMSIG(status));
    }
    if (failed) worst = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(directory, ec);
  return worst;
}

// Rank and size from mpirun's environment (Open MPI, or any PMI launcher).
void rank_from_environment(CollPerfOptions& o) {
  auto number = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::atoi(v) : -1;
  };
  if (o.rank < 0)
    o.rank =
        number("OMPI_COMM_WORLD_RANK") >= 0 ? number("OMPI_COMM_WORLD_RANK") : number("PMI_RANK");
  if (o.world_size <= 0)
    o.world_size =
        number("OMPI_COMM_WORLD_SIZE") > 0 ? number("OMPI_COMM_WORLD_SIZE") : number("PMI_SIZE");
  if (o.local_rank < 0) o.local_rank = number("OMPI_COMM_WORLD_LOCAL_RANK");
}

// Where this rank is and how it reaches the others: ranks, rendezvous, planes, ports, threads.
void add_rank_options(CLI::App& app, CollPerfOptions& o) {
  app.add_option("--ranks", o.local_ranks, "launch this many ranks as processes on this host")
      ->check(CLI::Range(1, 256));
  app.add_option("--rank", o.rank,
                 "this process's rank (instead of --ranks; default from mpirun's "
                 "OMPI_COMM_WORLD_RANK or PMI_RANK)");
  app.add_option("--world-size", o.world_size,
                 "number of ranks (with --rank; default from OMPI_COMM_WORLD_SIZE or PMI_SIZE)");
  app.add_option("--local-rank", o.local_rank,
                 "rank among those on this host, for port offsets (default: "
                 "OMPI_COMM_WORLD_LOCAL_RANK, else the rank)");
  app.add_option("--store", o.store,
                 "rendezvous store with --rank: file:DIRECTORY (shared by all ranks) or "
                 "tcp:HOST:PORT (rank 0 serves it)");
  app.add_option("--planes", o.planes,
                 "this host's plane addresses, one per plane, same count on every host (default "
                 "127.0.0.1-4)")
      ->delimiter(',');
  app.add_option("--port", o.port,
                 "UDP receive port of local rank 0; local rank i uses the THREADS ports from "
                 "PORT+i*THREADS (default 5791)");
  app.add_option("--ev-port-base", o.ev_port_base,
                 "first EV source port of local rank 0; each local rank takes the next disjoint "
                 "range (default 10000)");
  add_host_flags(app, o.host, {"threads"},
                 "a rank's queue pairs, one per peer, are spread over its threads");
}

// How the ranks' queue pairs move the bytes: congestion control, path policy, secure mode, SACKs,
// bursts, payload, datapath, staging, timeout.
void add_transport_options(CLI::App& app, CollPerfOptions& o) {
  app.add_option("--cc", o.cc,
                 "congestion control of the ranks' queue pairs: nscc (default), aimd or fixed (a 1 "
                 "MiB window)")
      ->check(CLI::IsMember({"nscc", "aimd", "fixed"}));
  app.add_option("--path-policy", o.path_policy,
                 "how the ranks' queue pairs choose among their GOOD EVs: p2c (default: the "
                 "learned score policy), rules (MRC's own), oblivious, reps, health or hedge")
      ->check(CLI::IsMember(path_policy_names()));
  add_host_flags(app, o.host, {"secure", "key-file"}, "every rank alike");
  app.add_option(
         "--target-delay-us", o.target_delay_us,
         "NSCC queueing-delay target in microseconds, 1 or more (default: the collectives', 250)")
      ->check(CLI::Range(1.0, 1e6));
  app.add_option(
         "--ack-every", o.ack_every,
         "the receiver SACKs every this many data packets (1..64; default: the datapath's, " +
             std::to_string(io::kUdpDefaultAckEvery) + ")")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--ev-burst", o.ev_burst,
                 "new data packets per EV before the next EV (1.." +
                     std::to_string(kMaxEvBurstPackets) + "; default: the datapath's, " +
                     std::to_string(io::kUdpDefaultEvBurst) +
                     "): a burst leaves as one UDP GSO send")
      ->check(CLI::Range(1u, uint32_t{kMaxEvBurstPackets}));
  app.add_option(
         "--chunk-kib", o.chunk_kib,
         "staging slot (pipelining chunk) in KiB (default with 8 slots: 1024 up to 8 ranks, "
         "512 up to 16, else 256; more slots, smaller chunks)")
      ->check(CLI::Range(1, 65536));
  app.add_option(
         "--mtu", o.mtu_bytes,
         "payload bytes per packet, 256-9000 (default: 8192 where every plane's interface carries "
         "it with the headers, as a 9000-byte link or loopback does, else 4096 or 1024; every "
         "rank needs the same)")
      ->check(CLI::Range(256, 9000));
  add_host_flags(app, o.host, {"backend", "gso", "srv6-paths", "busy-poll-us"}, "every rank alike");
  app.add_option("--slots", o.slots, "staging slots per peer and direction (default 8)")
      ->check(CLI::Range(4, 1024));
  app.add_option("--small-max-bytes", o.small_max_bytes,
                 "largest all-reduce that -a auto runs with recursive doubling, else the ring "
                 "(default 128K)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("--timeout", o.timeout_s,
                 "seconds without progress before a rank gives up with an error (default 30)");
}

}  // namespace

void add_coll_perf_options(CLI::App& app, CollPerfOptions& o) {
  std::vector<std::string> names;
  for (const CollectiveInfo& c : kCollectives) names.push_back(c.name);
  app.add_option(
         "--coll", o.collective,
         "collective: allreduce (default), reducescatter, allgather, broadcast, reduce, alltoall")
      ->check(CLI::IsMember(names));
  app.add_option("-b,--minbytes", o.min_bytes,
                 "smallest size in bytes, K/M/G suffixes (1024-based) allowed (default 8)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("-e,--maxbytes", o.max_bytes, "largest size in bytes (default 32M)")
      ->transform(CLI::AsSizeValue(false));
  app.add_option("-f,--stepfactor", o.step_factor,
                 "multiply the size by this from one row to the next (default 2; 1: one size)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-d,--dtype", o.dtype,
                 "element type: float32 (float), float64 (double), float16 (half), bfloat16 "
                 "(bf16), int32, int64, uint8");
  app.add_option("-o,--op", o.op,
                 "reduction: sum (default), prod, min, max, avg (reducing collectives only)")
      ->check(CLI::IsMember({"sum", "prod", "min", "max", "avg"}));
  app.add_option("-r,--root", o.root, "root rank of broadcast and reduce (default 0)");
  app.add_option("-n,--iters", o.iters, "timed iterations per size and placement (default 20)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("-w,--warmup", o.warmup, "untimed iterations before them (default 5)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("-c,--check", o.check,
                 "1: check every output element against a reference (#wrong); 0: skip (default 1)");
  app.add_option(
         "-a,--algorithm", o.algorithm,
         "all-reduce algorithm: auto (recursive up to --small-max-bytes, else ring), ring, direct, "
         "recursive (recursive doubling: log2(ranks) rounds of one message each way)")
      ->check(CLI::IsMember({"auto", "ring", "direct", "recursive"}));
  app.add_flag("--json", o.json, "print the result as JSON (rank 0), nothing else on stdout");
  add_rank_options(app, o);
  add_transport_options(app, o);
}

int run_coll_perf(CollPerfOptions o) {
  const auto fail = [&](const std::string& message) {
    std::fprintf(stderr, "mrc %s-perf: %s\n", o.collective.c_str(), message.c_str());
    return 2;
  };
  Setup s{Kind::kAllReduce, DataType::kFloat32, ReduceOp::kSum, coll::AllReduceAlgorithm::kAuto};
  for (const CollectiveInfo& c : kCollectives)
    if (o.collective == c.name) s.kind = c.kind;
  const auto type = coll::parse_data_type(o.dtype);
  if (!type) return fail("unknown --dtype '" + o.dtype + "'");
  s.type = *type;
  s.op = *coll::parse_reduce_op(o.op);
  s.algorithm = o.algorithm == "ring"        ? coll::AllReduceAlgorithm::kRing
                : o.algorithm == "direct"    ? coll::AllReduceAlgorithm::kDirect
                : o.algorithm == "recursive" ? coll::AllReduceAlgorithm::kRecursiveDoubling
                                             : coll::AllReduceAlgorithm::kAuto;
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes)
    return fail("need 0 < --minbytes <= --maxbytes");
  const uint64_t here = o.local_ranks > 0 ? static_cast<uint64_t>(o.local_ranks) : 1;
  if (std::string why = buffers_too_large(
          2 * o.max_bytes * here, "-e/--maxbytes: the ranks' send and receive buffers (" +
                                      std::to_string(here) + " rank(s) here, 2 x maxbytes each)");
      !why.empty())
    return fail(why);
  if (o.planes.empty()) return fail("--planes needs at least one address");
  auto mtu = io::choose_payload_bytes(o.mtu_bytes, o.planes);  // ranks launched here get it
  if (!mtu.ok()) return fail("--mtu: " + mtu.error().message);
  o.mtu_bytes = mtu.value();
  if (o.local_ranks > 0) {
    if (o.root >= o.local_ranks) return fail("--root " + std::to_string(o.root) + " is not a rank");
    return launch_local(o, s);
  }
  rank_from_environment(o);
  if (o.rank < 0 || o.world_size <= 0 || o.rank >= o.world_size)
    return fail(
        "give --ranks N to launch N local ranks, or --rank R --world-size N --store SPEC for each "
        "rank (or run under mpirun with --store)");
  if (o.store.empty()) return fail("--store file:DIRECTORY or tcp:HOST:PORT is needed with --rank");
  if (o.root < 0 || o.root >= o.world_size)
    return fail("--root " + std::to_string(o.root) + " is not a rank");
  return run_rank(o, s);
}

}  // namespace mrc::tools
