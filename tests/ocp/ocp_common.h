/* Helpers for mrc's OCP conformance programs: they use only the OCP MRC API (mrc.h,
 * mrc_ctl.h) and libibverbs calls, as any MRC application would. The software device and its
 * planes come from MRC_DEVICES (see docs/OCP-COMPAT.md). */
#ifndef MRC_OCP_COMMON_H
#define MRC_OCP_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrc.h"
#include "mrc_ctl.h"

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);          \
      fprintf(stderr, __VA_ARGS__);                                 \
      fprintf(stderr, " (errno %d: %s)\n", errno, strerror(errno)); \
      exit(1);                                                      \
    }                                                               \
  } while (0)

/* `call` must fail (non-zero) with errno `err`. */
#define EXPECT_ERRNO(call, err)                                                               \
  do {                                                                                        \
    errno = 0;                                                                                \
    long rc_ = (long)(call);                                                                  \
    CHECK(rc_ != 0 && errno == (err), "%s gave %ld, errno %d; expected errno %d", #call, rc_, \
          errno, (err));                                                                      \
  } while (0)

/* What one side tells the other to connect (sent over TCP by the two-process programs). */
struct peer_info {
  uint32_t qpn;
  uint32_t psn;
  union ibv_gid gid;
  uint64_t addr;
  uint32_t rkey;
  uint32_t size;
};

/* One end: device, MRC context, PD, one CQ per direction, one QP, one registered buffer. */
struct end {
  struct ibv_context* dev;
  struct mrc_context* ctx;
  struct ibv_pd* pd;
  struct mrc_cq *send_cq, *recv_cq;
  struct mrc_comp_channel* channel; /* the receive CQ's, if asked for */
  struct mrc_qp* qp;
  struct ibv_mr* mr;
  uint8_t* buf;
  size_t size;
};

static inline struct ibv_context* open_named(const char* name) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  struct ibv_context* ctx = NULL;
  CHECK(list != NULL, "ibv_get_device_list");
  for (int i = 0; i < n; i++)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  CHECK(ctx != NULL, "device %s not found or cannot be opened (MRC_DEVICES set?)", name);
  return ctx;
}

