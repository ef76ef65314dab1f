// Protection domains and memory regions of the software verbs device, registered in the
// engine's MemoryRegionTable (so the keys an application exchanges are the keys every data
// packet carries), plus the verbs an MRC device refuses and ibv_wc_status_str.
#include <dlfcn.h>

#include <cerrno>
#include <cstring>

#include "ocp/objects.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

void* next_symbol(const char* name, const char* version) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  return p != nullptr ? p : dlsym(RTLD_NEXT, name);
}
#define NEXT(name, version) (reinterpret_cast<decltype(&(name))>(next_symbol(#name, version)))

int errno_of(MrError e) {
  switch (e) {
    case MrError::kTableFull:
      return ENOMEM;
    case MrError::kNullAddress:
      return EFAULT;
    default:
      return EINVAL;
  }
}

ibv_mr* register_region(SoftPd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  constexpr unsigned kSupported =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  const unsigned required = access & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if ((required & ~kSupported) != 0)
    return fail<ibv_mr*>(EOPNOTSUPP, nullptr);  // atomics, MW, zero-based, ODP
  if ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE))
    return fail<ibv_mr*>(EINVAL, nullptr);
  if (iova != reinterpret_cast<uintptr_t>(addr)) return fail<ibv_mr*>(EOPNOTSUPP, nullptr);
  uint32_t engine_access = 0;
  if (access & IBV_ACCESS_LOCAL_WRITE) engine_access |= kAccessLocalWrite;
  if (access & IBV_ACCESS_REMOTE_WRITE) engine_access |= kAccessRemoteWrite;
  if (access & IBV_ACCESS_REMOTE_READ) engine_access |= kAccessRemoteRead;
  Nic* nic = pd->owner->nic;
  std::lock_guard lock(nic->mutex);
  auto r =
      nic->host->endpoint().memory().register_region(pd->engine_pd, addr, length, engine_access);
  if (!r.ok()) return fail<ibv_mr*>(errno_of(r.error()), nullptr);
  auto* mr = new SoftMr();
  std::memset(&mr->mr, 0, sizeof mr->mr);
  mr->pd = pd;
  mr->mr.context = pd->pd.context;
  mr->mr.pd = &pd->pd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = r.value().lkey;
  mr->mr.lkey = r.value().lkey;
  mr->mr.rkey = r.value().rkey;
  ++pd->users;
  return &mr->mr;
}

SoftMr* soft_mr(ibv_mr* mr) {
  if (mr == nullptr || soft_pd(mr->pd) == nullptr) return nullptr;
  auto* soft = reinterpret_cast<SoftMr*>(mr);
  return soft->magic == kMagicMr ? soft : nullptr;
}

}  // namespace

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_alloc_pd, "IBVERBS_1.1");
    return next != nullptr ? next(context) : fail<ibv_pd*>(EINVAL, nullptr);
  }
  if (soft->nic->remote())
    return fail<ibv_pd*>(refuse_data_path(*soft->nic), nullptr);  // controller-only
  auto* pd = new SoftPd();
  pd->owner = soft;
  pd->pd.context = context;
  std::lock_guard lock(soft->nic->mutex);
  pd->engine_pd = soft->nic->host->endpoint().memory().alloc_pd();
  pd->pd.handle = pd->engine_pd;
  ++soft->pds;
  return &pd->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  SoftPd* soft = soft_pd(pd);
  if (soft == nullptr) {
    auto next = NEXT(ibv_dealloc_pd, "IBVERBS_1.1");
    return next != nullptr ? next(pd) : EINVAL;
  }
  Nic* nic = soft->owner->nic;
  {
    std::lock_guard lock(nic->mutex);
    if (soft->users > 0 || !nic->host->endpoint().memory().dealloc_pd(soft->engine_pd))
      return EBUSY;
    --soft->owner->pds;
    soft->magic = kDead;
  }
  delete soft;
  return 0;
}

ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  SoftPd* soft = soft_pd(pd);
  if (soft == nullptr) {
    auto next = NEXT(ibv_reg_mr, "IBVERBS_1.1");
    return next != nullptr ? next(pd, addr, length, access) : fail<ibv_mr*>(EINVAL, nullptr);
  }
  return register_region(soft, addr, length, reinterpret_cast<uintptr_t>(addr),
                         static_cast<unsigned>(access));
}

ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  SoftPd* soft = soft_pd(pd);
  if (soft == nullptr) {
    auto next = NEXT(ibv_reg_mr_iova, "IBVERBS_1.7");
    return next != nullptr ? next(pd, addr, length, iova, access) : fail<ibv_mr*>(EINVAL, nullptr);
  }
  return register_region(soft, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  SoftPd* soft = soft_pd(pd);
  if (soft == nullptr) {
    auto next = NEXT(ibv_reg_mr_iova2, "IBVERBS_1.8");
    return next != nullptr ? next(pd, addr, length, iova, access) : fail<ibv_mr*>(EINVAL, nullptr);
  }
  return register_region(soft, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  SoftMr* soft = soft_mr(mr);
  if (soft == nullptr) {
    auto next = NEXT(ibv_dereg_mr, "IBVERBS_1.1");
    return next != nullptr ? next(mr) : EINVAL;
  }
  Nic* nic = soft->pd->owner->nic;
  {
    std::lock_guard lock(nic->mutex);
    if (!nic->host->endpoint().memory().deregister(mr->lkey).ok()) return EINVAL;
    --soft->pd->users;
    soft->magic = kDead;
  }
  delete soft;
  return 0;
}

// Verbs objects an MRC device does not have: MRC programs create CQs and QPs with mrc_*.
ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (soft_context(context) != nullptr) return fail<ibv_cq*>(EOPNOTSUPP, nullptr);
  auto next = NEXT(ibv_create_cq, "IBVERBS_1.1");
  return next != nullptr ? next(context, cqe, cq_context, channel, comp_vector)
                         : fail<ibv_cq*>(EINVAL, nullptr);
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (soft_pd(pd) != nullptr) return fail<ibv_qp*>(EOPNOTSUPP, nullptr);
  auto next = NEXT(ibv_create_qp, "IBVERBS_1.1");
  return next != nullptr ? next(pd, attr) : fail<ibv_qp*>(EINVAL, nullptr);
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  if (soft_context(context) != nullptr) return fail<ibv_comp_channel*>(EOPNOTSUPP, nullptr);
  auto next = NEXT(ibv_create_comp_channel, "IBVERBS_1.0");
  return next != nullptr ? next(context) : fail<ibv_comp_channel*>(EINVAL, nullptr);
}

const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const names[] = {"success",
                                      "local length error",
                                      "local QP operation error",
                                      "local EE context operation error",
                                      "local protection error",
                                      "Work Request Flushed Error",
                                      "memory management operation error",
                                      "bad response error",
                                      "local access error",
                                      "remote invalid request error",
                                      "remote access error",
                                      "remote operation error",
                                      "transport retry counter exceeded",
                                      "RNR retry counter exceeded",
                                      "local RDD violation error",
                                      "remote invalid RD request",
                                      "aborted error",
                                      "invalid EE context number",
                                      "invalid EE context state",
                                      "fatal error",
                                      "response timeout error",
                                      "general error",
                                      "TM error",
                                      "TM rendezvous error"};
  const auto i = static_cast<unsigned>(status);
  return i < sizeof names / sizeof names[0] ? names[i] : "unknown";
}

}  // extern "C"
