// An endpoint's data operations: sends and receives of FI_MSG and FI_TAGGED, peeks and claims,
// and the completion entries and counters they produce.
#include <cstring>

#include "fabric/provider.h"

namespace mrc::fabric {
namespace {

constexpr uint64_t kSendFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE |
                                FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MORE | FI_TAGGED |
                                FI_MSG;
constexpr uint64_t kRecvFlags =
    FI_COMPLETION | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MORE | FI_TAGGED | FI_MSG | FI_MULTI_RECV;

bool wants_completion(uint64_t bind_flags, uint64_t op_flags) {
  return (bind_flags & FI_SELECTIVE_COMPLETION) == 0 || (op_flags & FI_COMPLETION) != 0;
}

// An error entry of an operation (`err` is also its provider errno).
fi_cq_err_entry error_entry(void* context, uint64_t flags, int err) {
  fi_cq_err_entry e{};
  e.op_context = context;
  e.flags = flags;
  e.err = err;
  e.prov_errno = err;
  return e;
}

// What a receive of the unexpected message `u` reports.
MessageInfo message_of(const Unexpected& u) {
  return {u.arrival.tagged, u.bytes(), u.arrival.tag, u.data, u.has_data, u.arrival.source};
}

// Lets go of the registrations a write or read made for itself, and counts it on its counter.
void finish(Endpoint& ep, const SendOp& op, bool error) {
  --ep.tx_outstanding;
  ++ep.completions;
  for (uint32_t lkey : op.temporary_lkeys) (void)ep.domain->context->deregister_memory(lkey);
  Cntr* c = op.read ? ep.read_cntr : op.rma ? ep.write_cntr : ep.send_cntr;
  if (c != nullptr) c->add(1, error);
}

}  // namespace

void complete_send(Endpoint& ep, const SendOp& op) {
  finish(ep, op, false);
  if (op.completion && ep.tx_cq != nullptr) {
    CqEntry e;
    e.entry.op_context = op.context;
    e.entry.flags = op.cq_flags;
    ep.tx_cq->push(e);
  }
}

void fail_send(Endpoint& ep, const SendOp& op, int err, const std::string& why) {
  finish(ep, op, true);
  if (ep.tx_cq != nullptr) ep.tx_cq->push_error(error_entry(op.context, op.cq_flags, err), why);
}

void complete_recv(Endpoint& ep, const PostedRecv& r, const MessageInfo& m) {
  if (r.ends_posting()) --ep.rx_outstanding;
  ++ep.completions;
  const uint64_t flags = FI_RECV | (m.tagged ? FI_TAGGED : FI_MSG) |
                         (m.has_data ? FI_REMOTE_CQ_DATA : 0) | (r.releases ? FI_MULTI_RECV : 0);
  const bool truncated = m.bytes > r.buffer.bytes && (r.flags & FI_DISCARD) == 0;
  if (ep.recv_cntr != nullptr) ep.recv_cntr->add(1, truncated);
  if (ep.rx_cq == nullptr) return;
  if (truncated) {
    fi_cq_err_entry e = error_entry(r.context, flags, FI_ETRUNC);
    e.len = r.buffer.bytes;
    e.buf = r.buffer.count > 0 ? r.buffer.v[0].iov_base : nullptr;
    e.data = m.data;
    e.tag = m.tag;
    e.olen = m.bytes - r.buffer.bytes;
    ep.rx_cq->push_error(e);
    return;
  }
  if (!wants_completion(ep.rx_cq_flags, r.flags)) return;
  CqEntry e;
  e.entry = {r.context, flags, m.bytes, r.buffer.count > 0 ? r.buffer.v[0].iov_base : nullptr,
             m.data,    m.tag};
  e.source = m.source;
  ep.rx_cq->push(e);
}

void deliver_unexpected(Endpoint& ep, const PostedRecv& r, Unexpected* u) {
  const MessageInfo m = message_of(*u);
  if (u->rendezvous) {  // only announced: answer it now
    RxLink& link = *static_cast<RxLink*>(u->rendezvous_link);
    const uint32_t index = u->rendezvous_index;
    ep.matcher.remove(u);
    begin_rendezvous(link, index, r, m);
    return;
  }
  r.buffer.write(0, u->payload.data(), u->payload.size());
  ep.matcher.remove(u);
  complete_recv(ep, r, m);
}

namespace {

// Takes `u` for `r` now, or when its last fragment arrives.
void take(Endpoint& ep, const PostedRecv& r, Unexpected* u) {
  ++ep.rx_outstanding;
  if (u->complete)
    deliver_unexpected(ep, r, u);
  else
    u->waiting = r;
}

// FI_PEEK (with FI_CLAIM or FI_DISCARD): a completion whether or not a message matches.
ssize_t peek_locked(Endpoint& ep, const PostedRecv& r) {
  Unexpected* u = ep.matcher.find_unexpected(r.tagged, r.source, r.tag, r.ignore);
  if (ep.rx_cq == nullptr) return -FI_ENOCQ;
  const uint64_t flags = FI_RECV | (r.tagged ? FI_TAGGED : FI_MSG);
  if (u == nullptr) {
    ep.rx_cq->push_error(error_entry(r.context, flags, FI_ENOMSG));
    return 0;
  }
  CqEntry e;
  e.entry = {r.context,  flags | (u->has_data ? FI_REMOTE_CQ_DATA : 0),
             u->bytes(), nullptr,
             u->data,    u->arrival.tag};
  e.source = u->arrival.source;
  if ((r.flags & FI_CLAIM) != 0) {
    u->claimed = true;
    u->claim_context = r.context;
  } else if ((r.flags & FI_DISCARD) != 0 && u->complete) {
    if (u->rendezvous) {  // the sender still waits: answer with 0 bytes
      PostedRecv silent = r;
      silent.silent = true;
      deliver_unexpected(ep, silent, u);
    } else {
      ep.matcher.remove(u);
    }
  }
  ep.rx_cq->push(e);
  return 0;
}

// A receive of a message an earlier FI_PEEK|FI_CLAIM reserved (its context names it).
ssize_t claim_locked(Endpoint& ep, PostedRecv r) {
  Unexpected* u = ep.matcher.find_claimed(r.context);
  if (u == nullptr) return -FI_EINVAL;
  if ((r.flags & FI_DISCARD) != 0) r.buffer = IoList{};
  take(ep, r, u);
  return 0;
}

}  // namespace

namespace {

// A multi-receive: posted, then given the unexpected messages it matches, oldest first, while
// it stays posted (no receive posted before it matches them, or it would have taken them).
ssize_t post_multi_locked(Endpoint& ep, const PostedRecv& r) {
  if (r.tagged || (r.flags & (FI_PEEK | FI_CLAIM)) != 0) return -FI_EBADFLAGS;
  ++ep.rx_outstanding;
  ep.matcher.post(r);
  for (Unexpected* u; (u = ep.matcher.find_unexpected(false, r.source, 0, 0)) != nullptr;) {
    const auto part = ep.matcher.take_posted(u->arrival, u->bytes());
    if (!part) break;
    if (u->complete)
      deliver_unexpected(ep, *part, u);
    else
      u->waiting = *part;
    if (part->releases) break;
  }
  return 0;
}

ssize_t post_recv_locked(Endpoint& ep, const PostedRecv& r) {
  if (!ep.enabled) return -FI_EOPBADSTATE;
  if ((r.flags & ~kRecvFlags) != 0) return -FI_EBADFLAGS;
  if (r.multi) return ep.rx_outstanding >= kQueueSize ? -FI_EAGAIN : post_multi_locked(ep, r);
  if ((r.flags & FI_PEEK) != 0) return peek_locked(ep, r);
  if (ep.rx_outstanding >= kQueueSize) return -FI_EAGAIN;
  if ((r.flags & FI_CLAIM) != 0) return claim_locked(ep, r);
  if (Unexpected* u = ep.matcher.find_unexpected(r.tagged, r.source, r.tag, r.ignore)) {
    take(ep, r, u);
    return 0;
  }
  ++ep.rx_outstanding;
  ep.matcher.post(r);
  return 0;
}

}  // namespace

ssize_t post_recv(Endpoint& ep, PostedRecv r) {
  std::lock_guard lock(ep.domain->lock);
  const ssize_t result = post_recv_locked(ep, r);
  // A link that stopped at a message no receive or the store could take may go on now.
  retry_stalled(ep);
  return result;
}

void fail_recv(Endpoint& ep, const PostedRecv& r, const MessageInfo& m, const std::string& why) {
  if (r.ends_posting()) --ep.rx_outstanding;
  ++ep.completions;
  if (ep.recv_cntr != nullptr) ep.recv_cntr->add(1, true);
  if (ep.rx_cq == nullptr || r.silent) return;
  fi_cq_err_entry e = error_entry(r.context, FI_RECV | (m.tagged ? FI_TAGGED : FI_MSG), FI_EIO);
  e.tag = m.tag;
  ep.rx_cq->push_error(e, why);
}

namespace {

// Puts a checked op on the link to `dest`. REQUIRES: the domain's lock.
ssize_t queue_op(Endpoint& ep, std::unique_ptr<SendOp> op, uint64_t dest, uint64_t flags) {
  int err = 0;
  TxLink* link = tx_link_to(ep, dest, &err);
  if (link == nullptr) {  // (nothing queued: the registrations made for it go)
    for (uint32_t k : op->temporary_lkeys) (void)ep.domain->context->deregister_memory(k);
    return err;
  }
  op->completion = op->completion && wants_completion(ep.tx_cq_flags, flags);
  ++ep.tx_outstanding;
  if (link->state == TxLink::State::kFailed) {
    fail_send(ep, *op, FI_EIO, link->failure);
    return 0;
  }
  link->queue.push_back(std::move(op));
  pump(*link);
  return 0;
}

// An inject's copy of its data, which then stands in for the application's buffers.
void own_copy(SendOp& op) {
  op.owned.resize(op.buffer.bytes);
  op.buffer.read(0, op.owned.data(), op.owned.size());
  op.buffer = IoList::of(op.owned.data(), op.owned.size());
}

ssize_t check_op(const Endpoint& ep, const SendOp& op, uint64_t flags) {
  if (!ep.enabled) return -FI_EOPBADSTATE;
  if ((flags & ~kSendFlags) != 0) return -FI_EBADFLAGS;
  if (op.buffer.bytes > kMaxMessageBytes) return -FI_EMSGSIZE;
  if ((flags & FI_INJECT) != 0 && op.buffer.bytes > kInjectBytes) return -FI_EMSGSIZE;
  if (ep.tx_outstanding >= kQueueSize) return -FI_EAGAIN;
  return 0;
}

}  // namespace

ssize_t post_send(Endpoint& ep, std::unique_ptr<SendOp> op, uint64_t dest, uint64_t flags) {
  std::lock_guard lock(ep.domain->lock);
  if (const ssize_t bad = check_op(ep, *op, flags); bad != 0) return bad;
  op->cq_flags = FI_SEND | (op->tagged ? FI_TAGGED : FI_MSG);
  if ((flags & FI_INJECT) != 0) own_copy(*op);
  const size_t rendezvous = ep.domain->config.rendezvous_bytes;
  op->rendezvous = (flags & FI_INJECT) == 0 && rendezvous != 0 && op->buffer.bytes >= rendezvous;
  return queue_op(ep, std::move(op), dest, flags);
}

ssize_t post_write(Endpoint& ep, std::unique_ptr<SendOp> op, void* const* desc, uint64_t dest,
                   uint64_t flags) {
  std::lock_guard lock(ep.domain->lock);
  if (const ssize_t bad = check_op(ep, *op, flags); bad != 0) return bad;
  op->rma = true;
  op->cq_flags = FI_WRITE | FI_RMA;
  const bool inject = (flags & FI_INJECT) != 0;
  if (inject) own_copy(*op);
  if (auto bad = gather(*ep.domain, *op, op->buffer.bytes, inject ? nullptr : desc)) {
    for (uint32_t k : op->temporary_lkeys) (void)ep.domain->context->deregister_memory(k);
    warn("fi_write: cannot register the local buffer: " + *bad);
    return -FI_ENOMEM;
  }
  return queue_op(ep, std::move(op), dest, flags);
}

namespace {

// Registers where a read's bytes land for the target to write: the buffer itself, or a bounce
// buffer when it has several pieces. An error's reason, or nullopt.
std::optional<std::string> register_destination(Domain& d, SendOp& op) {
  if (op.buffer.bytes == 0) return std::nullopt;
  void* at = op.buffer.v[0].iov_base;
  if (op.buffer.count > 1) {
    op.bounce.resize(op.buffer.bytes);
    at = op.bounce.data();
  }
  auto reg =
      d.context->register_memory(d.pd, at, op.buffer.bytes, kAccessLocalWrite | kAccessRemoteWrite);
  if (!reg.ok()) return reg.error().message;
  op.temporary_lkeys.push_back(reg.value().lkey);
  op.destination = reinterpret_cast<uint64_t>(at);
  op.destination_rkey = reg.value().rkey;
  return std::nullopt;
}

}  // namespace

ssize_t post_read(Endpoint& ep, std::unique_ptr<SendOp> op, uint64_t source, uint64_t flags) {
  std::lock_guard lock(ep.domain->lock);
  if ((flags & FI_INJECT) != 0) return -FI_EBADFLAGS;  // a read has no data to copy
  if (const ssize_t bad = check_op(ep, *op, flags); bad != 0) return bad;
  op->read = true;
  op->cq_flags = FI_READ | FI_RMA;
  if (auto bad = register_destination(*ep.domain, *op)) {
    warn("fi_read: cannot register the local buffer: " + *bad);
    return -FI_ENOMEM;
  }
  return queue_op(ep, std::move(op), source, flags);
}

ssize_t cancel(Endpoint& ep, void* context) {
  std::lock_guard lock(ep.domain->lock);
  auto r = ep.matcher.cancel(context);
  if (!r) return -FI_ENOENT;
  --ep.rx_outstanding;
  ++ep.completions;
  if (ep.rx_cq != nullptr)
    ep.rx_cq->push_error(
        error_entry(context, FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG), FI_ECANCELED));
  return 0;
}

}  // namespace mrc::fabric
