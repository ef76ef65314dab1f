/* mini_plugin: a small NCCL net plugin (ncclNet_v8) over lib_mrc.so's OCP MRC API, for the NCCL
 * harness's CI test (tests/nccl/harness_test.sh). A test program's plugin, not a product: host
 * memory only, one receive per irecv, one MRC QP per comm.
 *
 * It meets mrc at the same edges the MRC NCCL plugin (microsoft/mrc-nccl-plugin) does:
 *  - devices from ibv_get_device_list, each opened with ibv_open_device and taken if
 *    mrc_query_device says it speaks MRC, with an MRC context (mrc_create_context) and a PD;
 *  - mlx5dv_is_supported on each device, a symbol resolved when the plugin is loaded
 *    (dlopen RTLD_NOW fails if nothing provides it; the plugin links no libmlx5);
 *  - sysfs, as for a kernel RDMA device: the device's bus path (realpath of
 *    /sys/class/infiniband/<dev>/device) and the RoCE v2 GID by its type in
 *    ports/1/gid_attrs/types/<i>, so it works only where those exist (mrc devices: `mrc run`);
 *  - the DMA-BUF probe, ibv_reg_dmabuf_mr with fd -1, which must be refused (EOPNOTSUPP);
 *  - registrations with IBV_ACCESS_REMOTE_ATOMIC among the flags;
 *  - a verbs CQ per comm on the device's context next to the MRC CQ (the MRC plugin's GPU
 *    flush QP reports into one; host memory needs no flush, so it must stay empty);
 *  - data on MRC QPs in the shape of docs/NCCL.md section 2: irecv posts a receive and writes
 *    an entry (address, rkey, size, tag, sequence) into the sender's FIFO with an RDMA WRITE;
 *    isend waits for that entry (a NULL request until it is there) and writes the message
 *    into the announced buffer with one WRITE with immediate (the size), which completes the
 *    receive.
 * Connections are set up over TCP between the devices' plane addresses: the listener's address
 * and port travel in the NCCL handle.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mrc.h"
#include "net_v8.h"

/* Declared as a vendor's mlx5dv.h does: lib_mrc.so defines it. */
bool mlx5dv_is_supported(struct ibv_device* device);

#define MAX_DEVS 16
#define NREQ NCCL_NET_MAX_REQUESTS
#define CTS_BIT 0x100 /* wr_id of a receive's FIFO write, beside the request's index */
#define MR_ACCESS                                                              \
  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
   IBV_ACCESS_REMOTE_ATOMIC)

static ncclDebugLogger_t logger;
#define WARN(...) logger(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)
#define INFO(...) logger(NCCL_LOG_INFO, NCCL_NET, __FILE__, __LINE__, __VA_ARGS__)

struct dev {
  char name[IBV_SYSFS_NAME_MAX];
  char* bus_path;
  struct ibv_context* verbs;
  struct mrc_context* mrc;
  struct ibv_pd* pd;
  union ibv_gid gid;
  int gid_index, speed, max_qp;
  uint64_t guid;
};
static struct dev devs[MAX_DEVS];
static int ndevs = -1;

/* A receive the sender may fill: written by the receiver into the sender's FIFO. `check` mixes
 * the other fields, so that an entry read while it is being written is not taken. */
struct fifo_entry {
  uint64_t addr;
  uint32_t rkey;
  int32_t size, tag;
  uint32_t seq;
  uint64_t check;
};

static uint64_t entry_check(const struct fifo_entry* e) {
  uint64_t x = e->addr ^ ((uint64_t)e->rkey << 32) ^ (uint32_t)e->size ^
               ((uint64_t)(uint32_t)e->tag << 16) ^ ((uint64_t)e->seq << 40);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31) ^ 0x6d72632d6e63636cULL;
}

/* What each end tells the other at set-up (over TCP). */
struct wire_info {
  uint32_t qpn, fifo_rkey;
  uint64_t fifo_addr;
  union ibv_gid gid;
};

struct handle {
  uint32_t magic;
  uint16_t family, port; /* network order */
  uint8_t addr[16];
  struct comm* pending; /* the connecting side's comm between connect() calls */
};
#define HANDLE_MAGIC 0x6d726331

struct request {
  struct comm* comm;
  int used, events, size;
};

