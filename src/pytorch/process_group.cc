// ProcessGroupMrc's life cycle: the store adapter, the rendezvous, the worker thread that runs
// the queued operations in order, Work completion, and the plane controls. The collectives
// themselves (argument checks and the tasks) are in collectives.cc.
// Python.h first: it defines feature macros the C library headers must see.
#include "pytorch/process_group.h"

#include <ATen/core/grad_mode.h>
#include <Python.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace mrc::torchpg {
namespace {

constexpr std::chrono::milliseconds kCloseWait{60'000};

std::string message_of(const std::exception& e) {
  // c10::Error's what() carries a C++ backtrace; the short form is what a user needs.
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  return e.what();
}

// mrc's rendezvous Store on top of torch's (a PrefixStore over the TCPStore or FileStore that
// init_process_group made): get() waits for the key, then reads it.
class TorchStore final : public coll::Store {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  Result<Ok, Error> set(const std::string& key, const std::string& value) override {
    try {
      store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
      return Ok{};
    } catch (const std::exception& e) {
      return fail(Errc::kIo, "store set of \"" + key + "\" failed: " + message_of(e));
    }
  }

  Result<std::string, Error> get(const std::string& key,
                                 std::chrono::milliseconds timeout) override {
    try {
      store_->wait({key}, std::min(timeout, wait_limit_));
      const std::vector<uint8_t> value = store_->get(key);
      return std::string(value.begin(), value.end());
    } catch (const std::exception& e) {
      return fail(Errc::kTimedOut,
                  "store get of \"" + key + "\" failed (a rank did not arrive?): " + message_of(e));
    }
  }

  Result<std::optional<std::string>, Error> try_get(const std::string& key) override {
    try {
      if (!store_->check({key})) return std::optional<std::string>();
      const std::vector<uint8_t> value = store_->get(key);
      return std::optional<std::string>(std::string(value.begin(), value.end()));
    } catch (const std::exception& e) {
      return fail(Errc::kIo, "store get of \"" + key + "\" failed: " + message_of(e));
    }
  }

  // Later gets wait at most `limit` (set before the closing handshake, from one thread).
  void limit_waits(std::chrono::milliseconds limit) { wait_limit_ = limit; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds wait_limit_ = std::chrono::milliseconds::max();

  std::string where() const override { return "the process group's store"; }
};

// Lets other threads take the GIL for this scope if this thread holds it. The worker needs it
// to drop the last reference to a tensor that Python also knew (and to run Python callbacks of
// a Future), so a thread that waits for the worker must not hold it: Python destroys a group
// with the GIL held.
class GilReleasedIfHeld {
 public:
  GilReleasedIfHeld()
      : state_(Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
  ~GilReleasedIfHeld() {
    if (state_ != nullptr) PyEval_RestoreThread(state_);
  }
  GilReleasedIfHeld(const GilReleasedIfHeld&) = delete;
  GilReleasedIfHeld& operator=(const GilReleasedIfHeld&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace

WorkMrc::WorkMrc(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

void WorkMrc::complete(std::exception_ptr error) {
  if (error) {
    finish(error);
    future_->setError(error);
  } else {
    finish();
    future_->markCompleted(c10::IValue(outputs_));
  }
}

ProcessGroupMrc::ProcessGroupMrc(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                 BackendOptions options)
    : c10d::ProcessGroup(rank, size),
      options_(std::move(options)),
      store_(std::make_unique<TorchStore>(store)) {
  TORCH_CHECK(!options_.context.planes.empty(), "mrc: no planes given (MRC_PLANES)");
  coll::CommOptions o;
  o.rank = rank;
  o.ranks = size;
  o.context = options_.context;
  o.chunk_bytes = options_.chunk_bytes;
  o.slots = options_.slots;
  o.qp.set_mtu(options_.mtu_bytes);
  o.qp.path_policy = options_.path_policy;
  o.qp.retry_exp = coll::retry_exp_for(o.qp, options_.peer_timeout);
  o.timeout = options_.timeout;
  o.prefix = "mrc";  // the store is already prefixed per group
  auto comm = coll::Communicator::create(*store_, o);
  TORCH_CHECK(comm.ok(), "mrc: rank ", rank, " of ", size,
              " could not join the process group: ", comm.ok() ? "" : comm.error().message);
  comm_ = std::move(comm.value());
  worker_ = std::thread([this] { run_worker(); });
  init();
}

ProcessGroupMrc::~ProcessGroupMrc() {
  GilReleasedIfHeld gil_released;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  if (worker_.joinable()) worker_.join();
  // The closing handshake: no rank tears down a connection a peer still needs. A failed
  // communicator skips it (close() returns the failure at once). A peer that crashed or exited
  // without destroying its group never arrives: wait for it at most kCloseWait, not the
  // group's timeout (30 minutes by default), so this process can still exit.
  if (comm_) {
    static_cast<TorchStore&>(*store_).limit_waits(std::min(options_.timeout, kCloseWait));
    auto closed = comm_->close();
    if (!closed.ok()) TORCH_WARN("mrc: closing the process group: ", closed.error().message);
  }
  comm_.reset();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::enqueue(c10d::OpType type,
                                                        std::vector<at::Tensor> outputs,
                                                        Task task) {
  auto work = c10::make_intrusive<WorkMrc>(rank_, type, std::move(outputs));
  {
    std::lock_guard lock(mutex_);
    TORCH_CHECK(!stopping_, "mrc: the process group is being destroyed");
    queue_.push_back(Item{work, std::move(task), std::nullopt});
  }
  queued_.notify_one();
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::enqueue_point_to_point(
    c10d::OpType type, std::vector<at::Tensor> outputs, PointToPointOp op) {
  auto work = c10::make_intrusive<WorkMrc>(rank_, type, std::move(outputs));
  {
    std::lock_guard lock(mutex_);
    TORCH_CHECK(!stopping_, "mrc: the process group is being destroyed");
    queue_.push_back(Item{work, nullptr, std::move(op)});
  }
  queued_.notify_one();
  return work;
}

std::optional<ProcessGroupMrc::Item> ProcessGroupMrc::next_point_to_point() {
  std::lock_guard lock(mutex_);
  if (queue_.empty() || !queue_.front().p2p) return std::nullopt;
  Item item = std::move(queue_.front());
  queue_.pop_front();
  return item;
}

void ProcessGroupMrc::run_worker() {
  // Outputs are written in place, as every backend does, whatever requires_grad says.
  at::NoGradGuard no_grad;
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!comm_) {
      item.work->complete(failed_error());
      continue;
    }
    if (item.p2p) {
      run_point_to_point(std::move(item));
      release_if_failed();
      continue;
    }
    std::exception_ptr error;
    try {
      item.task(*comm_);
    } catch (...) {
      error = std::current_exception();
    }
    release_if_failed();
    item.work->complete(error);
  }
}

void ProcessGroupMrc::release_if_failed() {
  if (!comm_->failed()) return;
  std::unique_ptr<coll::Communicator> failed;
  {
    std::lock_guard lock(mutex_);
    failure_ = comm_->failure().message;
    failed = std::move(comm_);
  }
  failed->abort();  // no closing handshake: the group is over
}

std::exception_ptr ProcessGroupMrc::failed_error() const {
  return std::make_exception_ptr(
      std::runtime_error("mrc: the process group has failed: " + failure_));
}

void ProcessGroupMrc::check_plane(int plane) const {
  TORCH_CHECK(plane >= 0 && plane < planes(), "mrc: plane ", plane,
              " does not exist (this rank has ", planes(), " planes, 0..", planes() - 1, ")");
}

PlaneCounters ProcessGroupMrc::plane_stats(int plane) const {
  check_plane(plane);
  std::lock_guard lock(mutex_);
  TORCH_CHECK(comm_ != nullptr, "mrc: the process group has failed: ", failure_);
  const mrc::UdpPlaneStats s = comm_->context().plane_stats(plane);
  return PlaneCounters{s.packets_sent,   s.bytes_sent,  s.packets_received,
                       s.bytes_received, s.send_errors, s.up};
}

void ProcessGroupMrc::set_plane_up(int plane, bool up) {
  check_plane(plane);
  std::lock_guard lock(mutex_);
  TORCH_CHECK(comm_ != nullptr, "mrc: the process group has failed: ", failure_);
  comm_->context().set_plane_up(plane, up);
}

}  // namespace mrc::torchpg
