// OCP MRC queue pairs over engine QueuePairs: create, modify through RESET -> INIT -> RTR ->
// RTS (and to ERROR or RESET) with verbs and MRC attribute masks, query, post and destroy.
//
// MRC attributes are staged in a QpConfig and handed to the engine at the transition that
// sizes what they configure: responder settings (mpr_dest, max_wimm_dest) before RTR, the
// requester's (mpr, max_wimm, timeout, retries) before RTS. The peer is named by the RoCEv2
// destination GID of IBV_QP_AV; its plane list comes from the device configuration.
// Verbs attributes that the OCP API does not use (port, verbs timeout and retry counts, RNR,
// RD atomics, alternate path) are accepted and ignored, as OCP's own examples pass them.
// Inline data (cap.max_inline_data up to kMaxInlineData, IBV_SEND_INLINE) is copied at the post
// into a staging ring registered with the engine (mrc_qp::staging).
// A QP is created, posted to and destroyed through the host's queue pairs (host/queue_pairs.h),
// which place it in a shard; its own verbs state machine and in-band key agreement stay here.
// Locks (objects.h): modify and query hold every shard's lock, posts the QP's shard's only.
#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "mrc/mrc.hpp"
#include "ocp/ctl.h"
#include "ocp/ocp_internal.h"
#include "util/errno_map.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

constexpr int kIgnoredVerbs = IBV_QP_PORT | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_QP_RD_ATOMIC |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
                              IBV_QP_PKEY_INDEX | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_QKEY;
constexpr int kUsedVerbs = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_AV |
                           IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN;
constexpr int kInitGroup = MRC_QP_HINT | MRC_QP_EV_PROFILE_ID | MRC_QP_CC_PROFILE_ID;
constexpr int kRtrGroup = MRC_QP_MAX_WIMM_DEST | MRC_QP_MPR_DEST | MRC_QP_CAP;
constexpr int kRtsGroup = MRC_QP_MAX_WIMM | MRC_QP_MPR | MRC_QP_RETRY_CNT | MRC_QP_TIMEOUT;
constexpr int kKnownMrc = kInitGroup | kRtrGroup | kRtsGroup | MRC_QP_VENDOR_CFG;

