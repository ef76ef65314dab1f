// The endpoint object: creation, binding, enabling, names and options, and the msg, tagged
// and stub operation tables libfabric's inline calls jump through (none is left null: an
// operation the provider lacks answers -FI_ENOSYS).
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "fabric/provider.h"

namespace mrc::fabric {
namespace {

Endpoint& of(fid_ep* ep) {
  return *reinterpret_cast<Endpoint*>(ep);
}
Endpoint& of(fid* f) {
  return *reinterpret_cast<Endpoint*>(f);
}

// Until the credits this endpoint owes its senders are written (at most a second): a sender's
// last send completes only when they arrive.
void settle(Endpoint& ep, std::unique_lock<std::mutex>& lock) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    ep.domain->progress();
    bool owed = false;
    for (auto& link : ep.rx_links)
      owed |= !link->broken && (link->credit_writes > 0 || link->freed > 0);
    if (!owed || std::chrono::steady_clock::now() > until) return;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    lock.lock();
  }
}

int ep_close(fid* f) {
  Endpoint* ep = &of(f);
  Domain& d = *ep->domain;
  std::unique_lock lock(d.lock);
  settle(*ep, lock);
  close_links(*ep);
  if (ep->listen_fd >= 0) {
    d.unwatch(ep->listen_fd);
    close(ep->listen_fd);
    ep->listen_fd = -1;
  }
  std::erase(d.endpoints, ep);
  d.graveyard.push_back(std::shared_ptr<Endpoint>(ep));
  return 0;
}

int bind_cq(Endpoint& ep, Cq* cq, uint64_t flags) {
  if ((flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) != 0) return -FI_EBADFLAGS;
  if ((flags & FI_TRANSMIT) != 0) {
    ep.tx_cq = cq;
    ep.tx_cq_flags = flags;
  }
  if ((flags & FI_RECV) != 0) {
    ep.rx_cq = cq;
    ep.rx_cq_flags = flags;
  }
  return 0;
}

int ep_bind(fid* f, fid* b, uint64_t flags) {
  Endpoint& ep = of(f);
  std::lock_guard lock(ep.domain->lock);
  if (ep.enabled) return -FI_EOPBADSTATE;
  switch (b->fclass) {
    case FI_CLASS_CQ:
      return bind_cq(ep, reinterpret_cast<Cq*>(b), flags);
    case FI_CLASS_AV:
      ep.av = reinterpret_cast<Av*>(b);
      return 0;
    case FI_CLASS_EQ:  // accepted: the provider raises no events on RDM endpoints
      return 0;
    case FI_CLASS_CNTR:
      if ((flags & FI_SEND) != 0) ep.send_cntr = reinterpret_cast<Cntr*>(b);
      if ((flags & FI_RECV) != 0) ep.recv_cntr = reinterpret_cast<Cntr*>(b);
      if ((flags & FI_WRITE) != 0) ep.write_cntr = reinterpret_cast<Cntr*>(b);
      if ((flags & FI_REMOTE_WRITE) != 0) ep.remote_write_cntr = reinterpret_cast<Cntr*>(b);
      if ((flags & FI_READ) != 0) ep.read_cntr = reinterpret_cast<Cntr*>(b);
      if ((flags & FI_REMOTE_READ) != 0) ep.remote_read_cntr = reinterpret_cast<Cntr*>(b);
      return 0;
    default:
      return -FI_EINVAL;
  }
}

int ep_control(fid* f, int command, void* arg) {
  Endpoint& ep = of(f);
  std::lock_guard lock(ep.domain->lock);
  switch (command) {
    case FI_ENABLE:
      if (ep.av == nullptr) return -FI_ENOAV;
      if (ep.tx_cq == nullptr && ep.rx_cq == nullptr) return -FI_ENOCQ;
      ep.enabled = true;
      return 0;
    case FI_GETOPSFLAG: {
      uint64_t* flags = static_cast<uint64_t*>(arg);
      *flags = (*flags & FI_RECV) != 0 ? ep.rx_op_flags : ep.tx_op_flags;
      return 0;
    }
    case FI_SETOPSFLAG: {
      const uint64_t flags = *static_cast<uint64_t*>(arg);
      ((flags & FI_RECV) != 0 ? ep.rx_op_flags : ep.tx_op_flags) = flags & ~(FI_TRANSMIT | FI_RECV);
      return 0;
    }
    default:
      return -FI_ENOSYS;
  }
}

