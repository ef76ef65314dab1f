// Verbs RC queue pairs on mrc devices: ibv_create_qp(IBV_QPT_RC), ibv_modify_qp, ibv_query_qp,
// ibv_destroy_qp and the ibv_post_send / ibv_post_recv slots of an mrc context, mapped onto MRC
// QPs (qp.cc) with their EVs. This is what a program written for an RC NIC (perftest's
// ib_write_bw and ib_write_lat) runs on: an RC QP becomes an MRC QP of an MRC context the verbs
// context keeps for it (SoftContext::verbs_mrc), and each verbs CQ it reports into gets an MRC
// CQ behind it (SoftCq::backing) that ibv_poll_cq drains. The destination of IBV_QP_AV (a
// RoCEv2 GID) names the peer's planes as for mrc_modify_qp.
//
// MRC moves RDMA WRITE and WRITE with immediate. SEND, RDMA READ and atomics are refused with
// EOPNOTSUPP and a message saying so; so are QP types other than RC and shared receive queues.
// Inline data (IBV_SEND_INLINE, up to kMaxInlineData bytes) passes through to the MRC QP, which
// copies it into a registered staging ring at post time, so the caller may reuse its buffer at
// once, as verbs promises.
#include <cerrno>
#include <cstring>
#include <string>

#include "mrc/mrc.hpp"
#include "ocp/objects.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

const char* opcode_name(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
      return "SEND";
    case IBV_WR_RDMA_READ:
      return "RDMA READ";
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return "atomics";
    default:
      return "this opcode";
  }
}

// The context's MRC context for verbs QPs, created on first use.
mrc_context* verbs_mrc_of(SoftContext& soft) {
  std::lock_guard lock(soft.qp_mutex);
  if (soft.verbs_mrc == nullptr) soft.verbs_mrc = mrc_create_context(&soft.vctx.context, nullptr);
  return soft.verbs_mrc;
}

// The MRC CQ behind verbs CQ `cq`, created on first use (capacity: the verbs CQ's).
mrc_cq* backing_of(SoftCq& cq, mrc_context* mrc) {
  std::lock_guard lock(cq.backing_mutex);
  mrc_cq* b = cq.backing.load(std::memory_order_acquire);
  if (b != nullptr) return b;
  b = mrc_create_cq(mrc, static_cast<int>(cq.capacity), nullptr, nullptr, 0);
  if (b == nullptr) return nullptr;
  {
    auto locks = cq.owner->nic->lock_all();  // every shard's round reads it
    b->verbs_cq = &cq;
  }
  cq.backing.store(b, std::memory_order_release);
  return b;
}

// What ibv_create_qp refuses before anything is created: errno, and a message for a type or
// feature MRC does not have.
int check_create(SoftPd& pd, const ibv_qp_init_attr& attr) {
  if (attr.qp_type != IBV_QPT_RC) {
    say_once(
        "ibv_create_qp: only IBV_QPT_RC queue pairs on mrc devices (MRC is reliable "
        "connected: RC QPs map onto MRC QPs)");
    return EOPNOTSUPP;
  }
  if (attr.srq != nullptr) {
    say_once("ibv_create_qp: shared receive queues are not supported on mrc devices");
    return EOPNOTSUPP;
  }
  SoftCq* send = soft_cq(attr.send_cq);
  SoftCq* recv = soft_cq(attr.recv_cq);
  if (send == nullptr || recv == nullptr || send->owner != pd.owner || recv->owner != pd.owner)
    return EINVAL;
  if (attr.cap.max_inline_data > kMaxInlineData) {
    say_once("ibv_create_qp: max_inline_data " + std::to_string(attr.cap.max_inline_data) +
             " exceeds what mrc devices inline (" + std::to_string(kMaxInlineData) + " bytes)");
    return EINVAL;
  }
  return 0;
}

void fill_handle(SoftQp& s, SoftPd& pd, const ibv_qp_init_attr& attr) {
  ibv_qp& q = s.qp;
  std::memset(&q, 0, sizeof q);
  q.context = pd.pd.context;
  q.qp_context = attr.qp_context;
  q.pd = &pd.pd;
  q.send_cq = attr.send_cq;
  q.recv_cq = attr.recv_cq;
  q.handle = kMagicVerbsQp;
  uint32_t qpn = 0;
  (void)mrc_get_qpn(s.mrc, &qpn);
  q.qp_num = qpn;
  q.state = IBV_QPS_RESET;
  q.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
}

void release(SoftQp* s) {
  if (s->mrc != nullptr) (void)mrc_destroy_qp(s->mrc);
  s->magic = kDead;
}

// One work request, under qp.post_mutex. Only RDMA WRITE (with or without immediate) maps
// onto MRC; the flags MRC has no use for (fence, solicited) are dropped.
int post_one(SoftQp& qp, const ibv_send_wr& wr) {
  if (wr.opcode != IBV_WR_RDMA_WRITE && wr.opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
    say_once(std::string("ibv_post_send: ") + opcode_name(wr.opcode) +
             " is not supported on mrc devices (MRC moves RDMA WRITE and RDMA WRITE with "
             "immediate)");
    return EOPNOTSUPP;
  }
  if (wr.num_sge < 0 || (wr.num_sge > 0 && wr.sg_list == nullptr)) return EINVAL;
  ibv_send_wr one = wr;
  one.next = nullptr;
  one.send_flags = wr.send_flags & (IBV_SEND_SIGNALED | IBV_SEND_INLINE);
  ibv_send_wr* bad = nullptr;
  return mrc_post_send(qp.mrc, &one, &bad);
}

