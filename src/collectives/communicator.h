// Collective communication over MRC: a group of ranks (processes or threads, on one host or
// many), each with its own mrc Context over its host's planes and one connected queue pair to
// every other rank. Every byte moves as RDMA WRITE(-with-immediate) into the transport's
// registered receive slots (transport.h), so each transfer is sprayed over all planes and a
// failed plane is routed around by the engine without the collective noticing.
//
// All calls are blocking, made by every rank in the same order with matching arguments (as in
// NCCL and MPI). Counts are in elements. Out-of-place and in-place both work:
//   all_reduce      in-place: send == recv
//   reduce_scatter  send holds ranks() * recv_count; in-place: send + rank() * recv_count == recv
//   all_gather      recv holds ranks() * send_count; in-place: recv + rank() * send_count == send
//   broadcast       `send` is read at the root only; in-place: send == recv
//   reduce          `recv` is written at the root only; in-place: send == recv
//   all_to_all      block j of `send` goes to rank j, block i of `recv` comes from rank i;
//                   in-place: send == recv
//   send / recv     point to point; a large message needs the peer to be receiving (rendezvous)
// Errors are values: a peer that vanished, a failed queue pair, a wait that made no progress
// for `timeout`, or ranks that called different collectives. After an error the communicator
// is failed and every later call returns the same error.
//
// Creation is a rendezvous through a Store (store.h): each rank announces itself under
// "<prefix>/hello/<rank>" (world size, pid, host) and checks that every rank agrees on the
// world size and that no rank is claimed twice; then it publishes, per peer, its connection
// information and staging keys under "<prefix>/conn/<from>/<to>", reads its peers', connects,
// and waits until every rank is connected.
//
// Failures reach every rank (liveness.h): a rank that fails publishes why under
// "<prefix>/failed", and every rank watches that key while it waits, so a rank that died is
// reported on every rank within the queue pairs' retry budget (about 8.6 s by default; see
// retry_exp_for) plus a fraction of a second, whether or not a rank had traffic to it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "collectives/liveness.h"
#include "collectives/point_to_point.h"
#include "collectives/store.h"
#include "collectives/transport.h"
#include "collectives/types.h"
#include "mrc/mrc.hpp"

namespace mrc::coll {

// The staging slot size for chunk_bytes 0: 1 MiB while the staging memory stays within
// kAutoStagingBytes, halved as ranks (or slots) grow, never below 256 KiB. Larger slots keep
// more bytes in flight per peer (slots x chunk): at 256 KiB, 2 MiB is near the bandwidth-delay
// product of a loaded loopback or LAN plane (docs/BENCHMARKS.md, "The staging chunk").
inline constexpr uint64_t kAutoStagingBytes = uint64_t{128} << 20;
uint32_t auto_chunk_bytes(int ranks, uint32_t slots);

struct CommOptions {
  int rank = 0;
  int ranks = 1;
  // This rank's planes (one address per plane, the same number on every rank), its UDP receive
  // port and its EV source ports [ev_port_base, ev_port_base + ev_source_ports(planes)).
  // Ranks sharing a host need distinct ports: see rank_ports().
  ContextOptions context;
  // Staging slot size; memory: ranks x 2 x slots x chunk. 0: auto_chunk_bytes(ranks, slots).
  uint32_t chunk_bytes = 0;
  uint32_t slots = 8;  // staging slots per peer and direction (>= 4)
  // kAuto's all_reduce of at most this many bytes uses recursive doubling (log2(ranks) rounds
  // of latency), larger ones the ring. Measured (BENCHMARKS.md, "Small all-reduce"): recursive
  // doubling is fastest at 2 and 4 ranks up to 64-128 KiB, the ring from about 1-2 MiB.
  uint64_t small_max_bytes = 128 << 10;
  std::chrono::milliseconds timeout{30000};  // a wait without progress for this long fails
  WaitReports reports;         // where, and after how long, a wait without progress is reported
  std::string prefix = "mrc";  // store keys; unique per communicator and store
  // The thread that runs the collectives also runs the datapath while it waits
  // (ContextOptions::caller_progress), rather than waking the context's progress thread.
  bool caller_progress = true;
  QpConfig qp = default_qp_config();

