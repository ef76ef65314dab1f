// ProcessGroupMrc's collectives: each checks its arguments on the calling thread (c10::Error
// for a wrong device, dtype, operator or size) and queues a task for the worker thread.
//
// Reductions need an element type mrc can reduce (float32/64, float16, bfloat16, int32/64,
// uint8); everything else (broadcast, gathers, scatters, all-to-all, send/recv) only moves bytes,
// so any dtype works there. A tensor that is not contiguous is worked on as a contiguous copy
// and copied back. all-to-all with uneven splits pads every block to the largest block of the
// call (agreed by a max all-reduce first), since mrc's all_to_all moves equal blocks.
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>

#include "pytorch/process_group.h"

namespace mrc::torchpg {
namespace {

using c10d::OpType;
using coll::Communicator;
using coll::DataType;

void check(const char* call, const Result<Ok, Error>& result) {
  if (!result.ok())
    throw std::runtime_error(std::string("mrc ") + call + ": " + result.error().message);
}

std::optional<DataType> reducible_type(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return DataType::kFloat32;
    case at::kDouble:
      return DataType::kFloat64;
    case at::kHalf:
      return DataType::kFloat16;
    case at::kBFloat16:
      return DataType::kBFloat16;
    case at::kInt:
      return DataType::kInt32;
    case at::kLong:
      return DataType::kInt64;
    case at::kByte:
      return DataType::kUint8;
    default:
      return std::nullopt;
  }
}

DataType reduce_type(const at::Tensor& tensor, const char* call) {
  const auto type = reducible_type(tensor.scalar_type());
  TORCH_CHECK(type.has_value(), "mrc ", call, ": cannot reduce tensors of dtype ",
              tensor.scalar_type(),
              "; supported: float32, float64, float16, bfloat16, int32, int64, uint8");
  return *type;
}

coll::ReduceOp reduce_op(const c10d::ReduceOp& op, const char* call) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return coll::ReduceOp::kSum;
    case c10d::ReduceOp::AVG:
      return coll::ReduceOp::kAvg;
    case c10d::ReduceOp::PRODUCT:
      return coll::ReduceOp::kProd;
    case c10d::ReduceOp::MIN:
      return coll::ReduceOp::kMin;
    case c10d::ReduceOp::MAX:
      return coll::ReduceOp::kMax;
    default:
      TORCH_CHECK(false, "mrc ", call, ": reduce op ", static_cast<int>(op.op_),
                  " is not supported (SUM, AVG, PRODUCT, MIN and MAX are)");
  }
}

void check_tensor(const at::Tensor& tensor, const char* call) {
  TORCH_CHECK(tensor.device().is_cpu(), "mrc ", call, ": tensors must be on the CPU, got one on ",
              tensor.device(), " (mrc moves host memory: copy the tensor to the CPU first)");
  TORCH_CHECK(tensor.layout() == at::kStrided, "mrc ", call,
              ": only dense tensors are supported, got layout ", tensor.layout());
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* call) {
  TORCH_CHECK(tensors.size() == 1, "mrc ", call, ": takes one tensor per call, got ",
              tensors.size());
  check_tensor(tensors[0], call);
  return tensors[0];
}

// Every tensor of `tensors` has the dtype and number of elements of `like`.
void check_like(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const char* call) {
  for (const at::Tensor& t : tensors) {
    check_tensor(t, call);
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "mrc ", call, ": dtypes differ (",
                t.scalar_type(), " and ", like.scalar_type(), ")");
    TORCH_CHECK(t.numel() == like.numel(), "mrc ", call, ": sizes differ (", t.numel(), " and ",
                like.numel(), " elements)");
  }
}

size_t count_of(const at::Tensor& t) {
  return static_cast<size_t>(t.numel());
}
size_t bytes_of(const at::Tensor& t) {
  return t.nbytes();
}
uint8_t* bytes_at(const at::Tensor& t) {
  return static_cast<uint8_t*>(t.data_ptr());
}

// Writes `buffer` (a contiguous stand-in for `target`) back when it is a copy.
void write_back(const at::Tensor& target, const at::Tensor& buffer) {
  if (!buffer.is_same(target)) target.copy_(buffer);
}