int post_send(ibv_qp* handle, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  SoftQp* qp = soft_qp(handle);
  int e = qp == nullptr ? EOPNOTSUPP : (wr == nullptr ? EINVAL : 0);
  if (e == 0) {
    std::lock_guard lock(qp->post_mutex);
    for (; wr != nullptr; wr = wr->next)
      if ((e = post_one(*qp, *wr)) != 0) break;
  }
  if (e == 0) return 0;
  if (bad_wr != nullptr) *bad_wr = wr;
  errno = e;
  return e;
}

// Receives are consumed by incoming WRITE with immediate (MRC's only receive-side completion).
int post_recv(ibv_qp* handle, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  SoftQp* qp = soft_qp(handle);
  if (qp == nullptr) {
    if (bad_wr != nullptr) *bad_wr = wr;
    return fail(EOPNOTSUPP, EOPNOTSUPP);
  }
  if (mrc_post_recv(qp->mrc, wr, bad_wr) == 0) return 0;
  return errno;
}

}  // namespace

namespace mrc::ocp {

SoftQp* soft_qp(ibv_qp* qp) {
  if (qp == nullptr || qp->handle != kMagicVerbsQp || !ours(qp->context)) return nullptr;
  auto* soft = reinterpret_cast<SoftQp*>(qp);
  return soft->magic == kMagicVerbsQp ? soft : nullptr;
}

void fill_qp_ops(ibv_context_ops& ops) {
  ops.post_send = post_send;
  ops.post_recv = post_recv;
}

ibv_qp* verbs_create_qp(SoftPd& pd, ibv_qp_init_attr* attr) {
  if (attr == nullptr) return fail<ibv_qp*>(EINVAL, nullptr);
  if (int e = check_create(pd, *attr)) return fail<ibv_qp*>(e, nullptr);
  SoftCq* send = soft_cq(attr->send_cq);
  SoftCq* recv = soft_cq(attr->recv_cq);
  mrc_context* mrc = verbs_mrc_of(*pd.owner);
  if (mrc == nullptr) return nullptr;  // errno from mrc_create_context
  mrc_qp_init_attr init{};
  init.qp_context = attr->qp_context;
  init.send_cq = backing_of(*send, mrc);
  init.recv_cq = backing_of(*recv, mrc);
  if (init.send_cq == nullptr || init.recv_cq == nullptr) return nullptr;
  init.cap = attr->cap;
  init.sq_sig_all = attr->sq_sig_all;
  init.pd = &pd.pd;
  auto* s = new SoftQp();
  s->pd = &pd;
  s->send_cq = send;
  s->recv_cq = recv;
  s->sq_sig_all = attr->sq_sig_all;
  s->mrc = mrc_create_qp(mrc, &init);
  if (s->mrc == nullptr) {
    const int e = errno;
    delete s;
    return fail<ibv_qp*>(e, nullptr);
  }
  s->cap = init.cap;  // as granted, inline data rounded up to a staging slot
  attr->cap = s->cap;
  fill_handle(*s, pd, *attr);
  auto locks = pd.owner->nic->lock_all();
  ++send->users;
  ++recv->users;
  return &s->qp;
}

int verbs_modify_qp(SoftQp& qp, ibv_qp_attr* attr, int mask) {
  if (attr == nullptr) return EINVAL;
  ibv_qp_attr a = *attr;
  // REMOTE_ATOMIC is accepted and has no effect (no MRC operation is an atomic), as for MRs.
  a.qp_access_flags &= ~static_cast<unsigned>(IBV_ACCESS_REMOTE_ATOMIC);
  if (mrc_modify_qp(qp.mrc, &a, mask, nullptr, 0) != 0) return errno;
  if (mask & IBV_QP_STATE) qp.qp.state = attr->qp_state;
  return 0;
}

int verbs_query_qp(SoftQp& qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  if (attr == nullptr) return EINVAL;
  if (mrc_query_qp(qp.mrc, attr, mask, nullptr, 0, nullptr) != 0) return errno;
  attr->cap = qp.cap;
  qp.qp.state = attr->qp_state;
  if (init != nullptr) {
    std::memset(init, 0, sizeof *init);
    init->qp_context = qp.qp.qp_context;
    init->send_cq = qp.qp.send_cq;
    init->recv_cq = qp.qp.recv_cq;
    init->cap = qp.cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = qp.sq_sig_all;
  }
  return 0;
}

int verbs_destroy_qp(SoftQp& qp) {
  release(&qp);
  {
    auto locks = qp.pd->owner->nic->lock_all();
    --qp.send_cq->users;
    --qp.recv_cq->users;
  }
  pthread_mutex_destroy(&qp.qp.mutex);
  pthread_cond_destroy(&qp.qp.cond);
  delete &qp;
  return 0;
}

int close_verbs_qps(SoftContext& context) {
  std::lock_guard lock(context.qp_mutex);
  if (context.verbs_mrc == nullptr) return 0;
  if (mrc_destroy_context(context.verbs_mrc) != 0) return EBUSY;  // QPs or CQs left
  context.verbs_mrc = nullptr;
  return 0;
}

}  // namespace mrc::ocp
