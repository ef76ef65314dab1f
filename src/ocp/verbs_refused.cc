// Every other libibverbs entry point that can reach an mrc context, PD, MR, QP, SRQ, AH, MW,
// XRC domain or device memory: for mrc's objects it answers with an errno (as libibverbs
// documents the call's failure: NULL/errno, an errno value, or -1/errno), never by running
// libibverbs's own code, which would call through the provider ops an mrc context does not
// have (NULL: SIGSEGV). Objects of other devices are handed on to libibverbs (dlvsym
// RTLD_NEXT). Also the context's ops slots that verbs.h's inline functions call without a check
// (post_send, post_recv, ...: those of a verbs RC QP are verbs_qp.cc's), and the mlx5dv_* symbols a
// vendor MRC stack brings along, so a consumer built against one (the MRC NCCL plugin) loads with
// RTLD_NOW. The table of what works and what is refused is in docs/OCP-COMPAT.md ("The verbs
// edge").
#include <dlfcn.h>

#include <cerrno>

#include "ocp/objects.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

// Hands the call to the next definition, or answers `fallback` if there is none.
#define FORWARD(name, version, fallback, ...)                  \
  do {                                                         \
    auto next_ = NEXT(name, version);                          \
    return next_ != nullptr ? next_(__VA_ARGS__) : (fallback); \
  } while (0)

bool ours_pd(ibv_pd* pd) {
  return pd != nullptr && ours(pd->context);
}
template <typename T>
bool ours_obj(T* object) {
  return object != nullptr && ours(object->context);
}

// Says once what the device does not offer, naming what MRC offers instead.
void refuse(const char* call, const char* instead) {
  say_once(std::string(call) + ": not supported on mrc devices (" + instead + ")");
}
// The ops slots verbs.h's inline functions call through without checking them.
ibv_mw* alloc_mw(ibv_pd*, ibv_mw_type) {
  refuse("ibv_alloc_mw", "memory windows: MRC has none; register memory with ibv_reg_mr");
  return fail<ibv_mw*>(EOPNOTSUPP, nullptr);
}
int dealloc_mw(ibv_mw*) {
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int bind_mw(ibv_qp*, ibv_mw*, ibv_mw_bind*) {
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (bad_wr != nullptr) *bad_wr = wr;
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int close_xrcd(ibv_xrcd*) {
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}

}  // namespace

namespace mrc::ocp {

void fill_refused_ops(ibv_context_ops& ops, verbs_context& vctx) {
  ops.alloc_mw = alloc_mw;
  ops.dealloc_mw = dealloc_mw;
  ops.bind_mw = bind_mw;
  ops.post_srq_recv = post_srq_recv;
  // verbs_context's other slots stay NULL: each inline function of verbs.h that uses one checks
  // it (verbs_get_ctx_op) and fails with EOPNOTSUPP/ENOSYS, or falls back to an exported call
  // (ibv_query_device_ex -> ibv_query_device). ibv_close_xrcd alone calls without a check.
  vctx.close_xrcd = close_xrcd;
}

}  // namespace mrc::ocp

extern "C" {

// Queue pairs: an RC QP on an mrc PD is a verbs RC QP over an MRC QP (verbs_qp.cc). The
// asynchronous events of an MRC QP name it by a verbs handle of the mrc context
// (mrc_qp::verbs_view); verbs calls on that handle are refused (mrc_query_qp and the like).
ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  SoftPd* soft = soft_pd(pd);
  if (soft == nullptr)
    FORWARD(ibv_create_qp, "IBVERBS_1.1", fail<ibv_qp*>(EINVAL, nullptr), pd, attr);
  return verbs_create_qp(*soft, attr);
}
int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  if (!ours_obj(qp)) FORWARD(ibv_query_qp, "IBVERBS_1.1", EINVAL, qp, attr, mask, init);
  if (SoftQp* soft = soft_qp(qp)) return verbs_query_qp(*soft, attr, mask, init);
  return fail(EOPNOTSUPP, EOPNOTSUPP);  // an MRC QP: mrc_query_qp
}
int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if (!ours_obj(qp)) FORWARD(ibv_modify_qp, "IBVERBS_1.1", EINVAL, qp, attr, mask);
  if (SoftQp* soft = soft_qp(qp)) return verbs_modify_qp(*soft, attr, mask);
  return fail(EOPNOTSUPP, EOPNOTSUPP);  // an MRC QP: mrc_modify_qp
}
int ibv_destroy_qp(ibv_qp* qp) {
  if (!ours_obj(qp)) FORWARD(ibv_destroy_qp, "IBVERBS_1.1", EINVAL, qp);
  if (SoftQp* soft = soft_qp(qp)) return verbs_destroy_qp(*soft);
  return fail(EOPNOTSUPP, EOPNOTSUPP);  // an MRC QP: mrc_destroy_qp
}
int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  if (!ours_obj(qp)) FORWARD(ibv_query_qp_data_in_order, "IBVERBS_1.14", 0, qp, op, flags);
  return 0;  // MRC places data out of order (multipath); completions are in order
}
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (!ours_obj(qp)) FORWARD(ibv_qp_to_qp_ex, "IBVERBS_1.6", nullptr, qp);
  return fail<ibv_qp_ex*>(EOPNOTSUPP, nullptr);
}
int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!ours_obj(qp)) FORWARD(ibv_set_ece, "IBVERBS_1.10", EOPNOTSUPP, qp, ece);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!ours_obj(qp)) FORWARD(ibv_query_ece, "IBVERBS_1.10", EOPNOTSUPP, qp, ece);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!ours_obj(qp)) FORWARD(ibv_attach_mcast, "IBVERBS_1.1", EINVAL, qp, gid, lid);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!ours_obj(qp)) FORWARD(ibv_detach_mcast, "IBVERBS_1.1", EINVAL, qp, gid, lid);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}