ssize_t ep_cancel(fid* f, void* context) {
  return cancel(of(f), context);
}
// FI_OPT_MIN_MULTI_RECV is the one option: what a multi-receive keeps before it is released.
int ep_getopt(fid* f, int level, int name, void* value, size_t* length) {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV) return -FI_ENOPROTOOPT;
  if (value == nullptr || length == nullptr || *length < sizeof(size_t)) return -FI_ETOOSMALL;
  std::lock_guard lock(of(f).domain->lock);
  *static_cast<size_t*>(value) = of(f).matcher.min_multi_recv();
  *length = sizeof(size_t);
  return 0;
}
int ep_setopt(fid* f, int level, int name, const void* value, size_t length) {
  if (level != FI_OPT_ENDPOINT || name != FI_OPT_MIN_MULTI_RECV) return -FI_ENOPROTOOPT;
  if (value == nullptr || length != sizeof(size_t)) return -FI_EINVAL;
  std::lock_guard lock(of(f).domain->lock);
  of(f).matcher.set_min_multi_recv(*static_cast<const size_t*>(value));
  return 0;
}
int no_ctx(fid_ep*, int, fi_tx_attr*, fid_ep**, void*) {
  return -FI_ENOSYS;
}
int no_rx_ctx(fid_ep*, int, fi_rx_attr*, fid_ep**, void*) {
  return -FI_ENOSYS;
}
ssize_t rx_left(fid_ep* e) {
  std::lock_guard lock(of(e).domain->lock);
  return static_cast<ssize_t>(kQueueSize - of(e).rx_outstanding);
}
ssize_t tx_left(fid_ep* e) {
  std::lock_guard lock(of(e).domain->lock);
  return static_cast<ssize_t>(kQueueSize - of(e).tx_outstanding);
}

int getname(fid* f, void* addr, size_t* addrlen) {
  Endpoint& ep = of(f);
  const size_t room = *addrlen;
  *addrlen = sizeof(EndpointName);
  if (room < sizeof(EndpointName)) return -FI_ETOOSMALL;
  std::memcpy(addr, &ep.name, sizeof(EndpointName));
  return 0;
}
int setname(fid*, void*, size_t) {
  return -FI_ENOSYS;
}
int getpeer(fid_ep*, void*, size_t*) {
  return -FI_ENOSYS;
}
int cm_connect(fid_ep*, const void*, const void*, size_t) {
  return -FI_ENOSYS;
}
int listen(fid_pep*) {
  return -FI_ENOSYS;
}
int accept(fid_ep*, const void*, size_t) {
  return -FI_ENOSYS;
}
int reject(fid_pep*, fid_t, const void*, size_t) {
  return -FI_ENOSYS;
}
int shutdown(fid_ep*, uint64_t) {
  return -FI_ENOSYS;
}
int join(fid_ep*, const void*, uint64_t, fid_mc**, void*) {
  return -FI_ENOSYS;
}

fi_ops ep_fi_ops{sizeof(fi_ops), ep_close, ep_bind, ep_control, no_ops_open, no_tostr, no_ops_set};
fi_ops_ep ep_ops{sizeof(fi_ops_ep), ep_cancel, ep_getopt, ep_setopt, no_ctx,
                 no_rx_ctx,         rx_left,   tx_left};
fi_ops_cm cm_ops{sizeof(fi_ops_cm), setname, getname, getpeer, cm_connect, listen, accept, reject,
                 shutdown,          join};

// --- FI_MSG and FI_TAGGED: argument forms onto post_send / post_recv ---

// `completion` false: the inject forms (fi_inject, fi_tinject and their data forms), which never
// produce a CQ entry; a *msg call's FI_INJECT only means the buffer may be reused at return, and
// its completion follows the usual rules (FI_SELECTIVE_COMPLETION, FI_COMPLETION).
ssize_t send(fid_ep* e, const iovec* iov, size_t count, uint64_t dest, void* context,
             uint64_t flags, bool tagged, uint64_t tag, uint64_t data, bool completion = true) {
  if (count > kMaxIov) return -FI_EINVAL;
  auto op = std::make_unique<SendOp>();
  op->completion = completion;
  op->context = context;
  op->tagged = tagged;
  op->tag = tag;
  op->data = data;
  op->has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
  op->buffer = IoList::of(iov, count);
  return post_send(of(e), std::move(op), dest, flags);
}