ibv_qp_state engine_state(const mrc_qp& qp) {
  switch (qp.placed.qp->state()) {
    case QpState::kReset:
      return IBV_QPS_RESET;
    case QpState::kInit:
      return IBV_QPS_INIT;
    case QpState::kRtr:
      return IBV_QPS_RTR;
    case QpState::kRts:
      return IBV_QPS_RTS;
    case QpState::kError:
      return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

// Hands the staged configuration to the engine if the QP's state still allows it.
int push_config(mrc_qp& qp, const QpConfig& next) {
  Result<Ok, QpError> r = Ok{};
  switch (qp.placed.qp->state()) {
    case QpState::kReset:
    case QpState::kInit:
      r = qp.placed.qp->set_config(next);
      break;
    case QpState::kRtr:
      r = qp.placed.qp->set_requester_config(next);
      break;
    default:
      return EINVAL;
  }
  if (!r.ok()) {
    std::fprintf(stderr, "mrc: modify_qp: %s\n", qp.placed.qp->config_error().c_str());
    return EINVAL;
  }
  qp.config = next;
  return 0;
}

int check_mrc_values(const mrc_qp_attr& a, int mask) {
  if ((mask & MRC_QP_MPR) && a.mpr.mpr == 0) return EINVAL;
  if ((mask & MRC_QP_MPR_DEST) && a.mpr.mpr_dest == 0) return EINVAL;
  if ((mask & MRC_QP_MAX_WIMM) && a.wimm.max_wimm == 0) return EINVAL;
  if ((mask & MRC_QP_MAX_WIMM_DEST) && (a.wimm.max_wimm_dest == 0 || a.wimm.max_wimm_dest > 4096))
    return EINVAL;
  if ((mask & MRC_QP_TIMEOUT) && a.timeout > 24) return EINVAL;
  if ((mask & MRC_QP_RETRY_CNT) && (a.retry.linear_cnt > 7 || a.retry.exp_cnt > 25)) return EINVAL;
  if (mask & MRC_QP_CAP) {
    if (a.cap & MRC_QP_CAP_DYNAMIC_MPR) return EOPNOTSUPP;  // not advertised by the device
    if (a.cap & ~static_cast<uint32_t>(MRC_QP_CAP_TRIM_NACK_DEST_UNSUPPORTED |
                                       MRC_QP_CAP_SVC_TIME_DEST_UNSUPPORTED))
      return EINVAL;
  }
  return 0;
}

int check_groups(ibv_qp_state state, int mask) {
  const bool configurable = state == IBV_QPS_RESET || state == IBV_QPS_INIT;
  if ((mask & (kInitGroup | kRtrGroup)) && !configurable) return EINVAL;
  if ((mask & kRtsGroup) && !configurable && state != IBV_QPS_RTR) return EINVAL;
  return 0;
}

// Profiles and the hint: reference counts move only once everything else has succeeded.
int stage_profiles(mrc_qp& qp, const mrc_qp_attr& a, int mask, QpConfig& next) {
  Nic& nic = *qp.context->nic;
  if (mask & MRC_QP_EV_PROFILE_ID)
    if (int e = ctl_apply_ev_profile(nic, a.profile.ev_profile_id, qp.placed.shard, next)) return e;
  if (mask & MRC_QP_CC_PROFILE_ID)
    if (int e = ctl_apply_cc_profile(nic, a.profile.cc_profile_id, next)) return e;
  if ((mask & MRC_QP_HINT) && a.qp_hint != nullptr &&
      (!valid(a.qp_hint) || a.qp_hint->context != qp.context))
    return EINVAL;
  return 0;
}

void commit_profiles(mrc_qp& qp, const mrc_qp_attr& a, int mask) {
  Nic& nic = *qp.context->nic;
  if (mask & MRC_QP_EV_PROFILE_ID) {
    if (qp.has_ev_profile) --nic.ev_profiles[qp.ev_profile].qps;
    qp.ev_profile = a.profile.ev_profile_id;
    qp.has_ev_profile = true;
    ++nic.ev_profiles[qp.ev_profile].qps;
  }
  if (mask & MRC_QP_CC_PROFILE_ID) {
    if (qp.has_cc_profile) --nic.cc_profiles[qp.cc_profile].qps;
    qp.cc_profile = a.profile.cc_profile_id;
    qp.has_cc_profile = true;
    ++nic.cc_profiles[qp.cc_profile].qps;
  }
  if (mask & MRC_QP_HINT) {
    if (qp.mattr.qp_hint != nullptr) --qp.mattr.qp_hint->qps;
    qp.mattr.qp_hint = a.qp_hint;
    if (a.qp_hint != nullptr) ++a.qp_hint->qps;
  }
}

int apply_mrc_attrs(mrc_qp& qp, const mrc_qp_attr* a, int mask, QpConfig& next) {
  if (mask == 0) return 0;
  if (a == nullptr || (mask & ~kKnownMrc) != 0) return EINVAL;
  if (int e = check_mrc_values(*a, mask)) return e;
  if (int e = check_groups(qp.state, mask)) return e;
  if (int e = stage_profiles(qp, *a, mask, next)) return e;
  if (mask & MRC_QP_MPR) next.mpr = a->mpr.mpr;
  if (mask & MRC_QP_MPR_DEST) next.mpr_dest = a->mpr.mpr_dest;
  if (mask & MRC_QP_MAX_WIMM) next.max_wimm = a->wimm.max_wimm;
  if (mask & MRC_QP_MAX_WIMM_DEST) next.max_wimm_dest = a->wimm.max_wimm_dest;
  if (mask & MRC_QP_TIMEOUT) next.timeout = a->timeout;
  if (mask & MRC_QP_RETRY_CNT) {
    next.retry_linear = a->retry.linear_cnt;
    next.retry_exp = a->retry.exp_cnt;
  }
  return 0;
}

void remember_mrc_attrs(mrc_qp& qp, const mrc_qp_attr* a, int mask) {
  if (mask == 0) return;
  commit_profiles(qp, *a, mask);
  if (mask & MRC_QP_CAP) qp.mattr.cap = a->cap;
  if (mask & MRC_QP_VENDOR_CFG)
    std::memcpy(qp.mattr.vendor_cfg, a->vendor_cfg, sizeof a->vendor_cfg);
}

int apply_verbs_attrs(mrc_qp& qp, const ibv_qp_attr* v, int mask, QpConfig& next) {
  if (mask == 0) return 0;
  if (v == nullptr || (mask & ~(kUsedVerbs | kIgnoredVerbs)) != 0) return EINVAL;
  if (mask & IBV_QP_PATH_MTU) {
    if (v->path_mtu < IBV_MTU_256 || v->path_mtu > IBV_MTU_4096) return EINVAL;
    if (qp.state != IBV_QPS_RESET && qp.state != IBV_QPS_INIT) return EINVAL;
    // The path MTU asked for, as far as the datapath's datagram carries it (a RoCE NIC's
    // active MTU is at most its port's).
    Nic& nic = *qp.context->nic;
    next.set_mtu(std::min(128u << v->path_mtu,
                          nic.shard(qp.placed.shard).max_mtu_bytes(nic.spec->host.context.secure)));
  }
  if ((mask & IBV_QP_ACCESS_FLAGS) &&
      (v->qp_access_flags &
       ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) != 0)
    return EINVAL;
  if ((mask & (IBV_QP_RQ_PSN | IBV_QP_SQ_PSN | IBV_QP_DEST_QPN)) &&
      ((v->rq_psn | v->sq_psn) > Psn::kMask || v->dest_qp_num > 0xFFFFFF))
    return EINVAL;
  return 0;
}

void remember_verbs_attrs(mrc_qp& qp, const ibv_qp_attr* v, int mask) {
  if (mask == 0) return;
  if (mask & IBV_QP_PATH_MTU) qp.vattr.path_mtu = v->path_mtu;
  if (mask & IBV_QP_ACCESS_FLAGS) qp.vattr.qp_access_flags = v->qp_access_flags;
  if (mask & IBV_QP_AV) qp.vattr.ah_attr = v->ah_attr;
  if (mask & IBV_QP_DEST_QPN) qp.vattr.dest_qp_num = v->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) qp.vattr.rq_psn = v->rq_psn;
  if (mask & IBV_QP_SQ_PSN) qp.vattr.sq_psn = v->sq_psn;
}

// The peer's planes from the destination GID: an IPv4-mapped RoCEv2 GID names an IPv4 plane,
// any other GID an IPv6 plane (an SRv6 device's peer: its locator); at the ports of the shard
// that holds the peer QP, if the peer runs several threads (its entry's threads=).
int resolve_peer(mrc_qp& qp, const ibv_ah_attr& ah, Qpn peer_qpn, uint32_t& handle) {
  const ibv_gid& gid = ah.grh.dgid;
  if (!ah.is_global) {
    std::fprintf(stderr, "mrc: modify_qp(RTR): the destination needs a RoCEv2 GID (is_global=1)\n");
    return EINVAL;
  }
  auto peer = find_peer_by_gid(device_config(), gid.raw);
  Nic& nic = *qp.context->nic;
  const std::string address = gid_text(gid.raw);
  const char* text = address.c_str();
  if (!peer) {
    std::fprintf(stderr, "mrc: modify_qp(RTR): %s is not a plane of any device or peer in %s\n",
                 text,
                 device_config().source.empty() ? "the configuration (MRC_DEVICES)"
                                                : device_config().source.c_str());
    return EINVAL;
  }
  const auto planes = host::qp_planes(peer->planes, peer_qpn, peer->host.context.threads);
  const auto added = host::add_peer(*nic.host, qp.placed.shard, planes,
                                    "peer " + address + " of device " + nic.spec->name);
  if (!added.ok()) {
    std::fprintf(stderr, "mrc: modify_qp(RTR): %s\n", added.error().message.c_str());
    return EINVAL;
  }
  handle = added.value();
  return 0;
}

// A secure device's QP agrees its keys with the peer QP from RTR on (secure/inband_keys.h); it
// sends and accepts nothing until then, and a failed agreement moves it to ERROR.
int start_key_agreement(mrc_qp& qp, uint32_t peer, const ibv_qp_attr& v) {
  Nic& nic = *qp.context->nic;
  if (!qp.placed.qp->secure()) return 0;
  const auto started = nic.shard(qp.placed.shard)
                           .agree_keys(*qp.placed.qp, nic.key, peer, Qpn(v.dest_qp_num),
                                       "the peer at " + gid_text(v.ah_attr.grh.dgid.raw));
  if (started.ok()) return 0;
  std::fprintf(stderr, "mrc: modify_qp(RTR): %s\n", started.error().message.c_str());
  qp.placed.qp->to_reset();  // back to INIT, where the failed call found it
  (void)qp.placed.qp->to_init();
  return to_errno(started.error().code);
}

int transition(mrc_qp& qp, ibv_qp_state to, const ibv_qp_attr* v, int mask) {
  const ibv_qp_state from = qp.state;
  if (to == IBV_QPS_ERR || to == IBV_QPS_RESET) {
    if (to == IBV_QPS_ERR) qp.placed.qp->to_error();
    if (to == IBV_QPS_RESET) qp.placed.qp->to_reset();
    qp.context->nic->shard(qp.placed.shard).forget_keys(qp.placed.qp->qpn());  // an agreement ends
  } else if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    if (!qp.placed.qp->to_init().ok()) return EINVAL;
  } else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    constexpr int kNeeded = IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if ((mask & kNeeded) != kNeeded) return EINVAL;
    uint32_t peer = 0;
    if (int e = resolve_peer(qp, v->ah_attr, Qpn(v->dest_qp_num), peer)) return e;
    RtrAttributes rtr{Qpn(v->dest_qp_num), Psn(v->rq_psn), peer};
    if (!qp.placed.qp->to_rtr(rtr).ok()) return EINVAL;
    if (int e = start_key_agreement(qp, peer, *v)) return e;
    ctl_qp_connected(*qp.context->nic, qp);
  } else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    if (!(mask & IBV_QP_SQ_PSN)) return EINVAL;
    if (!qp.placed.qp->to_rts(RtsAttributes{Psn(v->sq_psn)}).ok()) return EINVAL;
  } else if (from != to || (to != IBV_QPS_INIT && to != IBV_QPS_RTR && to != IBV_QPS_RTS)) {
    return EINVAL;  // skipped states, SQD/SQE, or a backward move other than RESET/ERR
  }
  qp.state = to;
  qp.verbs_view.state = to;
  qp.fatal_reported = to == IBV_QPS_ERR;
  return 0;
}