struct comm {
  struct dev* dev;
  int fd, state;
  size_t got; /* bytes of `peer` (or the ready byte) received so far */
  struct wire_info peer;
  struct mrc_cq* cq;
  struct ibv_cq* verbs_cq;
  struct mrc_qp* qp;
  struct request reqs[NREQ];
  struct fifo_entry fifo[NREQ]; /* send comm: written by the receiver */
  struct ibv_mr* fifo_mr;       /* send comm: fifo; receive comm: the entries written from */
  uint32_t next;                /* send comm: FIFO entries taken; receive comm: written */
};

struct listen_comm {
  struct dev* dev;
  int fd;
  struct comm* pending; /* accepted, not yet ready */
};

static ncclResult_t open_dev(struct ibv_device* device, struct dev* d, int* taken);

static ncclResult_t mini_init(ncclDebugLogger_t f) {
  logger = f;
  if (ndevs >= 0) return ncclSuccess;
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  if (list == NULL) {
    WARN("ibv_get_device_list: %s", strerror(errno));
    return ncclSystemError;
  }
  ncclResult_t r = ncclSuccess;
  ndevs = 0;
  for (int i = 0; i < n && ndevs < MAX_DEVS && r == ncclSuccess; i++) {
    int taken = 0;
    r = open_dev(list[i], &devs[ndevs], &taken);
    ndevs += taken;
  }
  ibv_free_device_list(list);
  if (r == ncclSuccess && ndevs == 0) {
    WARN("no MRC device among the %d verbs devices (lib_mrc.so's devices: run under `mrc run`)", n);
    r = ncclSystemError;
  }
  return r;
}

/* The first line of a sysfs file of the device. */
static int read_sysfs(const char* dev, const char* rel, char* out, size_t size) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/sys/class/infiniband/%s/%s", dev, rel);
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  const int ok = fgets(out, (int)size, f) != NULL;
  fclose(f);
  if (ok) out[strcspn(out, "\n")] = '\0';
  return ok ? 0 : -1;
}

static ncclResult_t open_dev(struct ibv_device* device, struct dev* d, int* taken) {
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "%s", ibv_get_device_name(device));
  const bool mlx5 = mlx5dv_is_supported(device);
  d->verbs = ibv_open_device(device);
  if (d->verbs == NULL) {
    WARN("%s: ibv_open_device: %s", d->name, strerror(errno));
    return ncclSystemError;
  }
  struct mrc_device_attr mattr;
  int supported = 0;
  if (mrc_query_device(d->verbs, &mattr, &supported) != 0 || !supported) {
    INFO("%s: not an MRC device, skipped", d->name);
    ibv_close_device(d->verbs);
    return ncclSuccess;
  }
  struct ibv_device_attr attr;
  struct ibv_port_attr port;
  if (ibv_query_device(d->verbs, &attr) != 0 || ibv_query_port(d->verbs, 1, &port) != 0) {
    WARN("%s: ibv_query_device/ibv_query_port: %s", d->name, strerror(errno));
    return ncclSystemError;
  }
  d->guid = attr.sys_image_guid;
  d->max_qp = attr.max_qp;
  static const int lane[] = {2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000, 200000};
  static const int width[] = {1, 4, 8, 12, 2};
  int s = 0, w = 0;
  while (s < 8 && !(port.active_speed & (1 << s))) s++;
  while (w < 4 && !(port.active_width & (1 << w))) w++;
  d->speed = lane[s] * width[w] * attr.phys_port_cnt; /* one MRC QP sprays over every port */

  char link[PATH_MAX];
  snprintf(link, sizeof link, "/sys/class/infiniband/%s/device", d->name);
  d->bus_path = realpath(link, NULL);
  if (d->bus_path == NULL) {
    WARN(
        "%s: %s: %s (the sysfs entry of a kernel RDMA device; `mrc run` gives mrc's devices "
        "theirs)",
        d->name, link, strerror(errno));
    return ncclSystemError;
  }
  d->gid_index = -1;
  for (int i = 0; i < port.gid_tbl_len && d->gid_index < 0; i++) {
    char rel[64], type[32];
    snprintf(rel, sizeof rel, "ports/1/gid_attrs/types/%d", i);
    if (read_sysfs(d->name, rel, type, sizeof type) != 0 || strcmp(type, "RoCE v2") != 0) continue;
    union ibv_gid g;
    static const uint8_t link_local[8] = {0xfe, 0x80};
    static const uint8_t zero[16] = {0};
    if (ibv_query_gid(d->verbs, 1, i, &g) != 0 || memcmp(g.raw, zero, 16) == 0 ||
        memcmp(g.raw, link_local, 8) == 0)
      continue;
    d->gid = g;
    d->gid_index = i;
  }
  if (d->gid_index < 0) {
    WARN("%s: no routable RoCE v2 GID named in /sys/class/infiniband/%s/ports/1/gid_attrs/types",
         d->name, d->name);
    return ncclSystemError;
  }
  struct mrc_context_attr cattr = {.mrc_api_version_used = MRC_API_CURRENT_VERSION};
  d->mrc = mrc_create_context(d->verbs, &cattr);
  d->pd = d->mrc ? ibv_alloc_pd(d->verbs) : NULL;
  if (d->pd == NULL) {
    WARN("%s: mrc_create_context/ibv_alloc_pd: %s", d->name, strerror(errno));
    return ncclSystemError;
  }
  /* The DMA-BUF probe: a kernel that has DMA-BUF says EBADF for fd -1; mrc must refuse it. */
  errno = 0;
  struct ibv_mr* probe = ibv_reg_dmabuf_mr(d->pd, 0, 0, 0, -1, 0);
  if (probe != NULL || (errno != EOPNOTSUPP && errno != EPROTONOSUPPORT)) {
    WARN("%s: ibv_reg_dmabuf_mr(fd -1) gave %p, errno %d (%s): expected NULL, EOPNOTSUPP", d->name,
         (void*)probe, errno, strerror(errno));
    if (probe != NULL) ibv_dereg_mr(probe);
    return ncclSystemError;
  }
  INFO("%s: MRC device, %d ports, GID %d, bus %s, mlx5dv_is_supported %d, DMA-BUF refused", d->name,
       attr.phys_port_cnt, d->gid_index, d->bus_path, (int)mlx5);
  *taken = 1;
  return ncclSuccess;
}

