// The software verbs device: the part of libibverbs an MRC program uses, for devices that
// exist only in mrc ("mrc0", ... from device_config.h). lib_mrc.so exports these ibv_*
// symbols; linked ahead of libibverbs (as OCP's example makefile links lib_mrc.so) or
// preloaded with LD_PRELOAD, they take precedence over libibverbs's own. A device, context or
// PD that is not ours is handed on to the next definition (libibverbs, found with
// dlvsym(RTLD_NEXT)), so real RDMA devices keep working beside the software ones.
//
// ibv_query_port is an inline wrapper in verbs.h that calls through verbs_context::query_port,
// which we set; the context's other ops slots are filled by verbs_cq.cc (CQs), verbs_qp.cc
// (posts to verbs RC QPs) and verbs_refused.cc (everything an mrc device refuses, with an
// errno). Verbs CQs, completion
// channels and asynchronous events are in verbs_cq.cc.
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "ocp/ctl_remote.h"
#include "ocp/objects.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

// The next definition of a libibverbs symbol after lib_mrc.so's own (ocp_internal.h).
void* mrc::ocp::next_symbol(const char* name, const char* version) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  return p != nullptr ? p : dlsym(RTLD_NEXT, name);
}

namespace {

std::vector<SoftDevice>& soft_devices() {
  static std::vector<SoftDevice> devices = [] {
    std::vector<SoftDevice> list(device_config().devices.size());
    for (size_t i = 0; i < list.size(); ++i) {
      ibv_device& d = list[i].device;
      std::memset(&d, 0, sizeof d);
      d.node_type = IBV_NODE_CA;
      d.transport_type = IBV_TRANSPORT_IB;
      std::snprintf(d.name, sizeof d.name, "%s", device_config().devices[i].name.c_str());
      std::snprintf(d.dev_name, sizeof d.dev_name, "%s", d.name);
      std::snprintf(d.dev_path, sizeof d.dev_path, "/sys/class/infiniband_verbs/%s", d.name);
      std::snprintf(d.ibdev_path, sizeof d.ibdev_path, "/sys/class/infiniband/%s", d.name);
      list[i].index = static_cast<int>(i);
    }
    return list;
  }();
  return devices;
}

std::mutex g_lists_mutex;
std::unordered_map<ibv_device**, ibv_device**> g_lists;  // our list -> the next library's

int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t length);

}  // namespace

namespace mrc::ocp {

SoftDevice* soft_device(ibv_device* device) {
  for (SoftDevice& d : soft_devices())
    if (&d.device == device) return &d;
  return nullptr;
}

SoftContext* soft_context(ibv_context* context) {
  if (context == nullptr || soft_device(context->device) == nullptr) return nullptr;
  auto* vctx = reinterpret_cast<verbs_context*>(reinterpret_cast<uint8_t*>(context) -
                                                offsetof(verbs_context, context));
  auto* soft = reinterpret_cast<SoftContext*>(reinterpret_cast<uint8_t*>(vctx) -
                                              offsetof(SoftContext, vctx));
  return soft->magic == kMagicContext ? soft : nullptr;
}

SoftPd* soft_pd(ibv_pd* pd) {
  if (pd == nullptr || soft_context(pd->context) == nullptr) return nullptr;
  auto* soft = reinterpret_cast<SoftPd*>(pd);
  return soft->magic == kMagicPd ? soft : nullptr;
}

}  // namespace mrc::ocp

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  auto next = NEXT(ibv_get_device_list, "IBVERBS_1.1");
  int real_count = 0;
  ibv_device** real = next != nullptr ? next(&real_count) : nullptr;
  if (real == nullptr) real_count = 0;
  std::vector<SoftDevice>& ours = soft_devices();
  const size_t total = ours.size() + static_cast<size_t>(real_count);
  auto** list = static_cast<ibv_device**>(std::calloc(total + 1, sizeof(void*)));
  if (list == nullptr) return fail<ibv_device**>(ENOMEM, nullptr);
  for (size_t i = 0; i < ours.size(); ++i) list[i] = &ours[i].device;
  for (int i = 0; i < real_count; ++i) list[ours.size() + static_cast<size_t>(i)] = real[i];
  {
    std::lock_guard lock(g_lists_mutex);
    g_lists[list] = real;
  }
  if (num_devices != nullptr) *num_devices = static_cast<int>(total);
  return list;
}

