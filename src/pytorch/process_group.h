// The torch.distributed backend "mrc": a c10d::ProcessGroup (PyTorch 1.13's API) whose
// collectives run on the mrc collectives library (src/collectives), so every tensor a rank sends
// is sprayed over all of its planes and survives a plane failure.
//
// Threading. A Communicator's calls block and are not thread-safe, and torch expects every
// collective to return at once with a Work. So each process group owns one worker thread that
// runs the group's operations one after another in the order they were issued (the order every
// rank issues them in); the calling thread only checks arguments (errors for wrong devices,
// dtypes, sizes or operators are thrown at once, as c10::Error) and queues the operation. The
// worker completes the Work and its Future (DDP chains its gradient hook on the Future), or fails
// both with the communicator's error. Sends and receives are the exception to one-at-a-time: a
// run of them in the queue (isend/irecv, batch_isend_irecv) moves side by side, and the worker
// takes in sends and receives queued while it runs them, so a rank that sends first and
// receives second never waits for a peer doing the same (coll::PointToPoint). Plane statistics and
// plane up/down go to the mrc Context, which is thread-safe.
//
// A failed communicator (a rank died, a timeout, mismatched calls) is released by the worker at
// once: its threads stop and its ports are free, so the process can destroy the group and form a
// new one even while Python still holds references to this one (a traceback does). Every later
// call fails with the first error.
//
// Rendezvous goes through the c10d::Store torch passes in (a PrefixStore per group), adapted to
// mrc's Store interface (set; get = wait + get).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "collectives/communicator.h"

namespace mrc::torchpg {

// What the Python side (python/mrc_torch/__init__.py) reads from the environment.
struct BackendOptions {
  // The rank's host settings (host/options.h: planes, ports of its slot, backend, threads,
  // secure mode, metrics, ...), from the MRC_* variables of the table every front door shares.
  ContextOptions context;
  std::chrono::milliseconds timeout{30 * 60 * 1000};  // no progress for this long fails a call
  std::chrono::milliseconds peer_timeout{8000};  // a peer silent this long is gone (retry_exp_for)
  uint32_t chunk_bytes = 0;                      // 0: coll::auto_chunk_bytes
  uint32_t slots = 8;
  uint32_t mtu_bytes = 4096;                          // payload per packet (QpConfig::mtu_bytes)
  PathPolicyKind path_policy = PathPolicyKind::kP2c;  // QpConfig::path_policy (MRC_PATH_POLICY)
};

// One plane's counters (mrc::UdpPlaneStats) for Python.
struct PlaneCounters {
  uint64_t packets_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t packets_received = 0;
  uint64_t bytes_received = 0;
  uint64_t send_errors = 0;
  bool up = true;
};

// A queued operation: completes from the worker thread; its Future holds the output tensors.
class WorkMrc final : public c10d::Work {
 public:
  WorkMrc(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // Marks the Work finished (with `error` if not null) and completes the Future.
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class ProcessGroupMrc final : public c10d::ProcessGroup {
 public:
  // Opens this rank's mrc Context and connects to every other rank through `store` (blocks
  // until all ranks have come, or throws after options.timeout).
  ProcessGroupMrc(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                  BackendOptions options);
  // Runs what is queued, then closes the communicator (the closing handshake with the peers).
  ~ProcessGroupMrc() override;

  const std::string getBackendName() const override { return "mrc"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // This rank's planes: count, addresses, counters since the group was created, and taking a
  // plane down or up locally (as if its link failed; the peers learn it from the engine).
  int planes() const { return static_cast<int>(options_.context.planes.size()); }
  const std::vector<std::string>& plane_addresses() const { return options_.context.planes; }
  PlaneCounters plane_stats(int plane) const;
  void set_plane_up(int plane, bool up);

 private:
  using Task = std::function<void(coll::Communicator&)>;
  struct PointToPointOp {
    bool send = false;
    int peer = 0;
    at::Tensor tensor;  // what the caller passed
    at::Tensor buffer;  // contiguous: `tensor` itself, or a copy written back after a receive
  };
  struct Item {
    c10::intrusive_ptr<WorkMrc> work;
    Task task;                          // a collective, or
    std::optional<PointToPointOp> p2p;  // a send or a receive
  };
  // Queues `task` for the worker; the Work completes when it has run (failed if it threw).
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                         Task task);
  c10::intrusive_ptr<c10d::Work> enqueue_point_to_point(c10d::OpType type,
                                                        std::vector<at::Tensor> outputs,
                                                        PointToPointOp op);
  void run_worker();
  // Runs `first` and every send and receive queued behind it, side by side, until all are done.
  void run_point_to_point(Item first);
  // The next queued item if it is a send or a receive.
  std::optional<Item> next_point_to_point();
  void check_plane(int plane) const;
  // After an operation: if the communicator has failed, keeps its error and releases it.
  void release_if_failed();
  // The error for an operation queued after the communicator failed.
  std::exception_ptr failed_error() const;

  BackendOptions options_;
  std::unique_ptr<coll::Store> store_;
  std::unique_ptr<coll::Communicator> comm_;  // null once failed; reset under mutex_
  std::string failure_;                       // why, once comm_ is released

  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace mrc::torchpg