static inline void end_open(struct end* e, const char* device, size_t size, uint32_t send_wr,
                            uint32_t recv_wr, int with_channel) {
  struct mrc_context_attr attr = {.mrc_api_version_used = MRC_API_CURRENT_VERSION};
  struct mrc_qp_init_attr qa;
  memset(e, 0, sizeof *e);
  e->dev = open_named(device);
  e->ctx = mrc_create_context(e->dev, &attr);
  CHECK(e->ctx != NULL, "mrc_create_context");
  e->pd = ibv_alloc_pd(e->dev);
  CHECK(e->pd != NULL, "ibv_alloc_pd");
  e->send_cq = mrc_create_cq(e->ctx, 4096, NULL, NULL, 0);
  if (with_channel)
    CHECK(mrc_create_comp_channel(e->ctx, &e->channel) == 0, "mrc_create_comp_channel");
  e->recv_cq = mrc_create_cq(e->ctx, 4096, e, e->channel, 0);
  CHECK(e->send_cq && e->recv_cq, "mrc_create_cq");
  memset(&qa, 0, sizeof qa);
  qa.send_cq = e->send_cq;
  qa.recv_cq = e->recv_cq;
  qa.pd = e->pd;
  qa.cap.max_send_wr = send_wr;
  qa.cap.max_recv_wr = recv_wr;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.protocol_version = MRC_PROTOCOL_VERSION_1;
  e->qp = mrc_create_qp(e->ctx, &qa);
  CHECK(e->qp != NULL, "mrc_create_qp");
  e->size = size;
  e->buf = (uint8_t*)calloc(1, size);
  CHECK(e->buf != NULL, "calloc");
  e->mr = ibv_reg_mr(e->pd, e->buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CHECK(e->mr != NULL, "ibv_reg_mr");
}

static inline void end_info(struct end* e, uint32_t psn, struct peer_info* out) {
  memset(out, 0, sizeof *out);
  CHECK(mrc_get_qpn(e->qp, &out->qpn) == 0, "mrc_get_qpn");
  out->psn = psn;
  CHECK(ibv_query_gid(e->dev, 1, 3, &out->gid) == 0, "ibv_query_gid");
  out->addr = (uint64_t)(uintptr_t)e->buf;
  out->rkey = e->mr->rkey;
  out->size = (uint32_t)e->size;
}

/* RESET -> INIT -> RTR -> RTS toward `peer`, with optional MRC attributes at each step. */
static inline int end_connect(struct end* e, uint32_t my_psn, const struct peer_info* peer,
                              struct mrc_qp_attr* mattr, int init_mask, int rtr_mask,
                              int rts_mask) {
  struct ibv_qp_attr v;
  struct mrc_qp_attr none;
  memset(&none, 0, sizeof none);
  if (mattr == NULL) mattr = &none;
  memset(&v, 0, sizeof v);
  v.qp_state = IBV_QPS_INIT;
  v.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (mrc_modify_qp(e->qp, &v, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, mattr, init_mask)) return -1;
  memset(&v, 0, sizeof v);
  v.qp_state = IBV_QPS_RTR;
  v.path_mtu = IBV_MTU_4096;
  v.ah_attr.is_global = 1;
  v.ah_attr.port_num = 1;
  v.ah_attr.grh.dgid = peer->gid;
  v.ah_attr.grh.sgid_index = 3;
  v.dest_qp_num = peer->qpn;
  v.rq_psn = peer->psn;
  if (mrc_modify_qp(e->qp, &v,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
                    mattr, rtr_mask))
    return -1;
  memset(&v, 0, sizeof v);
  v.qp_state = IBV_QPS_RTS;
  v.sq_psn = my_psn;
  return mrc_modify_qp(e->qp, &v, IBV_QP_STATE | IBV_QP_SQ_PSN, mattr, rts_mask);
}

static inline void end_close(struct end* e) {
  CHECK(mrc_destroy_qp(e->qp) == 0, "mrc_destroy_qp");
  CHECK(mrc_destroy_cq(e->send_cq) == 0 && mrc_destroy_cq(e->recv_cq) == 0, "mrc_destroy_cq");
  if (e->channel) CHECK(mrc_destroy_comp_channel(e->channel) == 0, "mrc_destroy_comp_channel");
  CHECK(ibv_dereg_mr(e->mr) == 0, "ibv_dereg_mr");
  CHECK(ibv_dealloc_pd(e->pd) == 0, "ibv_dealloc_pd");
  CHECK(mrc_destroy_context(e->ctx) == 0, "mrc_destroy_context");
  CHECK(ibv_close_device(e->dev) == 0, "ibv_close_device");
  free(e->buf);
}

/* Busy-polls `cq` for one completion. */
static inline struct ibv_wc wait_wc(struct mrc_cq* cq) {
  struct ibv_wc wc;
  int n;
  while ((n = mrc_poll_cq(cq, 1, &wc)) == 0) {
  }
  CHECK(n == 1, "mrc_poll_cq returned %d", n);
  return wc;
}

static inline int post_write(struct mrc_qp* qp, struct ibv_mr* mr, void* local, uint32_t len,
                             uint64_t remote, uint32_t rkey, int with_imm, uint32_t imm,
                             int signaled, uint64_t wr_id) {
  struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)local, .length = len, .lkey = mr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.imm_data = imm;
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  return mrc_post_send(qp, &wr, &bad);
}

static inline int post_recvs(struct mrc_qp* qp, int count) {
  for (int i = 0; i < count; i++) {
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = (uint64_t)i;
    if (mrc_post_recv(qp, &wr, &bad)) return -1;
  }
  return 0;
}

/* `count` 8 KiB WRITE-with-immediates from a to b, one at a time: each arrives in place with its
 * immediate (b's receive is replaced), and a's send completes. */
static inline void write_messages(struct end* a, struct end* b, const struct peer_info* bi,
                                  uint32_t count) {
  for (uint32_t i = 0; i < count; i++) {
    memset(a->buf, (int)(i + 1), 8192);
    CHECK(post_write(a->qp, a->mr, a->buf, 8192, bi->addr, bi->rkey, 1, htonl(i), 1, i) == 0,
          "post");
    struct ibv_wc wc = wait_wc(b->recv_cq);
    CHECK(wc.status == IBV_WC_SUCCESS && ntohl(wc.imm_data) == i, "receive %u", i);
    CHECK(b->buf[8191] == (uint8_t)(i + 1), "data of message %u in place", i);
    CHECK(post_recvs(b->qp, 1) == 0, "post_recv");
    wc = wait_wc(a->send_cq);
    CHECK(wc.status == IBV_WC_SUCCESS, "send completion: %s", ibv_wc_status_str(wc.status));
  }
}

/* The SRv6 EV (EV format mode SRV6) of `usid` on port `port` of an SRv6 device: the plane's
 * locator block (its GID's first 4 bytes), then the uSID. */
static inline struct mrc_ctl_ev srv6_ev(struct ibv_context* dev, uint8_t port, uint16_t usid) {
  union ibv_gid gid;
  struct mrc_ctl_ev ev;
  CHECK(ibv_query_gid(dev, port, 3, &gid) == 0, "GID of port %u", port);
  memset(&ev, 0, sizeof ev);
  memcpy(ev.val, gid.raw, 4);
  ev.val[4] = (uint8_t)(usid >> 8);
  ev.val[5] = (uint8_t)usid;
  ev.port = port;
  return ev;
}

