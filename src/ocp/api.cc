// The OCP MRC application API (mrc.h) except queue pairs: version and device queries, MRC
// contexts, completion channels, CQs (poll, notify, events and their acknowledgements), QP
// hints and asynchronous events. A CQ is an engine completion queue in every shard of the
// device (a QP completes into its own shard's); a completion becomes a struct ibv_wc here. Every
// call validates its handles and arguments and answers misuse with errno (EINVAL, EBUSY, ENOMEM,
// ...), never by crashing.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ocp/ctl_remote.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

namespace mrc::ocp {

bool valid(const mrc_context* c) {
  return c != nullptr && c->magic == kMagicMrcContext;
}
bool valid(const mrc_cq* c) {
  return c != nullptr && c->magic == kMagicCq;
}
bool valid(const mrc_comp_channel* c) {
  return c != nullptr && c->magic == kMagicChannel;
}
bool valid(const mrc_qp_hint* h) {
  return h != nullptr && h->magic == kMagicHint;
}
bool valid(const mrc_qp* q) {
  return q != nullptr && q->magic == kMagicQp;
}

ibv_wc to_ibv_wc(const Completion& c) {
  ibv_wc wc{};
  wc.wr_id = c.wr_id;
  switch (c.status) {
    case WcStatus::kSuccess:
      wc.status = IBV_WC_SUCCESS;
      break;
    case WcStatus::kLocalLengthError:
      wc.status = IBV_WC_LOC_LEN_ERR;
      break;
    case WcStatus::kLocalProtectionError:
      wc.status = IBV_WC_LOC_PROT_ERR;
      break;
    case WcStatus::kWrFlushError:
      wc.status = IBV_WC_WR_FLUSH_ERR;
      break;
    case WcStatus::kRemoteAccessError:
      wc.status = IBV_WC_REM_ACCESS_ERR;
      break;
    case WcStatus::kRemoteOperationError:
      wc.status = IBV_WC_REM_OP_ERR;
      break;
    case WcStatus::kRetryExceeded:
      wc.status = IBV_WC_RETRY_EXC_ERR;
      break;
    case WcStatus::kGeneralError:
      wc.status = IBV_WC_GENERAL_ERR;
      break;
  }
  wc.opcode = c.opcode == WcOpcode::kRdmaWrite ? IBV_WC_RDMA_WRITE : IBV_WC_RECV_RDMA_WITH_IMM;
  wc.byte_len = c.byte_len;
  if (c.has_immediate) {
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.imm_data = c.immediate;  // carried as the sender's big-endian bytes, as verbs does
  }
  wc.qp_num = c.qpn.value;
  wc.src_qp = 0;
  wc.pkey_index = 0;
  return wc;
}

// Takes up to num_entries completions of shard s's queue of `cq`, holding that shard's lock.
static int poll_shard(mrc_cq& cq, uint32_t s, int num_entries, ibv_wc* wc) {
  Completion batch[64];
  int done = 0;
  CompletionQueue& queue = *cq.queues[s];
  std::lock_guard lock(cq.context->nic->shard(s).lock());
  while (done < num_entries) {
    const size_t want = std::min<size_t>(64, static_cast<size_t>(num_entries - done));
    const size_t n = queue.poll(std::span<Completion>(batch, want));
    for (size_t i = 0; i < n; ++i) wc[done++] = to_ibv_wc(batch[i]);
    if (n < want) break;
  }
  cq.ready[s].store(static_cast<uint32_t>(queue.size()), std::memory_order_release);
  return done;
}

// Shard by shard, from the one after where the last call started (no shard starves), those
// with completions waiting; one shard's queue is read whatever its count says.
int poll_completions(mrc_cq& cq, int num_entries, ibv_wc* wc) {
  const auto shards = static_cast<uint32_t>(cq.queues.size());
  if (shards == 1) return poll_shard(cq, 0, num_entries, wc);
  const uint32_t first = cq.next_shard.fetch_add(1, std::memory_order_relaxed);
  int done = 0;
  for (uint32_t k = 0; k < shards && done < num_entries; ++k) {
    const uint32_t s = (first + k) % shards;
    if (cq.ready[s].load(std::memory_order_acquire) > 0)
      done += poll_shard(cq, s, num_entries - done, wc + done);
  }
  return done;
}

}  // namespace mrc::ocp