// The QP as the verbs context's asynchronous events name it (ibv_get_async_event): a handle that
// carries what a consumer reads from an event's QP (qp_num, qp_context, context, type, state).
// Verbs calls on it are refused (verbs_refused.cc: its context is an mrc context).
void init_verbs_view(mrc_qp& qp, const mrc_qp_init_attr& attr) {
  ibv_qp& v = qp.verbs_view;
  v.context = &qp.context->device->vctx.context;
  v.qp_context = attr.qp_context;
  v.pd = attr.pd;
  v.qp_num = qp.placed.qp->qpn().value;
  v.state = IBV_QPS_RESET;
  v.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&v.mutex, nullptr);
  pthread_cond_init(&v.cond, nullptr);
}

int modify_locked(mrc_qp& qp, ibv_qp_attr* v, int vmask, mrc_qp_attr* m, int mmask) {
  qp.state = engine_state(qp);  // the engine may have moved the QP to ERROR on its own
  if ((vmask & IBV_QP_CUR_STATE) && v != nullptr && v->cur_qp_state != qp.state) return EINVAL;
  const ibv_qp_state to = (vmask & IBV_QP_STATE) && v != nullptr ? v->qp_state : qp.state;
  QpConfig next = qp.config;
  if (int e = apply_verbs_attrs(qp, v, vmask, next)) return e;
  if (int e = apply_mrc_attrs(qp, m, mmask, next)) return e;
  const bool config_changes =
      vmask & IBV_QP_PATH_MTU || mmask & (kInitGroup | kRtrGroup | kRtsGroup);
  if (config_changes && to != IBV_QPS_ERR && to != IBV_QPS_RESET)
    if (int e = push_config(qp, next)) return e;
  if (int e = transition(qp, to, v, vmask)) return e;
  remember_verbs_attrs(qp, v, vmask);
  remember_mrc_attrs(qp, m, mmask);
  return 0;
}