  static QpConfig default_qp_config();
};

// Ports for local rank `local_rank` of a host, for a context of context.threads threads (set
// it first): receive ports base_port + local_rank * threads on, and a disjoint EV source-port
// range per rank (threads * ev_source_ports(planes) ports) starting at ev_port_base.
void rank_ports(ContextOptions& context, uint16_t base_port, uint16_t ev_port_base, int local_rank);

// How long a queue pair with `qp`'s ACK timeout and linear retries keeps retrying, unanswered,
// before it fails (while the measured RTT stays below the ACK timeout), and the smallest
// exponential retry count for which that lasts at least `silence`.
std::chrono::milliseconds retry_budget(const QpConfig& qp);
uint8_t retry_exp_for(const QpConfig& qp, std::chrono::milliseconds silence);

enum class AllReduceAlgorithm : uint8_t {
  kAuto,    // recursive doubling up to CommOptions::small_max_bytes, ring above
  kRing,    // reduce-scatter + all-gather around a ring, pipelined in chunks: bandwidth-optimal
  kDirect,  // every rank sends its vector to every other and reduces locally: one round
  // log2(n) rounds of one message each way, partners at distance 1, 2, 4, ... (recursive.cc);
  // ranks past a power of two fold into one below it first
  kRecursiveDoubling,
};
const char* to_string(AllReduceAlgorithm algorithm);

class Communicator {
 public:
  // Opens a context for this rank, connects to every peer through `store`; fails after
  // options.timeout if some rank does not show up.
  static Result<std::unique_ptr<Communicator>, Error> create(Store& store,
                                                             const CommOptions& options);
  // Drains outstanding writes and waits (through the store) until every rank has; see close().
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  Context& context() { return *context_; }
  // Whether the communicator has failed; every later call returns failure().
  bool failed() const { return transport_->failed(); }
  const Error& failure() const { return transport_->failure(); }

  Result<Ok, Error> all_reduce(const void* send, void* recv, size_t count, DataType type,
                               ReduceOp op,
                               AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto);
  Result<Ok, Error> reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type,
                                   ReduceOp op);
  Result<Ok, Error> all_gather(const void* send, void* recv, size_t send_count, DataType type);
  Result<Ok, Error> broadcast(const void* send, void* recv, size_t count, DataType type, int root);
  Result<Ok, Error> reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                           int root);
  Result<Ok, Error> all_to_all(const void* send, void* recv, size_t count_per_rank, DataType type);
  Result<Ok, Error> barrier();
  Result<Ok, Error> send(const void* data, size_t count, DataType type, int peer);
  Result<Ok, Error> recv(void* data, size_t count, DataType type, int peer);

  // Non-blocking point to point (point_to_point.h): queue messages, then step() them and call
  // progress() between steps (blocking when nothing moved) until the ones wanted are done.
  // begin() names the operation for wait reports and timeouts.
  PointToPoint& point_to_point() { return *p2p_; }
  void begin(const char* operation) { transport_->begin(operation); }
  Result<Ok, Error> progress(bool block) { return transport_->progress(block); }

  // Waits until every write of this rank has completed, then until every rank has done the
  // same (through the store), so no rank tears down a connection a peer still needs. Called by
  // the destructor if not before; skipped (returns the failure) on a failed communicator.
  Result<Ok, Error> close();
  // Gives up without the closing handshake (after an error, or when this rank must leave now);
  // peers still using this rank will see it vanish.
  void abort() { closed_ = true; }

 private:
  Communicator() = default;
  Result<Ok, Error> connect_all(Store& store, const CommOptions& options);
  Result<Ok, Error> check_world(Store& store, const CommOptions& options);
  Result<Ok, Error> store_barrier(const std::string& name);
  // Fails the communicator outside the transport (rendezvous, closing handshake): publishes it.
  Error publish_failure(const Error& error);
  Result<Ok, Error> check_root(int root) const;
  Result<Ok, Error> check_peer(const char* call, int peer) const;
  Result<Ok, Error> finish_point_to_point();
  Result<Ok, Error> all_reduce_direct(const uint8_t* send, uint8_t* recv, size_t count,
                                      DataType type, ReduceOp op);
  Result<Ok, Error> direct_round(const uint8_t* send, uint8_t* recv, size_t count, DataType type,
                                 ReduceOp op, uint64_t chunk);
  Result<Ok, Error> all_reduce_recursive(const uint8_t* send, uint8_t* recv, size_t count,
                                         DataType type, ReduceOp op);
  Result<Ok, Error> recursive_chunk(uint8_t* acc, size_t elements, DataType type, ReduceOp op);
  Result<Ok, Error> exchange_step(int peer, uint8_t* acc, size_t elements, DataType type,
                                  ReduceOp op, bool send_first);
  // One message to `peer` copied through a send slot, waiting for a free one.
  Result<Ok, Error> send_copy(int peer, const uint8_t* data, size_t length);
  // The next message from `peer`, waiting for it; a length other than `length` is a mismatch.
  Result<std::span<const uint8_t>, Error> receive_exact(int peer, size_t length);

  int rank_ = 0;
  int ranks_ = 1;
  CommOptions options_;
  Store* store_ = nullptr;
  std::unique_ptr<FailureBoard> board_;
  bool closed_ = false;
  std::unique_ptr<Context> context_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<PointToPoint> p2p_;
  std::unique_ptr<uint8_t[]> scratch_;  // one chunk, for in-place direct all-reduce
};

}  // namespace mrc::coll