ssize_t recv(fid_ep* e, const iovec* iov, size_t count, uint64_t src, void* context, uint64_t flags,
             bool tagged, uint64_t tag, uint64_t ignore) {
  if (count > kMaxIov) return -FI_EINVAL;
  PostedRecv r;
  r.context = context;
  r.flags = flags;
  r.tagged = tagged;
  r.source = of(e).directed_recv ? src : kAnySource;  // libfabric: ignored without FI_DIRECTED_RECV
  r.tag = tag;
  r.ignore = ignore;
  r.buffer = IoList::of(iov, count);
  r.multi = (r.flags & FI_MULTI_RECV) != 0;
  return post_recv(of(e), r);
}

// The flags of an operation called without any (every form but the *msg ones): the endpoint's
// op_flags (fi_tx_attr/fi_rx_attr, FI_SETOPSFLAG) and the form's own. A *msg call's flags are
// its own alone, as libfabric defines them.
uint64_t tx_flags(fid_ep* e, uint64_t flags) {
  return flags | of(e).tx_op_flags;
}
uint64_t rx_flags(fid_ep* e, uint64_t flags) {
  return flags | of(e).rx_op_flags;
}

iovec one(const void* buf, size_t len) {
  return {const_cast<void*>(buf), len};
}

ssize_t msg_recv(fid_ep* e, void* buf, size_t len, void*, fi_addr_t src, void* ctx) {
  const iovec v = one(buf, len);
  return recv(e, &v, 1, src, ctx, rx_flags(e, 0), false, 0, 0);
}
ssize_t msg_recvv(fid_ep* e, const iovec* iov, void**, size_t count, fi_addr_t src, void* ctx) {
  return recv(e, iov, count, src, ctx, rx_flags(e, 0), false, 0, 0);
}
ssize_t msg_recvmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  return recv(e, m->msg_iov, m->iov_count, m->addr, m->context, flags, false, 0, 0);
}
ssize_t msg_send(fid_ep* e, const void* buf, size_t len, void*, fi_addr_t dest, void* ctx) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, ctx, tx_flags(e, 0), false, 0, 0);
}
ssize_t msg_sendv(fid_ep* e, const iovec* iov, void**, size_t count, fi_addr_t dest, void* ctx) {
  return send(e, iov, count, dest, ctx, tx_flags(e, 0), false, 0, 0);
}
ssize_t msg_sendmsg(fid_ep* e, const fi_msg* m, uint64_t flags) {
  return send(e, m->msg_iov, m->iov_count, m->addr, m->context, flags, false, 0, m->data);
}
ssize_t msg_inject(fid_ep* e, const void* buf, size_t len, fi_addr_t dest) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, nullptr, tx_flags(e, FI_INJECT), false, 0, 0, false);
}
ssize_t msg_senddata(fid_ep* e, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                     void* ctx) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, ctx, tx_flags(e, FI_REMOTE_CQ_DATA), false, 0, data);
}
ssize_t msg_injectdata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, nullptr, tx_flags(e, FI_INJECT | FI_REMOTE_CQ_DATA), false, 0, data,
              false);
}

ssize_t t_recv(fid_ep* e, void* buf, size_t len, void*, fi_addr_t src, uint64_t tag,
               uint64_t ignore, void* ctx) {
  const iovec v = one(buf, len);
  return recv(e, &v, 1, src, ctx, rx_flags(e, 0), true, tag, ignore);
}
ssize_t t_recvv(fid_ep* e, const iovec* iov, void**, size_t count, fi_addr_t src, uint64_t tag,
                uint64_t ignore, void* ctx) {
  return recv(e, iov, count, src, ctx, rx_flags(e, 0), true, tag, ignore);
}
ssize_t t_recvmsg(fid_ep* e, const fi_msg_tagged* m, uint64_t flags) {
  return recv(e, m->msg_iov, m->iov_count, m->addr, m->context, flags, true, m->tag, m->ignore);
}
ssize_t t_send(fid_ep* e, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t tag,
               void* ctx) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, ctx, tx_flags(e, 0), true, tag, 0);
}
ssize_t t_sendv(fid_ep* e, const iovec* iov, void**, size_t count, fi_addr_t dest, uint64_t tag,
                void* ctx) {
  return send(e, iov, count, dest, ctx, tx_flags(e, 0), true, tag, 0);
}
ssize_t t_sendmsg(fid_ep* e, const fi_msg_tagged* m, uint64_t flags) {
  return send(e, m->msg_iov, m->iov_count, m->addr, m->context, flags, true, m->tag, m->data);
}
ssize_t t_inject(fid_ep* e, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, nullptr, tx_flags(e, FI_INJECT), true, tag, 0, false);
}
ssize_t t_senddata(fid_ep* e, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                   uint64_t tag, void* ctx) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, ctx, tx_flags(e, FI_REMOTE_CQ_DATA), true, tag, data);
}
ssize_t t_injectdata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                     uint64_t tag) {
  const iovec v = one(buf, len);
  return send(e, &v, 1, dest, nullptr, tx_flags(e, FI_INJECT | FI_REMOTE_CQ_DATA), true, tag, data,
              false);
}