static ncclResult_t mini_devices(int* n) {
  *n = ndevs;
  return ncclSuccess;
}

static ncclResult_t mini_get_properties(int dev, ncclNetProperties_v8_t* p) {
  if (dev < 0 || dev >= ndevs) return ncclInvalidArgument;
  const struct dev* d = &devs[dev];
  memset(p, 0, sizeof *p);
  p->name = (char*)d->name;
  p->pciPath = d->bus_path;
  p->guid = d->guid;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = d->speed;
  p->port = 1;
  p->maxComms = d->max_qp;
  p->maxRecvs = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  return ncclSuccess;
}

/* The device's plane address (its GID) as a socket address, port `port` (network order). */
static socklen_t dev_addr(const struct dev* d, struct sockaddr_storage* a, uint16_t port) {
  static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(a, 0, sizeof *a);
  if (memcmp(d->gid.raw, v4_mapped, 12) == 0) {
    struct sockaddr_in* a4 = (struct sockaddr_in*)a;
    a4->sin_family = AF_INET;
    a4->sin_port = port;
    memcpy(&a4->sin_addr, d->gid.raw + 12, 4);
    return sizeof *a4;
  }
  struct sockaddr_in6* a6 = (struct sockaddr_in6*)a;
  a6->sin6_family = AF_INET6;
  a6->sin6_port = port;
  memcpy(&a6->sin6_addr, d->gid.raw, 16);
  return sizeof *a6;
}