/* Controller calls as OCP's examples make them (mrc_ctl_exp_ev.md, mrc_ctl_gen_ev.md); each
 * returns what the call returned. */

/* Format profile `id`: INIT -> OFFLINE with its mode and fields, then ONLINE. */
static inline int ctl_format_online(struct mrc_context* ctx, uint64_t id,
                                    enum mrc_ctl_ev_fmt_mode mode,
                                    struct mrc_ctl_ev_fmt_field* fields, int n) {
  struct mrc_ctl_ev_fmt_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_fmt_mode = mode;
  a.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  a.ev_fmt_op.fmt_fields = fields;
  a.ev_fmt_op.fmt_field_count = n;
  if (mrc_ctl_modify_ev_fmt_profile(ctx, id, &a,
                                    MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE |
                                        MRC_CTL_EV_FMT_PROFILE_OP) != 0)
    return -1;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_ONLINE;
  return mrc_ctl_modify_ev_fmt_profile(ctx, id, &a, MRC_CTL_EV_FMT_PROFILE_STATE);
}

/* EV profile `id` INIT -> OFFLINE: mode, format profile, count, floor 1, and field rules if given.
 */
static inline int ctl_profile_offline(struct mrc_context* ctx, uint64_t id, uint64_t fmt,
                                      enum mrc_ctl_ev_mode mode, uint32_t count,
                                      struct mrc_ctl_ev_field* fields, int n) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = mode;
  a.ev_fmt_profile_id = fmt;
  a.ev_count = count;
  a.ev_min_active = 1;
  a.ev_fields_op.op = MRC_CTL_EV_FIELDS_OP_MODIFY_FIELDS;
  a.ev_fields_op.fields = fields;
  a.ev_fields_op.field_count = n;
  return mrc_ctl_modify_ev_profile(ctx, id, &a,
                                   MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE |
                                       MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_COUNT |
                                       MRC_CTL_EV_PROFILE_MIN_ACTIVE |
                                       (fields != NULL ? MRC_CTL_EV_PROFILE_EV_FIELDS_OP : 0));
}

static inline int ctl_profile_state(struct mrc_context* ctx, uint64_t id,
                                    enum mrc_ctl_profile_state state) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = state;
  return mrc_ctl_modify_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_STATE);
}

/* An EV operation on profile `id` (`query`: through mrc_ctl_query_ev_profile). */
static inline int ctl_ev_op(struct mrc_context* ctx, uint64_t id, enum mrc_ctl_ev_op op,
                            struct mrc_ctl_ev_op_entry* entries, int n, int query) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.ev_op.op = op;
  a.ev_op.entries = entries;
  a.ev_op.entry_count = n;
  return query ? mrc_ctl_query_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP)
               : mrc_ctl_modify_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP);
}

/* REPLACE_EV of the first unpopulated entry of profile `id` with `ev`, GOOD. */
static inline int ctl_fill(struct mrc_context* ctx, uint64_t id, struct mrc_ctl_ev ev) {
  struct mrc_ctl_ev_op_entry e;
  memset(&e, 0, sizeof e);
  e.ev_new = ev;
  e.state = MRC_CTL_EV_GOOD;
  return ctl_ev_op(ctx, id, MRC_CTL_EV_OP_REPLACE_EV, &e, 1, 0);
}

/* EV format profile 14 (OCP's SRv6 one: a 32-bit locator and four 16-bit uSIDs) and explicit
 * EV profile `id` of `evs`, both ONLINE, as OCP's examples/mrc_ctl_exp_ev.md builds them. */
static inline void srv6_explicit_profile(struct mrc_context* ctx, uint64_t id,
                                         const struct mrc_ctl_ev* evs, uint32_t n) {
  struct mrc_ctl_ev_fmt_field fields[5] = {{32}, {16}, {16}, {16}, {16}};
  CHECK(ctl_format_online(ctx, 14, MRC_CTL_EV_FMT_MODE_SRV6, fields, 5) == 0,
        "SRv6 format profile 14 ONLINE");
  CHECK(ctl_profile_offline(ctx, id, 14, MRC_CTL_EV_MODE_EXP, n, NULL, 0) == 0,
        "explicit EV profile %llu OFFLINE", (unsigned long long)id);
  for (uint32_t i = 0; i < n; i++) CHECK(ctl_fill(ctx, id, evs[i]) == 0, "REPLACE_EV %u", i);
  CHECK(ctl_profile_state(ctx, id, MRC_CTL_PROFILE_ONLINE) == 0, "EV profile %llu ONLINE",
        (unsigned long long)id);
}

#endif