// One contiguous tensor holding `tensors` one after another.
at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

// All-to-all of unequal blocks: block j of `send` goes to rank j, block i of `recv` comes from
// rank i. Pads every block to the largest of the call on any rank.
void all_to_all_v(Communicator& c, const std::vector<const uint8_t*>& send,
                  const std::vector<size_t>& send_bytes, const std::vector<uint8_t*>& recv,
                  const std::vector<size_t>& recv_bytes) {
  int64_t widest = 0;
  for (size_t b : send_bytes) widest = std::max<int64_t>(widest, static_cast<int64_t>(b));
  for (size_t b : recv_bytes) widest = std::max<int64_t>(widest, static_cast<int64_t>(b));
  check("alltoall", c.all_reduce(&widest, &widest, 1, DataType::kInt64, coll::ReduceOp::kMax));
  const auto width = static_cast<size_t>(widest);
  const auto ranks = static_cast<size_t>(c.ranks());
  std::vector<uint8_t> out(ranks * width);
  std::vector<uint8_t> in(ranks * width);
  for (size_t j = 0; j < ranks; ++j)
    if (send_bytes[j] > 0) std::memcpy(out.data() + j * width, send[j], send_bytes[j]);
  check("alltoall", c.all_to_all(out.data(), in.data(), width, DataType::kUint8));
  for (size_t i = 0; i < ranks; ++i)
    if (recv_bytes[i] > 0) std::memcpy(recv[i], in.data() + i * width, recv_bytes[i]);
}

// Byte offsets of the dim-0 blocks of `t` given by `splits` (empty: equal blocks).
std::vector<size_t> split_bytes(const at::Tensor& t, const std::vector<int64_t>& splits, int ranks,
                                const char* which) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const size_t row_bytes = rows == 0 ? 0 : bytes_of(t) / static_cast<size_t>(rows);
  std::vector<size_t> bytes(static_cast<size_t>(ranks));
  if (splits.empty()) {
    TORCH_CHECK(rows % ranks == 0, "mrc alltoall_base: the ", which, " tensor's first dimension (",
                rows, ") does not divide into ", ranks, " equal blocks");
    std::fill(bytes.begin(), bytes.end(), static_cast<size_t>(rows / ranks) * row_bytes);
    return bytes;
  }
  TORCH_CHECK(splits.size() == static_cast<size_t>(ranks), "mrc alltoall_base: ", which,
              " splits have ", splits.size(), " entries for ", ranks, " ranks");
  int64_t total = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    TORCH_CHECK(splits[i] >= 0, "mrc alltoall_base: negative ", which, " split");
    total += splits[i];
    bytes[i] = static_cast<size_t>(splits[i]) * row_bytes;
  }
  TORCH_CHECK(total == rows, "mrc alltoall_base: ", which, " splits add up to ", total,
              " rows, the tensor has ", rows);
  return bytes;
}