static ncclResult_t mini_listen(int dev, void* opaque, void** listen_comm) {
  if (dev < 0 || dev >= ndevs) return ncclInvalidArgument;
  struct dev* d = &devs[dev];
  struct sockaddr_storage a;
  socklen_t len = dev_addr(d, &a, 0);
  const int fd = socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, len) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, (struct sockaddr*)&a, &len) != 0) {
    WARN("%s: TCP listener on its plane address: %s", d->name, strerror(errno));
    if (fd >= 0) close(fd);
    return ncclSystemError;
  }
  struct handle* h = opaque;
  memset(h, 0, NCCL_NET_HANDLE_MAXSIZE);
  h->magic = HANDLE_MAGIC;
  h->family = a.ss_family;
  if (a.ss_family == AF_INET) {
    h->port = ((struct sockaddr_in*)&a)->sin_port;
    memcpy(h->addr, &((struct sockaddr_in*)&a)->sin_addr, 4);
  } else {
    h->port = ((struct sockaddr_in6*)&a)->sin6_port;
    memcpy(h->addr, &((struct sockaddr_in6*)&a)->sin6_addr, 16);
  }
  struct listen_comm* l = calloc(1, sizeof *l);
  if (l == NULL) {
    close(fd);
    return ncclSystemError;
  }
  l->dev = d;
  l->fd = fd;
  *listen_comm = l;
  return ncclSuccess;
}

static void comm_free(struct comm* c) {
  if (c->qp) mrc_destroy_qp(c->qp);
  if (c->cq) mrc_destroy_cq(c->cq);
  if (c->verbs_cq) ibv_destroy_cq(c->verbs_cq);
  if (c->fifo_mr) ibv_dereg_mr(c->fifo_mr);
  if (c->fd >= 0) close(c->fd);
  free(c);
}

/* A comm's QP (in INIT), its CQs and the registered FIFO. */
static struct comm* comm_new(struct dev* d, int fd) {
  struct comm* c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->dev = d;
  c->fd = fd;
  c->cq = mrc_create_cq(d->mrc, 4 * NREQ, c, NULL, 0);
  c->verbs_cq = ibv_create_cq(d->verbs, 4 * NREQ, c, NULL, 0);
  c->fifo_mr = ibv_reg_mr(d->pd, c->fifo, sizeof c->fifo, MR_ACCESS);
  struct mrc_qp_init_attr qa = {.qp_context = c, .send_cq = c->cq, .recv_cq = c->cq, .pd = d->pd};
  qa.cap.max_send_wr = 2 * NREQ;
  qa.cap.max_recv_wr = NREQ;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  c->qp = c->cq && c->verbs_cq && c->fifo_mr ? mrc_create_qp(d->mrc, &qa) : NULL;
  struct ibv_qp_attr v = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  v.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  if (c->qp == NULL ||
      mrc_modify_qp(c->qp, &v, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                    &m, 0)) {
    WARN("%s: a comm's CQs, FIFO or QP: %s", d->name, strerror(errno));
    c->fd = -1; /* the caller's */
    comm_free(c);
    return NULL;
  }
  return c;
}

static int send_info(struct comm* c) {
  struct wire_info me = {.fifo_rkey = c->fifo_mr->rkey, .fifo_addr = (uintptr_t)c->fifo};
  me.gid = c->dev->gid;
  /* A fresh connection takes a few dozen bytes without blocking. */
  return mrc_get_qpn(c->qp, &me.qpn) == 0 &&
                 send(c->fd, &me, sizeof me, MSG_NOSIGNAL) == (ssize_t)sizeof me
             ? 0
             : -1;
}

/* Reads into `buf` up to `want` bytes in all; 1 when complete, 0 not yet, -1 on error. */
static int recv_some(struct comm* c, void* buf, size_t want) {
  const ssize_t k = recv(c->fd, (char*)buf + c->got, want - c->got, MSG_DONTWAIT);
  if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return -1;
  if (k > 0) c->got += (size_t)k;
  return c->got == want;
}

static int to_rts(struct comm* c) {
  struct ibv_qp_attr v;
  struct mrc_qp_attr m;
  memset(&v, 0, sizeof v);
  memset(&m, 0, sizeof m);
  v.qp_state = IBV_QPS_RTR;
  v.path_mtu = IBV_MTU_4096;
  v.dest_qp_num = c->peer.qpn;
  v.ah_attr.is_global = 1;
  v.ah_attr.port_num = 1;
  v.ah_attr.grh.dgid = c->peer.gid;
  v.ah_attr.grh.sgid_index = (uint8_t)c->dev->gid_index;
  v.ah_attr.grh.hop_limit = 255;
  if (mrc_modify_qp(c->qp, &v,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
                    &m, 0))
    return -1;
  memset(&v, 0, sizeof v);
  v.qp_state = IBV_QPS_RTS;
  return mrc_modify_qp(c->qp, &v, IBV_QP_STATE | IBV_QP_SQ_PSN, &m, 0);
}