void ibv_free_device_list(ibv_device** list) {
  ibv_device** real = nullptr;
  {
    std::lock_guard lock(g_lists_mutex);
    auto it = g_lists.find(list);
    if (it == g_lists.end()) {
      if (auto next = NEXT(ibv_free_device_list, "IBVERBS_1.1"); next != nullptr) next(list);
      return;
    }
    real = it->second;
    g_lists.erase(it);
  }
  if (real != nullptr)
    if (auto next = NEXT(ibv_free_device_list, "IBVERBS_1.1"); next != nullptr) next(real);
  std::free(list);
}

const char* ibv_get_device_name(ibv_device* device) {
  if (soft_device(device) != nullptr) return device->name;
  auto next = NEXT(ibv_get_device_name, "IBVERBS_1.1");
  return next != nullptr ? next(device) : nullptr;
}

__be64 ibv_get_device_guid(ibv_device* device) {
  if (SoftDevice* d = soft_device(device))
    return htobe64(0x02004d5243000000ull + static_cast<uint64_t>(d->index));
  auto next = NEXT(ibv_get_device_guid, "IBVERBS_1.1");
  return next != nullptr ? next(device) : 0;
}

int ibv_get_device_index(ibv_device* device) {
  if (SoftDevice* d = soft_device(device)) return 0x4000 + d->index;
  auto next = NEXT(ibv_get_device_index, "IBVERBS_1.9");
  return next != nullptr ? next(device) : -1;
}

ibv_context* ibv_open_device(ibv_device* device) {
  SoftDevice* d = soft_device(device);
  if (d == nullptr) {
    auto next = NEXT(ibv_open_device, "IBVERBS_1.1");
    return next != nullptr ? next(device) : fail<ibv_context*>(ENODEV, nullptr);
  }
  Nic* nic = nic_open(d->index);
  if (nic == nullptr) return nullptr;
  auto* soft = new SoftContext();
  std::memset(&soft->vctx, 0, sizeof soft->vctx);
  soft->nic = nic;
  soft->vctx.sz = sizeof(verbs_context);
  soft->vctx.query_port = query_port;
  ibv_context& c = soft->vctx.context;
  c.device = device;
  c.cmd_fd = -1;
  c.async_fd = -1;  // ibv_get_async_event blocks without it (verbs_cq.cc)
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  // Every slot verbs.h's inline functions call through works or returns an errno.
  fill_context_ops(c.ops);
  fill_refused_ops(c.ops, soft->vctx);
  fill_qp_ops(c.ops);
  auto locks = nic->lock_all();
  nic->verbs_contexts.push_back(soft);
  return &c;
}

int ibv_close_device(ibv_context* context) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_close_device, "IBVERBS_1.1");
    return next != nullptr ? next(context) : fail(EINVAL, -1);
  }
  if (close_verbs_qps(*soft) != 0) return fail(EBUSY, -1);  // verbs RC QPs or their CQs left
  {
    auto locks = soft->nic->lock_all();
    if (soft->pds > 0 || soft->mrc_contexts > 0 || soft->cqs > 0 || soft->channels > 0)
      return fail(EBUSY, -1);
    soft->magic = kDead;
    auto& list = soft->nic->verbs_contexts;
    list.erase(std::remove(list.begin(), list.end(), soft), list.end());
  }
  soft->async.close();  // a thread waiting in ibv_get_async_event returns -1 (EBADF)
  nic_close(soft->nic);
  pthread_mutex_destroy(&context->mutex);
  delete soft;
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_query_device, "IBVERBS_1.1");
    return next != nullptr ? next(context, attr) : EINVAL;
  }
  if (attr == nullptr) return EINVAL;
  std::memset(attr, 0, sizeof *attr);
  std::snprintf(attr->fw_ver, sizeof attr->fw_ver, "mrc-sw 1.0");
  attr->node_guid = ibv_get_device_guid(context->device);
  attr->sys_image_guid = attr->node_guid;
  attr->max_mr_size = UINT64_MAX;
  attr->page_size_cap = 4096;
  attr->vendor_id = 0;
  attr->max_qp = 1024;
  attr->max_qp_wr = 65536;
  attr->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT;
  attr->max_sge = static_cast<int>(kMaxSge);
  attr->max_cq = 4096;
  attr->max_cqe = 1 << 20;
  attr->max_mr = 4096;
  attr->max_pd = 4096;
  attr->max_pkeys = 1;
  attr->phys_port_cnt = static_cast<uint8_t>(soft->nic->spec->planes.size());
  return 0;
}

