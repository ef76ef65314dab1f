// Protection domains and memory regions of the software verbs device, made by the host in every
// shard's engine MemoryRegionTable alike (host/host.h: the same ids and keys everywhere, so the
// keys an application exchanges are the keys every data packet carries, whichever shard its QP
// is in); DMA-BUF and re-registration refused; ibv_wc_status_str.
#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "ocp/objects.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

std::string hex(unsigned v) {
  char text[16];
  std::snprintf(text, sizeof text, "%x", v);
  return text;
}

// The host's error of a registration (core/verb_errors.cc: an MrError's code) as verbs says it.
int errno_of(const Error& e) {
  return e.code == Errc::kResourceExhausted ? ENOMEM : EINVAL;  // ENOMEM: the table is full
}

ibv_mr* register_region(SoftPd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  // REMOTE_ATOMIC is accepted and has no effect: no MRC operation is an atomic, so the right
  // is never exercised (consumers such as the MRC NCCL plugin ask for it with the others).
  constexpr unsigned kSupported = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  const unsigned required = access & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if ((required & ~kSupported) != 0) {  // MW binding, zero-based, on-demand paging, ...
    say_once("ibv_reg_mr on device " + pd->owner->nic->spec->name + ": access flags 0x" +
             hex(required & ~kSupported) +
             " are not supported (mrc devices take LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, "
             "REMOTE_ATOMIC and the optional RELAXED_ORDERING range)");
    return fail<ibv_mr*>(EOPNOTSUPP, nullptr);
  }
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & IBV_ACCESS_LOCAL_WRITE))
    return fail<ibv_mr*>(EINVAL, nullptr);  // as verbs requires
  if (iova != reinterpret_cast<uintptr_t>(addr)) return fail<ibv_mr*>(EOPNOTSUPP, nullptr);
  uint32_t engine_access = 0;
  if (access & IBV_ACCESS_LOCAL_WRITE) engine_access |= kAccessLocalWrite;
  if (access & IBV_ACCESS_REMOTE_WRITE) engine_access |= kAccessRemoteWrite;
  if (access & IBV_ACCESS_REMOTE_READ) engine_access |= kAccessRemoteRead;
  if (addr == nullptr && length > 0) return fail<ibv_mr*>(EFAULT, nullptr);
  Nic* nic = pd->owner->nic;
  auto r = nic->host->register_region(pd->engine_pd, addr, length, engine_access);
  if (!r.ok()) return fail<ibv_mr*>(errno_of(r.error()), nullptr);
  auto locks = nic->lock_all();
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
  pd->engine_pd = soft->nic->host->alloc_pd();
  auto locks = soft->nic->lock_all();
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
    auto locks = nic->lock_all();
    if (soft->users > 0) return EBUSY;
  }
  if (!nic->host->dealloc_pd(soft->engine_pd)) return EBUSY;
  {
    auto locks = nic->lock_all();
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
  if (!nic->host->deregister(mr->lkey).ok()) return EINVAL;
  {
    auto locks = nic->lock_all();
    --soft->pd->users;
    soft->magic = kDead;
  }
  delete soft;
  return 0;
}

// DMA-BUF memory (a GPU's): an mrc device moves host memory only. Refused with EOPNOTSUPP, which
// is what a consumer's probe (the MRC NCCL plugin registers fd -1 to ask) takes as "no DMA-BUF".
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  SoftPd* soft = soft_pd(pd);
  if (soft == nullptr) {
    auto next = NEXT(ibv_reg_dmabuf_mr, "IBVERBS_1.12");
    return next != nullptr ? next(pd, offset, length, iova, fd, access)
                           : fail<ibv_mr*>(EOPNOTSUPP, nullptr);
  }
  say_once("ibv_reg_dmabuf_mr on device " + soft->owner->nic->spec->name +
           ": DMA-BUF memory is not supported (mrc devices register host memory: ibv_reg_mr, "
           "ibv_reg_mr_iova, ibv_reg_mr_iova2)");
  return fail<ibv_mr*>(EOPNOTSUPP, nullptr);
}

// Changing a registration in place: not offered (deregister and register again).
int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  const bool mine =
      soft_mr(mr) != nullptr || ((flags & IBV_REREG_MR_CHANGE_PD) && soft_pd(pd) != nullptr);
  if (!mine) {
    auto next = NEXT(ibv_rereg_mr, "IBVERBS_1.1");
    return next != nullptr ? next(mr, flags, pd, addr, length, access)
                           : fail(EINVAL, static_cast<int>(IBV_REREG_MR_ERR_INPUT));
  }
  say_once("ibv_rereg_mr: not supported on mrc devices (ibv_dereg_mr, then ibv_reg_mr)");
  return fail(EOPNOTSUPP, static_cast<int>(IBV_REREG_MR_ERR_INPUT));
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