/* Sender: TCP connect, send its QP and FIFO, take the receiver's QP, RTR/RTS, send "ready". */
static ncclResult_t mini_connect(int dev, void* opaque, void** send_comm,
                                 ncclNetDeviceHandle_v8_t** dev_comm) {
  (void)dev_comm;
  struct handle* h = opaque;
  *send_comm = NULL;
  if (dev < 0 || dev >= ndevs || h->magic != HANDLE_MAGIC) return ncclInvalidArgument;
  struct comm* c = h->pending;
  if (c == NULL) {
    struct sockaddr_storage a;
    memset(&a, 0, sizeof a);
    socklen_t len = sizeof(struct sockaddr_in6);
    a.ss_family = h->family;
    if (h->family == AF_INET) {
      ((struct sockaddr_in*)&a)->sin_port = h->port;
      memcpy(&((struct sockaddr_in*)&a)->sin_addr, h->addr, 4);
      len = sizeof(struct sockaddr_in);
    } else {
      ((struct sockaddr_in6*)&a)->sin6_port = h->port;
      memcpy(&((struct sockaddr_in6*)&a)->sin6_addr, h->addr, 16);
    }
    const int fd = socket(h->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || (connect(fd, (struct sockaddr*)&a, len) != 0 && errno != EINPROGRESS)) {
      WARN("connect to the listener: %s", strerror(errno));
      if (fd >= 0) close(fd);
      return ncclSystemError;
    }
    c = comm_new(&devs[dev], fd);
    if (c == NULL) {
      close(fd);
      return ncclSystemError;
    }
    h->pending = c;
  }
  if (c->state == 0) { /* connecting */
    struct pollfd p = {.fd = c->fd, .events = POLLOUT};
    if (poll(&p, 1, 0) == 0) return ncclSuccess;
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
      WARN("connect to the listener: %s", strerror(err ? err : errno));
      goto fail;
    }
    if (send_info(c) != 0) {
      WARN("%s: its QP to the receiver: %s", c->dev->name, strerror(errno));
      goto fail;
    }
    c->state = 1;
  }
  const int got = recv_some(c, &c->peer, sizeof c->peer);
  if (got < 0) {
    WARN("the receiver closed the connection during set-up");
    goto fail;
  }
  if (got == 0) return ncclSuccess;
  char ready = 'R';
  if (to_rts(c) != 0 || send(c->fd, &ready, 1, MSG_NOSIGNAL) != 1) {
    WARN("%s: QP to RTS, or the ready byte: %s", c->dev->name, strerror(errno));
    goto fail;
  }
  h->pending = NULL;
  *send_comm = c;
  return ncclSuccess;
fail:
  h->pending = NULL;
  comm_free(c);
  return ncclSystemError;
}

/* Receiver: accept, take the sender's QP and FIFO, RTR/RTS, send its QP, wait for "ready". */
static ncclResult_t mini_accept(void* listen_comm, void** recv_comm,
                                ncclNetDeviceHandle_v8_t** dev_comm) {
  (void)dev_comm;
  struct listen_comm* l = listen_comm;
  *recv_comm = NULL;
  struct comm* c = l->pending;
  if (c == NULL) {
    const int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return ncclSuccess;
      WARN("accept: %s", strerror(errno));
      return ncclSystemError;
    }
    c = comm_new(l->dev, fd);
    if (c == NULL) {
      close(fd);
      return ncclSystemError;
    }
    l->pending = c;
  }
  int got;
  if (c->state == 0) {
    if ((got = recv_some(c, &c->peer, sizeof c->peer)) <= 0) {
      if (got == 0) return ncclSuccess;
      WARN("the sender closed the connection during set-up");
      goto fail;
    }
    if (to_rts(c) != 0 || send_info(c) != 0) {
      WARN("%s: QP to RTS, or its information to the sender: %s", c->dev->name, strerror(errno));
      goto fail;
    }
    c->state = 1;
    c->got = 0;
  }
  char ready;
  if ((got = recv_some(c, &ready, 1)) <= 0) {
    if (got == 0) return ncclSuccess;
    WARN("the sender closed the connection before it was ready");
    goto fail;
  }
  l->pending = NULL;
  *recv_comm = c;
  return ncclSuccess;