// Shared receive queues and address handles (UD): MRC has neither.
ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!ours_pd(pd))
    FORWARD(ibv_create_srq, "IBVERBS_1.1", fail<ibv_srq*>(EINVAL, nullptr), pd, attr);
  refuse("ibv_create_srq", "shared receive queues: MRC has none; post receives to the QP");
  return fail<ibv_srq*>(EOPNOTSUPP, nullptr);
}
int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (!ours_obj(srq)) FORWARD(ibv_modify_srq, "IBVERBS_1.1", EINVAL, srq, attr, mask);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (!ours_obj(srq)) FORWARD(ibv_query_srq, "IBVERBS_1.1", EINVAL, srq, attr);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int ibv_destroy_srq(ibv_srq* srq) {
  if (!ours_obj(srq)) FORWARD(ibv_destroy_srq, "IBVERBS_1.1", EINVAL, srq);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!ours_pd(pd)) FORWARD(ibv_create_ah, "IBVERBS_1.1", fail<ibv_ah*>(EINVAL, nullptr), pd, attr);
  refuse("ibv_create_ah", "address handles: MRC QPs are connected; give the peer at RTR");
  return fail<ibv_ah*>(EOPNOTSUPP, nullptr);
}
ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  if (!ours_pd(pd))
    FORWARD(ibv_create_ah_from_wc, "IBVERBS_1.1", fail<ibv_ah*>(EINVAL, nullptr), pd, wc, grh,
            port_num);
  return fail<ibv_ah*>(EOPNOTSUPP, nullptr);
}
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  if (!ours(context))
    FORWARD(ibv_init_ah_from_wc, "IBVERBS_1.1", fail(EINVAL, -1), context, port_num, wc, grh,
            ah_attr);
  return fail(EOPNOTSUPP, -1);
}
int ibv_destroy_ah(ibv_ah* ah) {
  if (!ours_obj(ah)) FORWARD(ibv_destroy_ah, "IBVERBS_1.1", EINVAL, ah);
  return fail(EOPNOTSUPP, EOPNOTSUPP);
}
int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  if (!ours(context))
    FORWARD(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1", EINVAL, context, attr, eth_mac, vid);
  return fail(EOPNOTSUPP, EOPNOTSUPP);  // planes are UDP addresses: no L2 neighbour to resolve
}