// What the host creates for mrc_create_qp (host/queue_pairs.h): the capabilities asked for, the
// entry's path policy and an equal share of EVs per plane; the datapath fills in the rest. The
// shard is the host's next in turn (placement under every shard's lock: calls may race); a
// secure device's QPs agree their keys in band, at RTR.
host::QpSpec qp_spec(Nic& nic, const SoftPd& pd, const mrc_qp_init_attr& attr) {
  const ibv_qp_cap& cap = attr.cap;
  host::QpSpec spec;
  QpConfig& config = spec.config;
  config.max_send_wr = cap.max_send_wr;
  config.max_recv_wr = std::max<uint32_t>(cap.max_recv_wr, 1);
  config.max_sge = std::max<uint32_t>({cap.max_send_sge, cap.max_recv_sge, 1});
  config.path_policy = nic.spec->path_policy;
  const auto planes = static_cast<uint16_t>(nic.spec->planes.size());
  config.ev_count = static_cast<uint16_t>(config.ev_count / planes * planes);
  spec.pd = pd.engine_pd;
  spec.send_cq = [cq = attr.send_cq](uint32_t s) { return cq->queues[s]; };
  spec.recv_cq = [cq = attr.recv_cq](uint32_t s) { return cq->queues[s]; };
  spec.secure = nic.spec->host.context.secure;
  spec.keys_in_band = true;
  auto locks = nic.lock_all();
  spec.shard = nic.host->place_qp();
  return spec;
}

