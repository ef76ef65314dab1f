/* verbs_rc_data: data through verbs RC QPs on mrc devices (MRC QPs underneath), as a verbs
 * program moves it: two devices of one process, a verbs RC QP on each, connected through
 * ibv_modify_qp with the peer's RoCEv2 GID, then
 *   - inline WRITEs (IBV_SEND_INLINE, 1 to max_inline_data bytes, unregistered source): the
 *     source is overwritten right after each post, and the peer's buffer holds what was posted;
 *   - WRITE with immediate: the receiver's posted receive completes as
 *     IBV_WC_RECV_RDMA_WITH_IMM with the immediate and the length, the data already in place,
 *     its wr_id the receive's; the sender's completion is IBV_WC_RDMA_WRITE; immediates arrive
 *     in posting order, and without a posted receive nothing completes on the receiver;
 *   - an inline WRITE with immediate (both at once).
 * The devices come from MRC_DEVICES (their busy-poll-us= changes how fast, not what arrives).
 *
 *   verbs_rc_data <device A> <device B>
 */
#include <time.h>

#include "ocp_common.h"

struct vend {
  struct ibv_context* dev;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_mr* mr;
  uint8_t* buf;
  uint32_t max_inline;
};

enum { kBufSize = 1 << 19, kWimmCount = 64 };

static void vend_open(struct vend* e, const char* device) {
  memset(e, 0, sizeof *e);
  e->dev = open_named(device);
  CHECK((e->pd = ibv_alloc_pd(e->dev)) != NULL, "ibv_alloc_pd");
  CHECK((e->cq = ibv_create_cq(e->dev, 256, NULL, NULL, 0)) != NULL, "ibv_create_cq");
  CHECK((e->buf = calloc(1, kBufSize)) != NULL, "calloc");
  e->mr = ibv_reg_mr(e->pd, e->buf, kBufSize, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  CHECK(e->mr != NULL, "ibv_reg_mr");
  struct ibv_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.send_cq = qa.recv_cq = e->cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 128;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = 200;
  CHECK((e->qp = ibv_create_qp(e->pd, &qa)) != NULL, "ibv_create_qp(RC)");
  CHECK(qa.cap.max_inline_data >= 200, "inline data granted: %u", qa.cap.max_inline_data);
  e->max_inline = qa.cap.max_inline_data;
}

/* RESET -> INIT -> RTR -> RTS toward `peer`, with verbs attributes only. */
static void vend_connect(struct vend* e, const struct vend* peer, uint32_t my_psn,
                         uint32_t peer_psn) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  CHECK(ibv_modify_qp(e->qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
        "INIT");
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = peer->qp->qp_num;
  a.rq_psn = peer_psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.sgid_index = 3;
  a.ah_attr.grh.hop_limit = 64;
  CHECK(ibv_query_gid(peer->dev, 1, 3, &a.ah_attr.grh.dgid) == 0, "ibv_query_gid");
  CHECK(ibv_modify_qp(e->qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
        "RTR");
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my_psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  CHECK(ibv_modify_qp(e->qp, &a,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0,
        "RTS");
}

static void vend_close(struct vend* e) {
  CHECK(ibv_destroy_qp(e->qp) == 0, "ibv_destroy_qp");
  CHECK(ibv_dereg_mr(e->mr) == 0, "ibv_dereg_mr");
  CHECK(ibv_destroy_cq(e->cq) == 0, "ibv_destroy_cq");
  CHECK(ibv_dealloc_pd(e->pd) == 0, "ibv_dealloc_pd");
  CHECK(ibv_close_device(e->dev) == 0, "ibv_close_device");
  free(e->buf);
}

/* The next completion of `cq` (at most 10 s of polling). */
static struct ibv_wc next_wc(struct ibv_cq* cq) {
  struct ibv_wc wc;
  const time_t until = time(NULL) + 10;
  for (;;) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    CHECK(n >= 0, "ibv_poll_cq");
    if (n == 1) return wc;
    CHECK(time(NULL) < until, "no completion within 10 s");
  }
}

/* Posts one WRITE (or WRITE with immediate) of `len` bytes from `src` to the peer's buffer at
 * `offset`; inline when `flags` says so (then `src` needs no registration). */
static void post(struct vend* from, const struct vend* to, const void* src, uint32_t len,
                 uint32_t offset, enum ibv_wr_opcode op, uint32_t imm, unsigned flags,
                 uint64_t wr_id) {
  struct ibv_sge sge = {(uint64_t)(uintptr_t)src, len, from->mr->lkey};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED | flags;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)to->buf + offset;
  wr.wr.rdma.rkey = to->mr->rkey;
  CHECK(ibv_post_send(from->qp, &wr, &bad) == 0, "ibv_post_send(len %u, op %d)", len, (int)op);
}

static void expect_send_done(struct vend* from, uint64_t wr_id) {
  const struct ibv_wc wc = next_wc(from->cq);
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == wr_id,
        "send completion: status %d opcode %d wr_id %llu (expected %llu)", (int)wc.status,
        (int)wc.opcode, (unsigned long long)wc.wr_id, (unsigned long long)wr_id);
}

/* Whether `to`'s buffer holds `len` bytes of `want` at `offset`, waiting up to 10 s for the
 * peer's progress thread to place them (an RC WRITE's completion means they were acknowledged). */
static int placed(const struct vend* to, uint32_t offset, const uint8_t* want, uint32_t len) {
  const time_t until = time(NULL) + 10;
  do {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (memcmp((const void*)(to->buf + offset), want, len) == 0) return 1;
  } while (time(NULL) < until);
  return 0;
}