// Where each block starts when blocks of `bytes` follow each other from `base`.
template <typename Byte>
std::vector<Byte*> blocks_of(Byte* base, const std::vector<size_t>& bytes) {
  std::vector<Byte*> blocks;
  for (size_t b : bytes) {
    blocks.push_back(base);
    base += b;
  }
  return blocks;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::broadcast(std::vector<at::Tensor>& tensors,
                                                          const c10d::BroadcastOptions& opts) {
  const at::Tensor tensor = single(tensors, "broadcast");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "mrc broadcast: root ", opts.rootRank,
              " is not a rank");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(OpType::BROADCAST, tensors, [tensor, root](Communicator& c) {
    const at::Tensor buffer = tensor.contiguous();
    check("broadcast", c.broadcast(buffer.data_ptr(), buffer.data_ptr(), bytes_of(buffer),
                                   DataType::kUint8, root));
    write_back(tensor, buffer);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::allreduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::AllreduceOptions& opts) {
  const at::Tensor tensor = single(tensors, "allreduce");
  const DataType type = reduce_type(tensor, "allreduce");
  const coll::ReduceOp op = reduce_op(opts.reduceOp, "allreduce");
  return enqueue(OpType::ALLREDUCE, tensors, [tensor, type, op](Communicator& c) {
    const at::Tensor buffer = tensor.contiguous();
    check("allreduce",
          c.all_reduce(buffer.data_ptr(), buffer.data_ptr(), count_of(buffer), type, op));
    write_back(tensor, buffer);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "mrc allreduce_coalesced: no tensors");
  const DataType type = reduce_type(tensors[0], "allreduce_coalesced");
  const coll::ReduceOp op = reduce_op(opts.reduceOp, "allreduce_coalesced");
  for (const at::Tensor& t : tensors) {
    check_tensor(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                "mrc allreduce_coalesced: all tensors need one dtype (", t.scalar_type(), " and ",
                tensors[0].scalar_type(), ")");
  }
  return enqueue(OpType::ALLREDUCE_COALESCED, tensors, [tensors, type, op](Communicator& c) {
    const at::Tensor flat = flatten(tensors);
    check("allreduce_coalesced",
          c.all_reduce(flat.data_ptr(), flat.data_ptr(), count_of(flat), type, op));
    unflatten(flat, tensors);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::reduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::ReduceOptions& opts) {
  const at::Tensor tensor = single(tensors, "reduce");
  const DataType type = reduce_type(tensor, "reduce");
  const coll::ReduceOp op = reduce_op(opts.reduceOp, "reduce");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "mrc reduce: root ", opts.rootRank,
              " is not a rank");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(OpType::REDUCE, tensors, [tensor, type, op, root](Communicator& c) {
    const at::Tensor buffer = tensor.contiguous();
    check("reduce",
          c.reduce(buffer.data_ptr(), buffer.data_ptr(), count_of(buffer), type, op, root));
    if (c.rank() == root) write_back(tensor, buffer);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const at::Tensor input = single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
              "mrc allgather: needs one list of ", size_, " output tensors");
  check_like(outputs[0], input, "allgather");
  std::vector<at::Tensor> out = outputs[0];
  return enqueue(OpType::ALLGATHER, out, [input, out](Communicator& c) {
    const at::Tensor in = input.contiguous();
    const at::Tensor flat =
        at::empty({static_cast<int64_t>(out.size()) * in.numel()}, in.options());
    check("allgather",
          c.all_gather(in.data_ptr(), flat.data_ptr(), bytes_of(in), DataType::kUint8));
    unflatten(flat, out);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::_allgather_base(at::Tensor& output,
                                                                at::Tensor& input,
                                                                const c10d::AllgatherOptions&) {
  check_tensor(output, "_allgather_base");
  check_tensor(input, "_allgather_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "mrc _allgather_base: dtypes differ");
  TORCH_CHECK(output.numel() == input.numel() * size_, "mrc _allgather_base: the output has ",
              output.numel(), " elements, it needs ", size_, " x ", input.numel());
  return enqueue(OpType::_ALLGATHER_BASE, {output}, [input, output](Communicator& c) {
    const at::Tensor in = input.contiguous();
    const at::Tensor buffer = output.contiguous();
    check("_allgather_base",
          c.all_gather(in.data_ptr(), buffer.data_ptr(), bytes_of(in), DataType::kUint8));
    write_back(output, buffer);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const at::Tensor input = single(inputs, "gather");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "mrc gather: root ", opts.rootRank,
              " is not a rank");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> out;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_),
                "mrc gather: the root needs one list of ", size_, " output tensors");
    check_like(outputs[0], input, "gather");
    out = outputs[0];
  }
  return enqueue(OpType::GATHER, out, [input, out, root](Communicator& c) {
    const at::Tensor in = input.contiguous();
    if (c.rank() != root) {
      check("gather", c.send(in.data_ptr(), bytes_of(in), DataType::kUint8, root));
      return;
    }
    for (int r = 0; r < c.ranks(); ++r) {
      const at::Tensor& target = out[static_cast<size_t>(r)];
      if (r == root) {
        target.copy_(in.view(target.sizes()));
        continue;
      }
      const at::Tensor buffer = target.contiguous();
      check("gather", c.recv(buffer.data_ptr(), bytes_of(buffer), DataType::kUint8, r));
      write_back(target, buffer);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const at::Tensor output = single(outputs, "scatter");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "mrc scatter: root ", opts.rootRank,
              " is not a rank");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> in;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
                "mrc scatter: the root needs one list of ", size_, " input tensors");
    check_like(inputs[0], output, "scatter");
    in = inputs[0];
  }
  return enqueue(OpType::SCATTER, outputs, [in, output, root](Communicator& c) {
    const at::Tensor buffer = output.contiguous();
    if (c.rank() != root) {
      check("scatter", c.recv(buffer.data_ptr(), bytes_of(buffer), DataType::kUint8, root));
    } else {
      for (int r = 0; r < c.ranks(); ++r) {
        const at::Tensor source = in[static_cast<size_t>(r)].contiguous();
        if (r == root)
          buffer.copy_(source.view(buffer.sizes()));
        else
          check("scatter", c.send(source.data_ptr(), bytes_of(source), DataType::kUint8, r));
      }
    }
    write_back(output, buffer);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor output = single(outputs, "reduce_scatter");
  const DataType type = reduce_type(output, "reduce_scatter");
  const coll::ReduceOp op = reduce_op(opts.reduceOp, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_),
              "mrc reduce_scatter: needs one list of ", size_, " input tensors");
  check_like(inputs[0], output, "reduce_scatter");
  std::vector<at::Tensor> in = inputs[0];
  return enqueue(OpType::REDUCE_SCATTER, outputs, [in, output, type, op](Communicator& c) {
    const at::Tensor flat = flatten(in);
    const at::Tensor buffer = output.contiguous();
    check("reduce_scatter",
          c.reduce_scatter(flat.data_ptr(), buffer.data_ptr(), count_of(buffer), type, op));
    write_back(output, buffer);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  check_tensor(output, "_reduce_scatter_base");
  check_tensor(input, "_reduce_scatter_base");
  const DataType type = reduce_type(output, "_reduce_scatter_base");
  const coll::ReduceOp op = reduce_op(opts.reduceOp, "_reduce_scatter_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(),
              "mrc _reduce_scatter_base: dtypes differ");
  TORCH_CHECK(input.numel() == output.numel() * size_, "mrc _reduce_scatter_base: the input has ",
              input.numel(), " elements, it needs ", size_, " x ", output.numel());
  return enqueue(
      OpType::_REDUCE_SCATTER_BASE, {output}, [input, output, type, op](Communicator& c) {
        const at::Tensor in = input.contiguous();
        const at::Tensor buffer = output.contiguous();
        check("_reduce_scatter_base",
              c.reduce_scatter(in.data_ptr(), buffer.data_ptr(), count_of(buffer), type, op));
        write_back(output, buffer);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                              std::vector<int64_t>& output_splits,
                                                              std::vector<int64_t>& input_splits,
                                                              const c10d::AllToAllOptions&) {
  check_tensor(output, "alltoall_base");
  check_tensor(input, "alltoall_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "mrc alltoall_base: dtypes differ");
  const std::vector<size_t> send_bytes = split_bytes(input, input_splits, size_, "input");
  const std::vector<size_t> recv_bytes = split_bytes(output, output_splits, size_, "output");
  const bool equal = input_splits.empty() && output_splits.empty();
  TORCH_CHECK(!equal || output.numel() == input.numel(),
              "mrc alltoall_base: input and output sizes differ");
  return enqueue(OpType::ALLTOALL_BASE, {output},
                 [input, output, send_bytes, recv_bytes, equal](Communicator& c) {
                   const at::Tensor in = input.contiguous();
                   const at::Tensor buffer = output.contiguous();
                   if (equal) {
                     check("alltoall_base", c.all_to_all(in.data_ptr(), buffer.data_ptr(),
                                                         send_bytes[0], DataType::kUint8));
                   } else {
                     const uint8_t* source = bytes_at(in);
                     all_to_all_v(c, blocks_of(source, send_bytes), send_bytes,
                                  blocks_of(bytes_at(buffer), recv_bytes), recv_bytes);
                   }
                   write_back(output, buffer);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::alltoall(std::vector<at::Tensor>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::AllToAllOptions&) {
  TORCH_CHECK(
      outputs.size() == static_cast<size_t>(size_) && inputs.size() == static_cast<size_t>(size_),
      "mrc alltoall: needs ", size_, " input and ", size_, " output tensors");
  for (const at::Tensor& t : outputs) check_tensor(t, "alltoall");
  for (const at::Tensor& t : inputs) {
    check_tensor(t, "alltoall");
    TORCH_CHECK(t.scalar_type() == outputs[0].scalar_type(), "mrc alltoall: dtypes differ");
  }
  return enqueue(OpType::ALLTOALL, outputs, [inputs, outputs](Communicator& c) {
    std::vector<at::Tensor> in, out;
    std::vector<const uint8_t*> send;
    std::vector<uint8_t*> recv;
    std::vector<size_t> send_bytes, recv_bytes;
    for (const at::Tensor& t : inputs) {
      in.push_back(t.contiguous());
      send.push_back(bytes_at(in.back()));
      send_bytes.push_back(bytes_of(t));
    }
    for (const at::Tensor& t : outputs) {
      out.push_back(t.contiguous());
      recv.push_back(bytes_at(out.back()));
      recv_bytes.push_back(bytes_of(t));
    }
    all_to_all_v(c, send, send_bytes, recv, recv_bytes);
    for (size_t i = 0; i < outputs.size(); ++i) write_back(outputs[i], out[i]);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                     int /*tag*/) {
  const at::Tensor tensor = single(tensors, "send");
  TORCH_CHECK(dst_rank >= 0 && dst_rank < size_ && dst_rank != rank_, "mrc send: rank ", dst_rank,
              " is not another rank of the group");
  return enqueue_point_to_point(OpType::SEND, tensors,
                                PointToPointOp{true, dst_rank, tensor, tensor.contiguous()});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                     int /*tag*/) {
  const at::Tensor tensor = single(tensors, "recv");
  TORCH_CHECK(src_rank >= 0 && src_rank < size_ && src_rank != rank_, "mrc recv: rank ", src_rank,
              " is not another rank of the group (receiving from any rank is not supported)");
  return enqueue_point_to_point(OpType::RECV, tensors,
                                PointToPointOp{false, src_rank, tensor, tensor.contiguous()});
}

void ProcessGroupMrc::run_point_to_point(Item first) {
  coll::PointToPoint& p2p = comm_->point_to_point();
  std::map<coll::PointToPoint::Ticket, Item> active;
  auto add = [&](Item item) {
    const PointToPointOp& op = *item.p2p;
    void* data = op.buffer.data_ptr();
    const auto ticket = op.send ? p2p.add_send(data, bytes_of(op.buffer), op.peer)
                                : p2p.add_receive(data, bytes_of(op.buffer), op.peer);
    active.emplace(ticket, std::move(item));
  };
  comm_->begin("send/recv");
  add(std::move(first));
  std::vector<coll::PointToPoint::Ticket> done;
  Result<Ok, Error> result = Ok{};
  while (!active.empty() && result.ok()) {
    while (auto more = next_point_to_point()) add(std::move(*more));
    auto moved = p2p.step(done);
    for (const auto ticket : done) {
      Item& item = active.at(ticket);
      if (!item.p2p->send) write_back(item.p2p->tensor, item.p2p->buffer);
      item.work->complete(nullptr);
      active.erase(ticket);
    }
    done.clear();
    if (!moved.ok()) result = Err{moved.error()};
    if (result.ok() && !active.empty()) result = comm_->progress(!moved.value());
  }
  if (result.ok()) return;
  p2p.abandon();
  const auto error =
      std::make_exception_ptr(std::runtime_error("mrc send/recv: " + result.error().message));
  for (auto& [ticket, item] : active) item.work->complete(error);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupMrc::barrier(const c10d::BarrierOptions&) {
  return enqueue(OpType::BARRIER, {}, [](Communicator& c) { check("barrier", c.barrier()); });
}

}  // namespace mrc::torchpg