fi_ops_msg msg_ops{sizeof(fi_ops_msg), msg_recv,    msg_recvv,  msg_recvmsg,  msg_send,
                   msg_sendv,          msg_sendmsg, msg_inject, msg_senddata, msg_injectdata};
fi_ops_tagged tagged_ops{sizeof(fi_ops_tagged),
                         t_recv,
                         t_recvv,
                         t_recvmsg,
                         t_send,
                         t_sendv,
                         t_sendmsg,
                         t_inject,
                         t_senddata,
                         t_injectdata};

// --- FI_RMA: writes (RDMA WRITE) and reads (a request the target answers with a write) ---

// `completion` false: fi_inject_write and fi_inject_writedata (see send).
ssize_t write(fid_ep* e, const iovec* iov, void** desc, size_t count, uint64_t dest, uint64_t addr,
              uint64_t key, void* context, uint64_t flags, uint64_t data, bool completion = true) {
  if (count > kMaxIov || key > 0xFFFFFFFFull) return -FI_EINVAL;
  auto op = std::make_unique<SendOp>();
  op->completion = completion;
  op->context = context;
  op->data = data;
  op->has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
  op->buffer = IoList::of(iov, count);
  op->remote_address = addr;
  op->rkey = static_cast<uint32_t>(key);
  return post_write(of(e), std::move(op), desc, dest, flags);
}

ssize_t rma_write(fid_ep* e, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t addr,
                  uint64_t key, void* ctx) {
  const iovec v = one(buf, len);
  return write(e, &v, &desc, 1, dest, addr, key, ctx, tx_flags(e, 0), 0);
}
ssize_t rma_writev(fid_ep* e, const iovec* iov, void** desc, size_t count, fi_addr_t dest,
                   uint64_t addr, uint64_t key, void* ctx) {
  return write(e, iov, desc, count, dest, addr, key, ctx, tx_flags(e, 0), 0);
}
ssize_t rma_writemsg(fid_ep* e, const fi_msg_rma* m, uint64_t flags) {
  if (m->rma_iov_count != 1) return -FI_EINVAL;
  return write(e, m->msg_iov, m->desc, m->iov_count, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key,
               m->context, flags, m->data);
}
ssize_t rma_inject(fid_ep* e, const void* buf, size_t len, fi_addr_t dest, uint64_t addr,
                   uint64_t key) {
  const iovec v = one(buf, len);
  return write(e, &v, nullptr, 1, dest, addr, key, nullptr, tx_flags(e, FI_INJECT), 0, false);
}
ssize_t rma_writedata(fid_ep* e, const void* buf, size_t len, void* desc, uint64_t data,
                      fi_addr_t dest, uint64_t addr, uint64_t key, void* ctx) {
  const iovec v = one(buf, len);
  return write(e, &v, &desc, 1, dest, addr, key, ctx, tx_flags(e, FI_REMOTE_CQ_DATA), data);
}
ssize_t rma_injectdata(fid_ep* e, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                       uint64_t addr, uint64_t key) {
  const iovec v = one(buf, len);
  return write(e, &v, nullptr, 1, dest, addr, key, nullptr,
               tx_flags(e, FI_INJECT | FI_REMOTE_CQ_DATA), data, false);
}

ssize_t read(fid_ep* e, const iovec* iov, size_t count, uint64_t source, uint64_t addr,
             uint64_t key, void* context, uint64_t flags) {
  if (count > kMaxIov || key > 0xFFFFFFFFull) return -FI_EINVAL;
  auto op = std::make_unique<SendOp>();
  op->context = context;
  op->buffer = IoList::of(iov, count);
  op->remote_address = addr;
  op->rkey = static_cast<uint32_t>(key);
  return post_read(of(e), std::move(op), source, flags);
}

ssize_t rma_read(fid_ep* e, void* buf, size_t len, void*, fi_addr_t source, uint64_t addr,
                 uint64_t key, void* ctx) {
  const iovec v = one(buf, len);
  return read(e, &v, 1, source, addr, key, ctx, tx_flags(e, 0));
}
ssize_t rma_readv(fid_ep* e, const iovec* iov, void**, size_t count, fi_addr_t source,
                  uint64_t addr, uint64_t key, void* ctx) {
  return read(e, iov, count, source, addr, key, ctx, tx_flags(e, 0));
}
ssize_t rma_readmsg(fid_ep* e, const fi_msg_rma* m, uint64_t flags) {
  if (m->rma_iov_count != 1) return -FI_EINVAL;
  return read(e, m->msg_iov, m->iov_count, m->addr, m->rma_iov[0].addr, m->rma_iov[0].key,
              m->context, flags);
}