// Called for the exported symbol by programs built against old headers.
int(ibv_query_port)(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* attr) {
  if (soft_context(context) == nullptr) {
    auto next = NEXT(ibv_query_port, "IBVERBS_1.1");
    return next != nullptr ? next(context, port_num, attr) : EINVAL;
  }
  // The compat layout is the leading part of ibv_port_attr up to link_layer.
  return query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(attr),
                    offsetof(ibv_port_attr, flags));
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_query_gid, "IBVERBS_1.1");
    return next != nullptr ? next(context, port_num, index, gid) : fail(EINVAL, -1);
  }
  if (gid == nullptr || !port_gid(*soft->nic->spec, port_num, index, gid, nullptr))
    return fail(EINVAL, -1);
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(_ibv_query_gid_ex, "IBVERBS_1.11");
    return next != nullptr ? next(context, port_num, gid_index, entry, flags, entry_size) : EINVAL;
  }
  if (entry == nullptr || entry_size < sizeof(ibv_gid_entry) || flags != 0) return EINVAL;
  ibv_gid_type type{};
  if (port_num > 255 || gid_index > 255 ||
      !port_gid(*soft->nic->spec, static_cast<int>(port_num), static_cast<int>(gid_index),
                &entry->gid, &type))
    return ENODATA;
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = type;
  entry->ndev_ifindex = 1;  // lo: the planes are addresses, not separate devices
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(_ibv_query_gid_table, "IBVERBS_1.11");
    return next != nullptr ? next(context, entries, max_entries, flags, entry_size) : -EINVAL;
  }
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  const size_t ports = soft->nic->spec->planes.size();
  if (max_entries < ports * 4) return -EINVAL;
  size_t n = 0;
  for (uint32_t p = 1; p <= ports; ++p)
    for (uint32_t i = 0; i < 4; ++i, ++n) {
      auto* e =
          reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<uint8_t*>(entries) + n * entry_size);
      _ibv_query_gid_ex(context, p, i, e, 0, entry_size);
    }
  return static_cast<ssize_t>(n);
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_query_pkey, "IBVERBS_1.1");
    return next != nullptr ? next(context, port_num, index, pkey) : fail(EINVAL, -1);
  }
  if (pkey == nullptr || index != 0 || port_num < 1 || port_num > soft->nic->spec->planes.size())
    return fail(EINVAL, -1);
  *pkey = htobe16(0xffff);
  return 0;
}

}  // extern "C"

namespace {

int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t length) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr || attr == nullptr) return EINVAL;
  if (port_num < 1 || port_num > soft->nic->spec->planes.size()) return EINVAL;
  ibv_port_attr a{};
  bool up = false;
  if (soft->nic->remote()) {
    if (const int e = remote_port_up(*soft->nic, port_num - 1, up)) return e;
  } else {
    std::lock_guard lock(soft->nic->mutex);
    up = soft->nic->port_up(port_num - 1);
  }
  {
    a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a.phys_state = up ? 5 : 3;  // LinkUp : Disabled
  }
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = IBV_MTU_4096;
  a.gid_tbl_len = 4;
  a.port_cap_flags = IBV_PORT_CM_SUP;
  a.max_msg_sz = 1u << 31;
  a.pkey_tbl_len = 1;
  a.active_width = 2;   // 4x
  a.active_speed = 32;  // EDR-class lane
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  std::memcpy(attr, &a, std::min(length, sizeof a));
  return 0;
}

}  // namespace