/* Inline WRITEs of 1 byte to max_inline_data bytes from an unregistered buffer that is
 * overwritten as soon as each post returns: the peer must see what was posted. */
static void check_inline(struct vend* a, struct vend* b) {
  uint8_t src[256], expect[256];
  const uint32_t lens[] = {1, 7, 64, 129, a->max_inline};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; ++i) {
    const uint32_t len = lens[i], offset = (uint32_t)(i * 512);
    for (uint32_t k = 0; k < len; ++k) src[k] = expect[k] = (uint8_t)(0xA0 + i * 17 + k);
    post(a, b, src, len, offset, IBV_WR_RDMA_WRITE, 0, IBV_SEND_INLINE, 100 + i);
    memset(src, 0xEE, sizeof src); /* inline: the buffer is ours again at once */
    expect_send_done(a, 100 + i);
    CHECK(placed(b, offset, expect, len), "inline WRITE of %u bytes: the peer's bytes differ", len);
    CHECK(b->buf[offset + len] == 0, "inline WRITE of %u bytes wrote past its end", len);
  }
  /* More inline data than the QP was given: refused at the post, nothing sent. */
  struct ibv_sge sge = {(uint64_t)(uintptr_t)src, a->max_inline + 1, 0};
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)b->buf;
  wr.wr.rdma.rkey = b->mr->rkey;
  CHECK(ibv_post_send(a->qp, &wr, &bad) == EINVAL && bad == &wr, "oversized inline refused");
  struct ibv_wc wc;
  CHECK(ibv_poll_cq(a->cq, 1, &wc) == 0, "a refused post completes nothing");
}

static void post_receives(struct vend* e, int count, uint64_t first_id) {
  for (int i = 0; i < count; ++i) {
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = first_id + (uint64_t)i;
    CHECK(ibv_post_recv(e->qp, &wr, &bad) == 0, "ibv_post_recv");
  }
}

/* WRITE with immediate: each consumes one posted receive, in order, and completes there with
 * its immediate and length once its data is in place. */
static void check_write_imm(struct vend* a, struct vend* b) {
  struct ibv_wc wc;
  CHECK(ibv_poll_cq(b->cq, 1, &wc) == 0, "nothing completes on the receiver before a WRITE");
  post_receives(b, kWimmCount, 5000);
  const uint32_t base = 65536; /* message i at base + i * 4 KiB, each its own */
  for (uint32_t i = 0; i < kWimmCount; ++i) {
    const uint32_t len = 16 + i * 61, offset = base + i * 4096;
    uint8_t* src = a->buf + offset;
    for (uint32_t k = 0; k < len; ++k) src[k] = (uint8_t)(i * 31 + k + 1);
    post(a, b, src, len, offset, IBV_WR_RDMA_WRITE_WITH_IMM, 0xC0DE0000u + i, 0, 200 + i);
  }
  for (uint32_t i = 0; i < kWimmCount; ++i) expect_send_done(a, 200 + i);
  for (uint32_t i = 0; i < kWimmCount; ++i) {
    wc = next_wc(b->cq);
    const uint32_t len = 16 + i * 61, offset = base + i * 4096;
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM,
          "receive completion %u: status %d opcode %d", i, (int)wc.status, (int)wc.opcode);
    CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xC0DE0000u + i,
          "immediate %u: flags %#x, imm %#x", i, wc.wc_flags, ntohl(wc.imm_data));
    CHECK(wc.wr_id == 5000 + i && wc.byte_len == len && wc.qp_num == b->qp->qp_num,
          "receive %u: wr_id %llu byte_len %u qp_num %u", i, (unsigned long long)wc.wr_id,
          wc.byte_len, wc.qp_num);
    CHECK(memcmp(b->buf + offset, a->buf + offset, len) == 0,
          "WRITE with immediate %u: its data is not in place at its completion", i);
  }
  /* Inline and with immediate at once, from a buffer reused at once. */
  post_receives(b, 1, 9000);
  uint8_t src[64];
  for (int k = 0; k < 64; ++k) src[k] = (uint8_t)(0x55 ^ k);
  uint8_t expect[64];
  memcpy(expect, src, sizeof expect);
  post(a, b, src, 64, 60000, IBV_WR_RDMA_WRITE_WITH_IMM, 0xFEEDu, IBV_SEND_INLINE, 300);
  memset(src, 0, sizeof src);
  expect_send_done(a, 300);
  wc = next_wc(b->cq);
  CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
            ntohl(wc.imm_data) == 0xFEEDu && wc.wr_id == 9000 && wc.byte_len == 64,
        "inline WRITE with immediate: status %d opcode %d imm %#x", (int)wc.status, (int)wc.opcode,
        ntohl(wc.imm_data));
  CHECK(memcmp(b->buf + 60000, expect, 64) == 0, "inline WRITE with immediate: bytes differ");
}

int main(int argc, char** argv) {
  CHECK(argc >= 3, "usage: verbs_rc_data <device A> <device B>");
  struct vend a, b;
  vend_open(&a, argv[1]);
  vend_open(&b, argv[2]);
  vend_connect(&a, &b, 0x1000, 0x2000);
  vend_connect(&b, &a, 0x2000, 0x1000);
  check_inline(&a, &b);
  check_write_imm(&a, &b);
  vend_close(&a);
  vend_close(&b);
  printf("verbs_rc_data: inline WRITEs and WRITEs with immediate moved through verbs RC QPs\n");
  return 0;
}