int post_error(PostError e) {
  return e == PostError::kQueueFull ? ENOMEM : EINVAL;
}

// Registers the QP's inline staging ring with the host (in every shard, as every region; none
// without inline data); `inline_data` is what was asked, at most kMaxInlineData.
int make_staging(Nic& nic, const SoftPd& pd, mrc_qp& qp, uint32_t inline_data) {
  if (inline_data == 0) return 0;
  const uint32_t slot = (inline_data + kInlineSlotAlign - 1) / kInlineSlotAlign * kInlineSlotAlign;
  const uint32_t slots = 2 * qp.init.cap.max_send_wr;
  const size_t bytes = static_cast<size_t>(slot) * slots;
  qp.staging.reset(new (std::nothrow) uint8_t[bytes]);
  if (!qp.staging) return ENOMEM;
  auto r = nic.host->register_region(pd.engine_pd, qp.staging.get(), bytes, kAccessLocalWrite);
  if (!r.ok()) return ENOMEM;
  qp.staging_lkey = r.value().lkey;
  qp.max_inline = slot;
  qp.inline_slots = slots;
  return 0;
}

// Copies an inline request's gather list into the next staging slot, which `sge` then names.
int stage_inline(mrc_qp& qp, const ibv_send_wr& wr, Sge& sge) {
  if (qp.max_inline == 0) return EINVAL;  // the QP was created without inline data
  uint64_t total = 0;
  for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
  if (total > qp.max_inline) return EINVAL;
  uint8_t* slot = qp.staging.get() + (qp.staged % qp.inline_slots) * qp.max_inline;
  uint32_t at = 0;
  for (int i = 0; i < wr.num_sge; ++i) {
    std::memcpy(slot + at, reinterpret_cast<const void*>(wr.sg_list[i].addr), wr.sg_list[i].length);
    at += wr.sg_list[i].length;
  }
  sge = Sge{reinterpret_cast<uintptr_t>(slot), at, qp.staging_lkey};
  return 0;
}

// One work request, holding the QP's shard lock.
int post_one(mrc_qp& qp, const ibv_send_wr& wr) {
  if (wr.opcode != IBV_WR_RDMA_WRITE && wr.opcode != IBV_WR_RDMA_WRITE_WITH_IMM) return EINVAL;
  if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > qp.init.cap.max_send_sge ||
      (wr.num_sge > 0 && wr.sg_list == nullptr))
    return EINVAL;
  Sge sges[kMaxSge];
  uint32_t num_sge = static_cast<uint32_t>(wr.num_sge);
  const bool inline_data = (wr.send_flags & IBV_SEND_INLINE) != 0 && wr.num_sge > 0;
  if (inline_data) {
    if (int e = stage_inline(qp, wr, sges[0])) return e;
    num_sge = 1;
  } else {
    for (int i = 0; i < wr.num_sge; ++i)
      sges[i] = Sge{wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
  }
  SendWr s;
  s.wr_id = wr.wr_id;
  s.opcode = wr.opcode == IBV_WR_RDMA_WRITE ? SendOpcode::kWrite : SendOpcode::kWriteWithImm;
  s.sg_list = sges;
  s.num_sge = num_sge;
  s.remote_addr = wr.wr.rdma.remote_addr;
  s.rkey = wr.wr.rdma.rkey;
  s.immediate = wr.imm_data;
  s.signaled = qp.init.sq_sig_all != 0 || (wr.send_flags & IBV_SEND_SIGNALED) != 0;
  auto r = qp.placed.qp->post_send(s);
  if (!r.ok()) return post_error(r.error());
  if (inline_data) ++qp.staged;
  return 0;
}

}  // namespace