// --- atomics and collectives: not offered (fi_getinfo does not list them) ---

template <typename F>
struct Stub;
template <typename R, typename... A>
struct Stub<R (*)(A...)> {
  static R call(A...) { return static_cast<R>(-FI_ENOSYS); }
};
#define MRC_STUB(ops, member) Stub<decltype(ops::member)>::call

fi_ops_rma rma_ops{sizeof(fi_ops_rma), rma_read,     rma_readv,  rma_readmsg,   rma_write,
                   rma_writev,         rma_writemsg, rma_inject, rma_writedata, rma_injectdata};
fi_ops_atomic atomic_ops{sizeof(fi_ops_atomic),
                         MRC_STUB(fi_ops_atomic, write),
                         MRC_STUB(fi_ops_atomic, writev),
                         MRC_STUB(fi_ops_atomic, writemsg),
                         MRC_STUB(fi_ops_atomic, inject),
                         MRC_STUB(fi_ops_atomic, readwrite),
                         MRC_STUB(fi_ops_atomic, readwritev),
                         MRC_STUB(fi_ops_atomic, readwritemsg),
                         MRC_STUB(fi_ops_atomic, compwrite),
                         MRC_STUB(fi_ops_atomic, compwritev),
                         MRC_STUB(fi_ops_atomic, compwritemsg),
                         MRC_STUB(fi_ops_atomic, writevalid),
                         MRC_STUB(fi_ops_atomic, readwritevalid),
                         MRC_STUB(fi_ops_atomic, compwritevalid)};
fi_ops_collective collective_ops{sizeof(fi_ops_collective),
                                 MRC_STUB(fi_ops_collective, barrier),
                                 MRC_STUB(fi_ops_collective, broadcast),
                                 MRC_STUB(fi_ops_collective, alltoall),
                                 MRC_STUB(fi_ops_collective, allreduce),
                                 MRC_STUB(fi_ops_collective, allgather),
                                 MRC_STUB(fi_ops_collective, reduce_scatter),
                                 MRC_STUB(fi_ops_collective, reduce),
                                 MRC_STUB(fi_ops_collective, scatter),
                                 MRC_STUB(fi_ops_collective, gather),
                                 MRC_STUB(fi_ops_collective, msg),
                                 MRC_STUB(fi_ops_collective, barrier2)};

}  // namespace

int open_endpoint(fid_domain* domain, fi_info* info, fid_ep** out, void* context) {
  if (info == nullptr || info->ep_attr == nullptr || info->ep_attr->type != FI_EP_RDM)
    return -FI_EINVAL;
  Domain* d = reinterpret_cast<Domain*>(domain);
  auto ep = std::make_unique<Endpoint>();
  ep->domain = d;
  ep->matcher = Matcher(d->config.unexpected_bytes);
  ep->tx_op_flags = info->tx_attr != nullptr ? info->tx_attr->op_flags : 0;
  ep->rx_op_flags = info->rx_attr != nullptr ? info->rx_attr->op_flags : 0;
  ep->directed_recv =
      ((info->caps | (info->rx_attr != nullptr ? info->rx_attr->caps : 0)) & FI_DIRECTED_RECV) != 0;
  // A source address (fi_getinfo's node/service with FI_SOURCE, or the application's) places
  // the listener, so that peers given the same node/service reach it.
  std::optional<EndpointName> source;
  if (info->src_addr != nullptr) {
    source = parse_name(info->src_addr, info->src_addrlen, true);
    if (!source) return -FI_EINVAL;
  }
  std::lock_guard lock(d->lock);
  if (const int r = open_listener(*ep, source ? &*source : nullptr); r != 0) return r;
  init_fid(ep->fid, FI_CLASS_EP, context, &ep_fi_ops, &ep_ops);
  ep->fid.cm = &cm_ops;
  ep->fid.msg = &msg_ops;
  ep->fid.tagged = &tagged_ops;
  ep->fid.rma = &rma_ops;
  ep->fid.atomic = &atomic_ops;
  ep->fid.collective = &collective_ops;
  d->endpoints.push_back(ep.get());
  *out = &ep.release()->fid;
  return 0;
}

}  // namespace mrc::fabric