// The P_Key table: one entry, the default full-membership key.
int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr)
    FORWARD(ibv_get_pkey_index, "IBVERBS_1.5", fail(EINVAL, -1), context, port_num, pkey);
  if (port_num < 1 || port_num > soft->nic->spec->planes.size()) return fail(EINVAL, -1);
  return pkey == htobe16(0xffff) ? 0 : fail(ENOENT, -1);
}

// Objects shared between processes through a context's command fd: an mrc context has none.
ibv_pd* ibv_import_pd(ibv_context* context, uint32_t handle) {
  if (!ours(context))
    FORWARD(ibv_import_pd, "IBVERBS_1.10", fail<ibv_pd*>(EINVAL, nullptr), context, handle);
  return fail<ibv_pd*>(EOPNOTSUPP, nullptr);
}
ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t handle) {
  if (!ours_pd(pd))
    FORWARD(ibv_import_mr, "IBVERBS_1.10", fail<ibv_mr*>(EINVAL, nullptr), pd, handle);
  return fail<ibv_mr*>(EOPNOTSUPP, nullptr);
}
ibv_dm* ibv_import_dm(ibv_context* context, uint32_t handle) {
  if (!ours(context))
    FORWARD(ibv_import_dm, "IBVERBS_1.13", fail<ibv_dm*>(EINVAL, nullptr), context, handle);
  return fail<ibv_dm*>(EOPNOTSUPP, nullptr);
}
// Nothing of an mrc device is ever imported: unimporting one of its objects does nothing (the
// object stays; ibv_dealloc_pd / ibv_dereg_mr free it).
void ibv_unimport_pd(ibv_pd* pd) {
  if (!ours_pd(pd))
    if (auto next = NEXT(ibv_unimport_pd, "IBVERBS_1.10"); next != nullptr && pd != nullptr)
      next(pd);
}
void ibv_unimport_mr(ibv_mr* mr) {
  if (!ours_obj(mr))
    if (auto next = NEXT(ibv_unimport_mr, "IBVERBS_1.10"); next != nullptr && mr != nullptr)
      next(mr);
}
void ibv_unimport_dm(ibv_dm* dm) {
  if (!ours_obj(dm))
    if (auto next = NEXT(ibv_unimport_dm, "IBVERBS_1.13"); next != nullptr && dm != nullptr)
      next(dm);
}

// mlx5 direct verbs (declared here, as a vendor's mlx5dv.h declares them): an mrc device is not
// an mlx5 device. Other devices go to libmlx5 if the program loaded it.
bool mlx5dv_is_supported(ibv_device* device) {
  if (device == nullptr || soft_device(device) != nullptr) return false;
  auto next =
      reinterpret_cast<bool (*)(ibv_device*)>(next_symbol("mlx5dv_is_supported", "MLX5_1.8"));
  return next != nullptr && next(device);
}
ibv_mr* mlx5dv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                             int access, int mlx5_access) {
  using Fn = ibv_mr* (*)(ibv_pd*, uint64_t, size_t, uint64_t, int, int, int);
  if (!ours_pd(pd)) {
    auto next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "mlx5dv_reg_dmabuf_mr"));
    return next != nullptr ? next(pd, offset, length, iova, fd, access, mlx5_access)
                           : fail<ibv_mr*>(EOPNOTSUPP, nullptr);
  }
  return ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access);  // refused, said once
}
int mlx5dv_get_data_direct_sysfs_path(ibv_context* context, char* buf, size_t buf_len) {
  using Fn = int (*)(ibv_context*, char*, size_t);
  if (!ours(context)) {
    auto next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "mlx5dv_get_data_direct_sysfs_path"));
    return next != nullptr ? next(context, buf, buf_len) : EOPNOTSUPP;
  }
  return ENODEV;  // what mlx5 answers for a device without data direct
}

}  // extern "C"