fail:
  l->pending = NULL;
  comm_free(c);
  return ncclSystemError;
}

static ncclResult_t mini_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  struct comm* c = comm;
  if (type != NCCL_PTR_HOST) {
    WARN("regMr of type %d: this plugin registers host memory only (NCCL_PTR_HOST)", type);
    return ncclInvalidArgument;
  }
  struct ibv_mr* mr = ibv_reg_mr(c->dev->pd, data, size, MR_ACCESS);
  if (mr == NULL) {
    WARN("%s: ibv_reg_mr of %zu bytes: %s", c->dev->name, size, strerror(errno));
    return ncclSystemError;
  }
  *mhandle = mr;
  return ncclSuccess;
}

static ncclResult_t mini_reg_mr_dmabuf(void* comm, void* data, size_t size, int type,
                                       uint64_t offset, int fd, void** mhandle) {
  (void)offset;
  if (fd != -1) {
    WARN("regMrDmaBuf with a DMA-BUF: this plugin does not report NCCL_PTR_DMABUF");
    return ncclInvalidUsage;
  }
  return mini_reg_mr(comm, data, size, type, mhandle);
}

static ncclResult_t mini_dereg_mr(void* comm, void* mhandle) {
  (void)comm;
  if (ibv_dereg_mr(mhandle) != 0) {
    WARN("ibv_dereg_mr: %s", strerror(errno));
    return ncclSystemError;
  }
  return ncclSuccess;
}

static struct request* new_request(struct comm* c, int events, int size) {
  for (int i = 0; i < NREQ; i++)
    if (!c->reqs[i].used) {
      c->reqs[i] = (struct request){.comm = c, .used = 1, .events = events, .size = size};
      return &c->reqs[i];
    }
  return NULL;
}

static ncclResult_t post(struct comm* c, struct ibv_send_wr* wr) {
  struct ibv_send_wr* bad = NULL;
  const int e = mrc_post_send(c->qp, wr, &bad);
  if (e != 0) {
    WARN("%s: mrc_post_send: %s", c->dev->name, strerror(e));
    return ncclSystemError;
  }
  return ncclSuccess;
}

static ncclResult_t mini_isend(void* send_comm, void* data, int size, int tag, void* mhandle,
                               void** request) {
  struct comm* c = send_comm;
  *request = NULL;
  volatile struct fifo_entry* slot = &c->fifo[c->next % NREQ];
  struct fifo_entry e;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  memcpy(&e, (const void*)slot, sizeof e);
  if (e.seq != c->next + 1 || e.check != entry_check(&e)) return ncclSuccess; /* not there yet */
  if (e.tag != tag || size > e.size) {
    WARN("isend of %d bytes, tag %d, for a receive of %d bytes, tag %d", size, tag, e.size, e.tag);
    return ncclInvalidUsage;
  }
  struct request* r = new_request(c, 1, size);
  if (r == NULL) return ncclSuccess;
  struct ibv_sge sge = {(uintptr_t)data, (uint32_t)size, ((struct ibv_mr*)mhandle)->lkey};
  struct ibv_send_wr wr;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = (uint64_t)(r - c->reqs);
  wr.sg_list = size > 0 ? &sge : NULL;
  wr.num_sge = size > 0;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl((uint32_t)size);
  wr.wr.rdma.remote_addr = e.addr;
  wr.wr.rdma.rkey = e.rkey;
  if (post(c, &wr) != ncclSuccess) {
    r->used = 0;
    return ncclSystemError;
  }
  c->next++;
  *request = r;
  return ncclSuccess;
}