extern "C" {

void mrc_query_version(uint32_t* current_version, uint32_t* last_supported_version,
                       uint32_t* vendor_version, uint32_t* last_supported_vendor_version) {
  if (current_version != nullptr) *current_version = MRC_API_CURRENT_VERSION;
  if (last_supported_version != nullptr) *last_supported_version = MRC_API_LAST_SUPPORTED_VERSION;
  if (vendor_version != nullptr) *vendor_version = MRC_VENDOR_API_CURRENT_VERSION;
  if (last_supported_vendor_version != nullptr)
    *last_supported_vendor_version = MRC_VENDOR_API_LAST_SUPPORTED_VERSION;
}

int mrc_query_device_ex(ibv_context* context, mrc_context* mcontext, mrc_device_attr* attr,
                        int* supported) {
  if (context == nullptr || attr == nullptr || supported == nullptr) return fail(EINVAL, -1);
  if (mcontext != nullptr && (!valid(mcontext) || &mcontext->device->vctx.context != context))
    return fail(EINVAL, -1);
  std::memset(attr, 0, sizeof *attr);
  *supported = soft_context(context) != nullptr ? 1 : 0;
  if (*supported == 0) return 0;
  attr->mrc_protocol_version = MRC_PROTOCOL_VERSION_1;
  attr->wimm_attr.max_wimm = 65535;
  attr->wimm_attr.max_wimm_dest = 4096;
  attr->mpr_attr.max_mpr = 255;
  attr->mpr_attr.mpr_resolution = 1;
  attr->qp_attr.max_qp_hint = kMaxQpHints;
  attr->cap = MRC_DEVICE_CAP_TRIM_NACK;
  return 0;
}

int mrc_query_device(ibv_context* context, mrc_device_attr* attr, int* supported) {
  return mrc_query_device_ex(context, nullptr, attr, supported);
}

mrc_context* mrc_create_context(ibv_context* vcontext, mrc_context_attr* context_attr) {
  SoftContext* soft = soft_context(vcontext);
  if (soft == nullptr)
    return fail<mrc_context*>(vcontext == nullptr ? EINVAL : EOPNOTSUPP, nullptr);
  if (context_attr != nullptr && context_attr->mrc_api_version_used != 0 &&
      (context_attr->mrc_api_version_used >> MRC_API_VER_MAJOR_OFFSET) > 1)
    return fail<mrc_context*>(ENOTSUP, nullptr);  // written for a newer major version
  auto* c = new mrc_context();
  c->device = soft;
  c->nic = soft->nic;
  auto locks = c->nic->lock_all();
  ++soft->mrc_contexts;
  c->nic->contexts.push_back(c);
  return c;
}

int mrc_destroy_context(mrc_context* mrc_ctx) {
  if (!valid(mrc_ctx)) return fail(EINVAL, -1);
  {
    auto locks = mrc_ctx->nic->lock_all();
    if (mrc_ctx->channels + mrc_ctx->cqs + mrc_ctx->qps + mrc_ctx->hints > 0)
      return fail(EBUSY, -1);
    auto& list = mrc_ctx->nic->contexts;
    list.erase(std::remove(list.begin(), list.end(), mrc_ctx), list.end());
    --mrc_ctx->device->mrc_contexts;
    mrc_ctx->magic = kDead;
  }
  mrc_ctx->async.close();
  delete mrc_ctx;
  return 0;
}

int mrc_create_comp_channel(mrc_context* mrc_ctx, mrc_comp_channel** channel) {
  if (!valid(mrc_ctx) || channel == nullptr) return fail(EINVAL, -1);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  (void)fcntl(fds[1], F_SETFL, O_NONBLOCK);  // the progress thread never blocks on it
  auto* ch = new mrc_comp_channel();
  ch->context = mrc_ctx;
  ch->read_fd = fds[0];
  ch->write_fd = fds[1];
  auto locks = mrc_ctx->nic->lock_all();
  ++mrc_ctx->channels;
  *channel = ch;
  return 0;
}

int mrc_get_comp_channel_fd(mrc_comp_channel* channel, int* fd) {
  if (!valid(channel) || fd == nullptr) return fail(EINVAL, -1);
  *fd = channel->read_fd;
  return 0;
}

int mrc_destroy_comp_channel(mrc_comp_channel* channel) {
  if (!valid(channel)) return fail(EINVAL, -1);
  {
    auto locks = channel->context->nic->lock_all();
    if (channel->cqs > 0) return fail(EBUSY, -1);
    --channel->context->channels;
    channel->magic = kDead;
  }
  close(channel->read_fd);
  close(channel->write_fd);
  delete channel;
  return 0;
}

mrc_cq* mrc_create_cq(mrc_context* mrc_ctx, int cqe, void* cq_context, mrc_comp_channel* channel,
                      int comp_vector) {
  if (!valid(mrc_ctx) || cqe < 1 || cqe > kMaxCqe || comp_vector != 0)
    return fail<mrc_cq*>(EINVAL, nullptr);
  if (channel != nullptr && (!valid(channel) || channel->context != mrc_ctx))
    return fail<mrc_cq*>(EINVAL, nullptr);
  if (mrc_ctx->nic->remote())
    return fail<mrc_cq*>(refuse_data_path(*mrc_ctx->nic), nullptr);  // controller-only
  auto* cq = new mrc_cq();
  cq->context = mrc_ctx;
  cq->channel = channel;
  cq->cq_context = cq_context;
  Nic& nic = *mrc_ctx->nic;
  auto locks = nic.lock_all();  // every shard makes its queue: the same tag everywhere
  for (uint32_t s = 0; s < nic.shards(); ++s)
    cq->queues.push_back(nic.shard(s).create_cq(static_cast<uint32_t>(cqe)));
  cq->tag = static_cast<uint32_t>(nic.cqs_by_tag.size());
  nic.cqs_by_tag.push_back(cq);
  if (channel != nullptr) ++channel->cqs;
  ++mrc_ctx->cqs;
  mrc_ctx->cq_list.push_back(cq);
  return cq;
}

int mrc_poll_cq(mrc_cq* cq, int num_entries, ibv_wc* wc) {
  if (!valid(cq) || cq->ev_cq || num_entries < 0 || (num_entries > 0 && wc == nullptr))
    return fail(EINVAL, -1);
  // An empty CQ: the poller runs a round of the datapath itself (caller-driven progress, as a
  // soft-RoCE poll does), and the progress thread stands by while pollers keep it going. A
  // poller that only yielded shared the cores with the progress threads, and runs fell into a
  // mode of a third of the rate for their whole length (BENCHMARKS.md, "The OCP path").
  // With several shards the poller leaves the rounds to their threads: driving them all in turn
  // from one thread would undo what the threads are for.
  if (!cq->any_ready()) {
    Nic& nic = *cq->context->nic;
    if (nic.shards() > 1) return 0;
    nic.shard(0).progress(mrc::Duration{0});
    if (!cq->any_ready()) return 0;
  }
  return poll_completions(*cq, num_entries, wc);
}

int mrc_destroy_cq(mrc_cq* cq) {
  if (!valid(cq)) return fail(EINVAL, -1);
  mrc_context* c = cq->context;
  if (cq->remote_id != 0)  // an EV event CQ in the owning process
    if (const int e = remote_destroy_ev_cq(*c->nic, cq->remote_id); e != 0 && e != EIO)
      return fail(e, -1);
  {
    auto locks = c->nic->lock_all();
    std::lock_guard events(c->nic->events_mutex);
    if (cq->qps > 0 || cq->events_delivered != cq->events_acked) return fail(EBUSY, -1);
    if (cq->channel != nullptr) --cq->channel->cqs;
    --c->cqs;
    c->cq_list.erase(std::remove(c->cq_list.begin(), c->cq_list.end(), cq), c->cq_list.end());
    if (!cq->queues.empty()) c->nic->cqs_by_tag[cq->tag] = nullptr;
    cq->magic = kDead;
    // The engine keeps its (now unused) ring: Endpoint has no CQ removal.
  }
  delete cq;
  return 0;
}

int mrc_req_notify_cq(mrc_cq* cq, int solicited_only) {
  (void)solicited_only;  // every MRC receive completion counts as solicited
  if (!valid(cq) || cq->channel == nullptr) return fail(EINVAL, -1);
  Nic& nic = *cq->context->nic;
  {
    auto locks = nic.lock_all();  // no round runs: no queue changes under the check below
    std::lock_guard events(nic.events_mutex);
    cq->armed = true;
    // Completions already waiting are announced now; later ones when a queue next turns
    // non-empty (Nic::on_completions). EV event CQs after each round (ctl_after_progress).
    const bool waiting = std::any_of(cq->queues.begin(), cq->queues.end(),
                                     [](const CompletionQueue* q) { return q->size() > 0; });
    if (waiting) signal_channel(cq);
  }
  for (uint32_t s = 0; s < nic.shards(); ++s) nic.shard(s).wake();
  return 0;
}

int mrc_get_cq_event(mrc_comp_channel* channel, mrc_cq** cq, void** cq_context) {
  if (!valid(channel) || cq == nullptr || cq_context == nullptr) return fail(EINVAL, -1);
  uintptr_t raw = 0;  // the channel carries CQ pointers, written whole
  const ssize_t n = read(channel->read_fd, &raw, sizeof raw);
  if (n != static_cast<ssize_t>(sizeof raw)) return n < 0 ? -1 : fail(EIO, -1);
  auto* got = reinterpret_cast<mrc_cq*>(raw);
  *cq = got;
  *cq_context = got->cq_context;
  return 0;
}

void mrc_ack_cq_events(mrc_cq* cq, unsigned int nevents) {
  if (!valid(cq)) return;
  std::lock_guard events(cq->context->nic->events_mutex);
  cq->events_acked = std::min(cq->events_acked + nevents, cq->events_delivered);
}

int mrc_get_async_event(mrc_context* mrc_ctx, mrc_async_event* event) {
  if (!valid(mrc_ctx) || event == nullptr) return fail(EINVAL, -1);
  // Destroying the context wakes a waiter, which then fails with EINVAL.
  return mrc_ctx->async.wait_pop(*event) ? 0 : fail(EINVAL, -1);
}

void mrc_ack_async_event(mrc_async_event* event) {
  (void)event;
}

mrc_qp_hint* mrc_create_qp_hint(mrc_context* mrc_ctx, mrc_qp_hint_init_attr* init_attr) {
  if (!valid(mrc_ctx) || init_attr == nullptr) return fail<mrc_qp_hint*>(EINVAL, nullptr);
  const mrc_qp_hint_attr& a = init_attr->attr;
  if (a.num_qps_per_peer < 0 || a.num_send_peers < 0 || a.num_remote_recv_peers < 0)
    return fail<mrc_qp_hint*>(EINVAL, nullptr);
  auto locks = mrc_ctx->nic->lock_all();
  if (mrc_ctx->hints >= static_cast<int>(kMaxQpHints)) return fail<mrc_qp_hint*>(ENOMEM, nullptr);
  auto* h = new mrc_qp_hint();
  h->context = mrc_ctx;
  h->attr = a;
  ++mrc_ctx->hints;
  return h;
}

int mrc_destroy_qp_hint(mrc_qp_hint* qp_hint) {
  if (!valid(qp_hint)) return fail(EINVAL, -1);
  {
    auto locks = qp_hint->context->nic->lock_all();
    if (qp_hint->qps > 0) return fail(EBUSY, -1);
    --qp_hint->context->hints;
    qp_hint->magic = kDead;
  }
  delete qp_hint;
  return 0;
}

int mrc_query_qp_hint(mrc_qp_hint* qp_hint, mrc_qp_hint_attr* attr, int mask) {
  if (!valid(qp_hint) || attr == nullptr || (mask & ~kHintMask) != 0) return fail(EINVAL, -1);
  auto locks = qp_hint->context->nic->lock_all();
  if (mask & MRC_QP_HINT_NUM_QPS_PER_PEER) attr->num_qps_per_peer = qp_hint->attr.num_qps_per_peer;
  if (mask & MRC_QP_HINT_NUM_SEND_PEERS) attr->num_send_peers = qp_hint->attr.num_send_peers;
  if (mask & MRC_QP_HINT_NUM_REMOTE_RECV_PEERS)
    attr->num_remote_recv_peers = qp_hint->attr.num_remote_recv_peers;
  if (mask & MRC_QP_HINT_VENDOR_CFG)
    std::memcpy(attr->vendor_cfg, qp_hint->attr.vendor_cfg, sizeof attr->vendor_cfg);
  return 0;
}

int mrc_modify_qp_hint(mrc_qp_hint* qp_hint, mrc_qp_hint_attr* attr, int mask) {
  if (!valid(qp_hint) || attr == nullptr || (mask & ~kHintMask) != 0) return fail(EINVAL, -1);
  if (attr->num_qps_per_peer < 0 || attr->num_send_peers < 0 || attr->num_remote_recv_peers < 0)
    return fail(EINVAL, -1);
  auto locks = qp_hint->context->nic->lock_all();
  if (mask & MRC_QP_HINT_NUM_QPS_PER_PEER) qp_hint->attr.num_qps_per_peer = attr->num_qps_per_peer;
  if (mask & MRC_QP_HINT_NUM_SEND_PEERS) qp_hint->attr.num_send_peers = attr->num_send_peers;
  if (mask & MRC_QP_HINT_NUM_REMOTE_RECV_PEERS)
    qp_hint->attr.num_remote_recv_peers = attr->num_remote_recv_peers;
  if (mask & MRC_QP_HINT_VENDOR_CFG)
    std::memcpy(qp_hint->attr.vendor_cfg, attr->vendor_cfg, sizeof attr->vendor_cfg);
  return 0;
}

}  // extern "C"