extern "C" {

mrc_qp* mrc_create_qp(mrc_context* mrc_ctx, mrc_qp_init_attr* attr) {
  if (!valid(mrc_ctx) || attr == nullptr || !valid(attr->send_cq) || !valid(attr->recv_cq))
    return fail<mrc_qp*>(EINVAL, nullptr);
  SoftPd* pd = soft_pd(attr->pd);
  ibv_qp_cap& cap = attr->cap;
  if (pd == nullptr || pd->owner != mrc_ctx->device || attr->send_cq->context != mrc_ctx ||
      attr->recv_cq->context != mrc_ctx || attr->send_cq->ev_cq || attr->recv_cq->ev_cq)
    return fail<mrc_qp*>(EINVAL, nullptr);
  if (attr->protocol_version != MRC_PROTOCOL_VERSION_0 &&
      attr->protocol_version != MRC_PROTOCOL_VERSION_1)
    return fail<mrc_qp*>(EOPNOTSUPP, nullptr);
  if (cap.max_send_wr < 1 || cap.max_send_wr > 65536 || cap.max_recv_wr > 65536 ||
      cap.max_send_sge > kMaxSge || cap.max_recv_sge > kMaxSge ||
      cap.max_inline_data > kMaxInlineData)
    return fail<mrc_qp*>(EINVAL, nullptr);
  Nic& nic = *mrc_ctx->nic;
  auto qp = std::make_unique<mrc_qp>();
  qp->init.cap.max_send_wr = cap.max_send_wr;
  if (int e = make_staging(nic, *pd, *qp, cap.max_inline_data)) return fail<mrc_qp*>(e, nullptr);
  auto placed = host::create_qp(*nic.host, qp_spec(nic, *pd, *attr));
  if (!placed.ok()) {
    if (qp->staging_lkey != 0) (void)nic.host->deregister(qp->staging_lkey);
    const bool full = placed.error().code == Errc::kResourceExhausted;
    if (!full) std::fprintf(stderr, "mrc: create_qp: %s\n", placed.error().message.c_str());
    return fail<mrc_qp*>(full ? ENOMEM : EINVAL, nullptr);
  }
  auto locks = nic.lock_all();
  qp->placed = placed.value();
  qp->config = qp->placed.qp->config();  // as the datapath completed it
  cap.max_recv_wr = qp->config.max_recv_wr;
  cap.max_send_sge = cap.max_recv_sge = qp->config.max_sge;
  cap.max_inline_data = qp->max_inline;
  qp->context = mrc_ctx;
  qp->init = *attr;
  init_verbs_view(*qp, *attr);
  ++attr->send_cq->qps;
  ++attr->recv_cq->qps;
  ++pd->users;
  ++mrc_ctx->qps;
  mrc_ctx->qp_list.push_back(qp.get());
  return qp.release();
}

int mrc_destroy_qp(mrc_qp* qp) {
  if (!valid(qp)) return fail(EINVAL, -1);
  mrc_context* c = qp->context;
  Nic& nic = *c->nic;
  {
    auto locks = nic.lock_all();  // out of every list before its shard's rounds stop seeing it
    --qp->init.send_cq->qps;
    --qp->init.recv_cq->qps;
    --soft_pd(qp->init.pd)->users;
    if (qp->mattr.qp_hint != nullptr) --qp->mattr.qp_hint->qps;
    if (qp->has_ev_profile) --nic.ev_profiles[qp->ev_profile].qps;
    if (qp->has_cc_profile) --nic.cc_profiles[qp->cc_profile].qps;
    --c->qps;
    c->qp_list.erase(std::remove(c->qp_list.begin(), c->qp_list.end(), qp), c->qp_list.end());
    qp->magic = kDead;
  }
  host::destroy_qp(*nic.host, qp->placed);  // an agreement under way ends with it
  if (qp->staging_lkey != 0) (void)nic.host->deregister(qp->staging_lkey);
  pthread_mutex_destroy(&qp->verbs_view.mutex);
  pthread_cond_destroy(&qp->verbs_view.cond);
  delete qp;
  return 0;
}

int mrc_modify_qp(mrc_qp* qp, ibv_qp_attr* vattr, int vattr_mask, mrc_qp_attr* mrc_attr,
                  int mrc_attr_mask) {
  if (!valid(qp)) return fail(EINVAL, -1);
  Nic& nic = *qp->context->nic;
  int e = 0;
  {
    auto locks = nic.lock_all();
    e = modify_locked(*qp, vattr, vattr_mask, mrc_attr, mrc_attr_mask);
  }
  nic.shard(qp->placed.shard).wake();
  return e == 0 ? 0 : fail(e, -1);
}

int mrc_query_qp(mrc_qp* qp, ibv_qp_attr* vattr, int vattr_mask, mrc_qp_attr* mrc_attr,
                 int mrc_attr_mask, mrc_qp_init_attr* init_attr) {
  (void)vattr_mask;
  (void)mrc_attr_mask;  // everything is cheap to fill: all fields are returned
  if (!valid(qp)) return fail(EINVAL, -1);
  auto locks = qp->context->nic->lock_all();
  qp->state = engine_state(*qp);
  if (vattr != nullptr) {
    *vattr = qp->vattr;
    vattr->qp_state = vattr->cur_qp_state = qp->state;
    vattr->cap = qp->init.cap;
    vattr->port_num = 1;
    vattr->timeout = qp->config.timeout;
    vattr->retry_cnt = qp->config.retry_linear;
    // The largest verbs MTU within the one in force (which the datapath may have clamped
    // below a power of two: the xdp backend's frames, a secure QP's 24 bytes).
    const int log2_mtu = 31 - __builtin_clz(std::max(qp->config.mtu_bytes, 256u));
    vattr->path_mtu = static_cast<ibv_mtu>(std::min(log2_mtu - 7, static_cast<int>(IBV_MTU_4096)));
  }
  if (mrc_attr != nullptr) {
    *mrc_attr = qp->mattr;
    mrc_attr->mpr.mpr = qp->config.mpr;
    mrc_attr->mpr.mpr_dest = qp->config.mpr_dest;
    mrc_attr->wimm.max_wimm = qp->config.max_wimm;
    mrc_attr->wimm.max_wimm_dest = qp->config.max_wimm_dest;
    mrc_attr->timeout = qp->config.timeout;
    mrc_attr->retry.linear_cnt = qp->config.retry_linear;
    mrc_attr->retry.exp_cnt = qp->config.retry_exp;
    mrc_attr->profile.ev_profile_id = qp->ev_profile;
    mrc_attr->profile.cc_profile_id = qp->cc_profile;
  }
  if (init_attr != nullptr) *init_attr = qp->init;
  return 0;
}

int mrc_get_qpn(mrc_qp* qp, uint32_t* qpn) {
  if (!valid(qp) || qpn == nullptr) return fail(EINVAL, -1);
  *qpn = qp->placed.qp->qpn().value;
  return 0;
}

int mrc_post_send(mrc_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  if (!valid(qp) || wr == nullptr) {
    if (bad_wr != nullptr) *bad_wr = wr;
    errno = EINVAL;
    return EINVAL;
  }
  int e = 0;
  {
    io::Device& device = qp->context->nic->shard(qp->placed.shard);
    std::lock_guard lock(device.lock());
    ibv_send_wr* const first = wr;
    for (; wr != nullptr && e == 0; wr = e == 0 ? wr->next : wr) e = post_one(*qp, *wr);
    if (wr != first) device.post_done();  // sends now if the thread sleeps
  }
  if (e == 0) return 0;
  if (bad_wr != nullptr) *bad_wr = wr;
  errno = e;
  return e;
}

int mrc_post_recv(mrc_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (!valid(qp) || wr == nullptr) {
    if (bad_wr != nullptr) *bad_wr = wr;
    return fail(EINVAL, -1);
  }
  std::lock_guard lock(qp->context->nic->shard(qp->placed.shard).lock());
  for (; wr != nullptr; wr = wr->next) {
    int e = 0;
    if (wr->num_sge < 0 ||
        static_cast<uint32_t>(wr->num_sge) > std::max<uint32_t>(qp->init.cap.max_recv_sge, 1)) {
      e = EINVAL;
    } else if (auto r = qp->placed.qp->post_recv(wr->wr_id); !r.ok()) {
      e = post_error(r.error());
    }
    if (e != 0) {
      if (bad_wr != nullptr) *bad_wr = wr;
      return fail(e, -1);
    }
  }
  return 0;
}

}  // extern "C"