static ncclResult_t mini_irecv(void* recv_comm, int n, void** data, int* sizes, int* tags,
                               void** mhandles, void** request) {
  struct comm* c = recv_comm;
  *request = NULL;
  if (n != 1) {
    WARN("irecv of %d grouped receives: this plugin reports maxRecvs 1", n);
    return ncclInvalidUsage;
  }
  /* Two completions: the FIFO entry's WRITE, and the message's WRITE with immediate. */
  struct request* r = new_request(c, 2, 0);
  if (r == NULL) return ncclSuccess;
  const int i = (int)(r - c->reqs);
  struct ibv_recv_wr rw = {.wr_id = (uint64_t)i}, *bad = NULL;
  if (mrc_post_recv(c->qp, &rw, &bad) != 0) {
    WARN("%s: mrc_post_recv: %s", c->dev->name, strerror(errno));
    r->used = 0;
    return ncclSystemError;
  }
  struct fifo_entry* e = &c->fifo[i]; /* the copy written from, this request's while it lasts */
  e->addr = (uintptr_t)data[0];
  e->rkey = ((struct ibv_mr*)mhandles[0])->rkey;
  e->size = sizes[0];
  e->tag = tags[0];
  e->seq = c->next + 1;
  e->check = entry_check(e);
  struct ibv_sge sge = {(uintptr_t)e, sizeof *e, c->fifo_mr->lkey};
  struct ibv_send_wr wr;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = (uint64_t)i | CTS_BIT;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = c->peer.fifo_addr + (c->next % NREQ) * sizeof *e;
  wr.wr.rdma.rkey = c->peer.fifo_rkey;
  if (post(c, &wr) != ncclSuccess) return ncclSystemError; /* the receive stays posted: fatal */
  c->next++;
  *request = r;
  return ncclSuccess;
}

static ncclResult_t mini_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                                void** request) {
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory: nothing to flush */
  return ncclSuccess;
}

static ncclResult_t mini_test(void* request, int* done, int* sizes) {
  struct request* r = request;
  struct comm* c = r->comm;
  *done = 0;
  if (r->events > 0) {
    struct ibv_wc wc[2 * NREQ];
    const int n = mrc_poll_cq(c->cq, 2 * NREQ, wc);
    if (n < 0) {
      WARN("%s: mrc_poll_cq: %s", c->dev->name, strerror(errno));
      return ncclSystemError;
    }
    for (int i = 0; i < n; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        WARN("%s: completion of %s %d: %s", c->dev->name,
             wc[i].wr_id & CTS_BIT ? "the FIFO write of receive" : "request",
             (int)(wc[i].wr_id & 0xff), ibv_wc_status_str(wc[i].status));
        return ncclRemoteError;
      }
      struct request* q = &c->reqs[wc[i].wr_id & 0xff];
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) q->size = (int)ntohl(wc[i].imm_data);
      q->events--;
    }
  }
  if (r->events > 0) return ncclSuccess;
  *done = 1;
  if (sizes) *sizes = r->size;
  r->used = 0;
  return ncclSuccess;
}

static ncclResult_t comm_close(struct comm* c) {
  struct ibv_wc wc;
  const int stray = ibv_poll_cq(c->verbs_cq, 1, &wc);
  if (stray != 0) WARN("%s: the comm's verbs CQ held a completion (%d)", c->dev->name, stray);
  const int e = mrc_destroy_qp(c->qp) || mrc_destroy_cq(c->cq) || ibv_destroy_cq(c->verbs_cq) ||
                ibv_dereg_mr(c->fifo_mr);
  if (e) WARN("%s: closing a comm: %s", c->dev->name, strerror(errno));
  c->qp = NULL, c->cq = NULL, c->verbs_cq = NULL, c->fifo_mr = NULL;
  comm_free(c);
  return e || stray ? ncclSystemError : ncclSuccess;
}

static ncclResult_t mini_close_send(void* comm) {
  return comm_close(comm);
}
static ncclResult_t mini_close_recv(void* comm) {
  return comm_close(comm);
}

static ncclResult_t mini_close_listen(void* listen_comm) {
  struct listen_comm* l = listen_comm;
  if (l->pending) comm_free(l->pending);
  close(l->fd);
  free(l);
  return ncclSuccess;
}

const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "mrc-mini",
    .init = mini_init,
    .devices = mini_devices,
    .getProperties = mini_get_properties,
    .listen = mini_listen,
    .connect = mini_connect,
    .accept = mini_accept,
    .regMr = mini_reg_mr,
    .regMrDmaBuf = mini_reg_mr_dmabuf,
    .deregMr = mini_dereg_mr,
    .isend = mini_isend,
    .irecv = mini_irecv,
    .iflush = mini_iflush,
    .test = mini_test,
    .closeSend = mini_close_send,
    .closeRecv = mini_close_recv,
    .closeListen = mini_close_listen,
};
