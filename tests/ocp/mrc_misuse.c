/* mrc_misuse: the OCP MRC API answers misuse with the documented errno values and keeps
 * working: bad arguments, wrong state transitions, unsupported opcodes and attributes,
 * posting past queue limits, destroying objects in use. Also checks version and device
 * queries, completion channels (notify, event, ack) and the asynchronous event of a QP whose
 * peer never answers (retries exhausted -> IBV_WC_RETRY_EXC_ERR and IBV_EVENT_QP_FATAL), and of
 * a WRITE with a wrong rkey (the peer NAKs it: IBV_WC_REM_ACCESS_ERR once the retries run out).
 *
 *   mrc_misuse <device A> <device B>
 */
#include <poll.h>

#include "ocp_common.h"

#define EXPECT_ERR(call, err)                                                                 \
  do {                                                                                        \
    errno = 0;                                                                                \
    long rc_ = (long)(call);                                                                  \
    CHECK(rc_ != 0 && errno == (err), "%s gave %ld, errno %d; expected errno %d", #call, rc_, \
          errno, (err));                                                                      \
  } while (0)
#define EXPECT_NULL(call, err)                                                                \
  do {                                                                                        \
    errno = 0;                                                                                \
    CHECK((call) == NULL && errno == (err), "%s: expected NULL with errno %d", #call, (err)); \
  } while (0)

static void check_queries(struct end *a) {
  uint32_t cur = 0, last = 1, vendor = 0, last_vendor = 1;
  mrc_query_version(&cur, &last, &vendor, &last_vendor);
  CHECK(cur == MRC_API_VER(1, 0, 1) && last == 0 && vendor == MRC_API_VER(1, 0, 0), "mrc_query_version");
  mrc_query_version(NULL, NULL, NULL, NULL);
  struct mrc_device_attr attr;
  int supported = 0;
  CHECK(mrc_query_device_ex(a->dev, a->ctx, &attr, &supported) == 0 && supported, "mrc_query_device_ex");
  CHECK(attr.mrc_protocol_version & MRC_PROTOCOL_VERSION_1, "protocol version bit");
  EXPECT_ERR(mrc_query_device(a->dev, NULL, &supported), EINVAL);
  struct ibv_port_attr port;
  CHECK(ibv_query_port(a->dev, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE, "ibv_query_port");
  CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET, "RoCE link layer");
  CHECK(ibv_query_port(a->dev, 99, &port) != 0, "ibv_query_port on a port that does not exist");
  union ibv_gid gid;
  CHECK(ibv_query_gid(a->dev, 1, 3, &gid) == 0 && gid.raw[10] == 0xff && gid.raw[11] == 0xff, "IPv4 GID");
  EXPECT_ERR(ibv_query_gid(a->dev, 1, 9, &gid), EINVAL);
  struct ibv_device_attr dattr;
  CHECK(ibv_query_device(a->dev, &dattr) == 0 && dattr.phys_port_cnt >= 1, "ibv_query_device");
}

static void check_bad_arguments(struct end *a) {
  EXPECT_NULL(mrc_create_context(NULL, NULL), EINVAL);
  EXPECT_NULL(mrc_create_cq(a->ctx, 0, NULL, NULL, 0), EINVAL);
  EXPECT_NULL(mrc_create_cq(NULL, 16, NULL, NULL, 0), EINVAL);
  struct mrc_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  EXPECT_NULL(mrc_create_qp(a->ctx, &qa), EINVAL); /* no CQs, no PD */
  qa.send_cq = a->send_cq;
  qa.recv_cq = a->recv_cq;
  qa.pd = a->pd;
  qa.cap.max_send_wr = 4;
  qa.cap.max_send_sge = 64; /* more than the device's max_sge */
  EXPECT_NULL(mrc_create_qp(a->ctx, &qa), EINVAL);
  EXPECT_ERR(mrc_destroy_qp(NULL), EINVAL);
  EXPECT_ERR(mrc_poll_cq(NULL, 1, NULL), EINVAL);
  uint32_t qpn;
  EXPECT_ERR(mrc_get_qpn(a->qp, NULL), EINVAL);
  CHECK(mrc_get_qpn(a->qp, &qpn) == 0 && qpn != 0, "mrc_get_qpn");
  EXPECT_NULL(ibv_create_cq(a->dev, 0, NULL, NULL, 0), EINVAL); /* a verbs CQ needs an entry */
}

static void check_transitions(struct end *a, const struct peer_info *peer) {
  struct ibv_qp_attr v;
  struct mrc_qp_attr m;
  memset(&v, 0, sizeof v);
  memset(&m, 0, sizeof m);
  v.qp_state = IBV_QPS_RTS; /* RESET -> RTS skips states */
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE | IBV_QP_SQ_PSN, &m, 0), EINVAL);
  v.qp_state = IBV_QPS_INIT;
  v.cur_qp_state = IBV_QPS_RTR; /* wrong current state asserted */
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE | IBV_QP_CUR_STATE, &m, 0), EINVAL);
  m.cap = MRC_QP_CAP_DYNAMIC_MPR; /* not advertised by the device */
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE, &m, MRC_QP_CAP), EOPNOTSUPP);
  m.cap = 0;
  m.retry.linear_cnt = 8; /* at most 7 */
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE, &m, MRC_QP_RETRY_CNT), EINVAL);
  m.retry.linear_cnt = 7;
  m.profile.ev_profile_id = 12345; /* no such EV profile */
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE, &m, MRC_QP_EV_PROFILE_ID), EINVAL);
  CHECK(mrc_modify_qp(a->qp, &v, IBV_QP_STATE, &m, 0) == 0, "RESET -> INIT");
  v.qp_state = IBV_QPS_RTR; /* RTR without the peer's address */
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE, &m, 0), EINVAL);
  v.ah_attr.is_global = 1; /* a destination that is no configured device or peer */
  v.ah_attr.grh.dgid = peer->gid;
  v.ah_attr.grh.dgid.raw[15] ^= 0x80;
  v.dest_qp_num = peer->qpn;
  EXPECT_ERR(mrc_modify_qp(a->qp, &v, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, &m, 0), EINVAL);
  struct ibv_send_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.opcode = IBV_WR_RDMA_WRITE;
  CHECK(mrc_post_send(a->qp, &wr, &bad) == EINVAL && bad == &wr, "post_send in INIT must fail with EINVAL");
  struct ibv_qp_attr q;
  struct mrc_qp_attr mq;
  CHECK(mrc_query_qp(a->qp, &q, IBV_QP_STATE, &mq, MRC_QP_RETRY_CNT, NULL) == 0 && q.qp_state == IBV_QPS_INIT,
        "query INIT");
  v.qp_state = IBV_QPS_RESET;
  CHECK(mrc_modify_qp(a->qp, &v, IBV_QP_STATE, &m, 0) == 0, "INIT -> RESET");
}

static void check_posting(struct end *a) {
  struct ibv_send_wr wr, *bad = NULL;
  struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)a->buf, .length = 64, .lkey = a->mr->lkey};
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = 0x1000;
  wr.wr.rdma.rkey = 1;
  const enum ibv_wr_opcode refused[] = {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
                                        IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    wr.opcode = refused[i];
    CHECK(mrc_post_send(a->qp, &wr, &bad) == EINVAL && bad == &wr && errno == EINVAL, "opcode %d must be refused",
          (int)refused[i]);
  }
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_INLINE;
  CHECK(mrc_post_send(a->qp, &wr, &bad) == EINVAL, "inline data must be refused");
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.num_sge = 2; /* max_send_sge is 1 */
  CHECK(mrc_post_send(a->qp, &wr, &bad) == EINVAL, "too many SGEs must be refused");
  wr.num_sge = 1;
  /* The peer QP number does not exist, so nothing is acknowledged: the send queue (4 deep)
   * fills and the fifth post fails with ENOMEM. */
  int posted = 0, rc = 0;
  for (; posted < 5 && (rc = mrc_post_send(a->qp, &wr, &bad)) == 0; posted++) {
  }
  CHECK(posted == 4 && rc == ENOMEM, "posted %d, then %d; expected 4 then ENOMEM", posted, rc);
  struct ibv_recv_wr rw, *rbad = NULL;
  memset(&rw, 0, sizeof rw);
  for (posted = 0; posted < 3 && mrc_post_recv(a->qp, &rw, &rbad) == 0; posted++) {
  }
  CHECK(posted == 2 && errno == ENOMEM && rbad == &rw, "receive queue (2 deep) must refuse the third with ENOMEM");
}

/* The unanswered sends give up after their retries: error completions and an async event. */
static void check_failure_events(struct end *a) {
  struct ibv_wc wc = wait_wc(a->send_cq);
  CHECK(wc.status != IBV_WC_SUCCESS, "a send to a missing QP must not succeed");
  struct mrc_async_event ev;
  CHECK(mrc_get_async_event(a->ctx, &ev) == 0, "mrc_get_async_event");
  while (ev.event_type != IBV_EVENT_QP_FATAL) {
    mrc_ack_async_event(&ev);
    CHECK(mrc_get_async_event(a->ctx, &ev) == 0, "mrc_get_async_event");
  }
  CHECK(ev.element.qp == a->qp, "the event names the failed QP");
  mrc_ack_async_event(&ev);
  struct ibv_qp_attr q;
  struct mrc_qp_attr mq;
  CHECK(mrc_query_qp(a->qp, &q, IBV_QP_STATE, &mq, 0, NULL) == 0 && q.qp_state == IBV_QPS_ERR, "QP in ERROR");
  int flushed = 1;
  while (mrc_poll_cq(a->send_cq, 1, &wc) == 1) flushed++;
  CHECK(flushed == 4, "all 4 sends completed in error (%d)", flushed);
}

static void check_in_use(struct end *a) {
  EXPECT_ERR(mrc_destroy_cq(a->send_cq), EBUSY);
  CHECK(ibv_dealloc_pd(a->pd) == EBUSY, "dealloc_pd with a registered MR must give EBUSY");
  EXPECT_ERR(mrc_destroy_context(a->ctx), EBUSY);
  EXPECT_ERR(ibv_close_device(a->dev), EBUSY);
  struct mrc_qp_hint_init_attr hi;
  memset(&hi, 0, sizeof hi);
  hi.attr.num_qps_per_peer = 2;
  struct mrc_qp_hint *hint = mrc_create_qp_hint(a->ctx, &hi);
  CHECK(hint != NULL, "mrc_create_qp_hint");
  struct mrc_qp_hint_attr ha;
  CHECK(mrc_query_qp_hint(hint, &ha, MRC_QP_HINT_NUM_QPS_PER_PEER) == 0 && ha.num_qps_per_peer == 2, "query hint");
  CHECK(mrc_destroy_qp_hint(hint) == 0, "mrc_destroy_qp_hint");
}

/* A CQ armed with mrc_req_notify_cq() wakes its channel on the next completion. */
static void check_channel(struct end *a, struct end *b, const struct peer_info *bi, const struct peer_info *ai) {
  struct mrc_comp_channel *ch = NULL;
  CHECK(mrc_create_comp_channel(b->ctx, &ch) == 0, "mrc_create_comp_channel");
  int fd = -1;
  CHECK(mrc_get_comp_channel_fd(ch, &fd) == 0 && fd >= 0, "mrc_get_comp_channel_fd");
  struct mrc_cq *cq = mrc_create_cq(b->ctx, 64, (void *)b, ch, 0);
  CHECK(cq != NULL, "CQ on a channel");
  EXPECT_ERR(mrc_destroy_comp_channel(ch), EBUSY);
  CHECK(mrc_req_notify_cq(cq, 0) == 0, "mrc_req_notify_cq");
  (void)a;
  (void)bi;
  (void)ai;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  CHECK(poll(&p, 1, 0) == 0, "no event before a completion");
  CHECK(mrc_destroy_cq(cq) == 0, "destroy an idle channel CQ");
  CHECK(mrc_destroy_comp_channel(ch) == 0, "mrc_destroy_comp_channel");
}

/* A WRITE to a connected peer with a wrong rkey: the peer refuses every copy, and the QP fails
 * with IBV_WC_REM_ACCESS_ERR for it (the WRITE behind it flushed) and IBV_EVENT_QP_FATAL. */
static void check_remote_access_error(const char *dev_a, const char *dev_b) {
  struct end c, d;
  struct peer_info ci, di;
  end_open(&c, dev_a, 1 << 16, 4, 2, 0);
  end_open(&d, dev_b, 1 << 16, 4, 2, 0);
  end_info(&c, 0x50, &ci);
  end_info(&d, 0x60, &di);
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.timeout = 16; /* 67 ms per timeout; no timing is checked */
  m.retry.linear_cnt = 2;
  m.retry.exp_cnt = 1;
  CHECK(end_connect(&c, 0x50, &di, &m, 0, 0, MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT) == 0, "connect C");
  CHECK(end_connect(&d, 0x60, &ci, NULL, 0, 0, 0) == 0, "connect D");
  CHECK(post_write(c.qp, c.mr, c.buf, 4096, di.addr, di.rkey + 1, 0, 0, 1, 1) == 0, "post with a wrong rkey");
  CHECK(post_write(c.qp, c.mr, c.buf, 4096, di.addr, di.rkey, 0, 0, 1, 2) == 0, "post a good one behind it");
  struct ibv_wc wc = wait_wc(c.send_cq);
  CHECK(wc.wr_id == 1 && wc.status == IBV_WC_REM_ACCESS_ERR, "wrong rkey: wr %llu status %s",
        (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
  wc = wait_wc(c.send_cq);
  CHECK(wc.wr_id == 2 && wc.status == IBV_WC_WR_FLUSH_ERR, "the WRITE behind it is flushed");
  struct mrc_async_event ev;
  do {
    CHECK(mrc_get_async_event(c.ctx, &ev) == 0, "mrc_get_async_event");
    mrc_ack_async_event(&ev);
  } while (ev.event_type != IBV_EVENT_QP_FATAL);
  CHECK(ev.element.qp == c.qp, "QP_FATAL names the QP");
  end_close(&c);
  end_close(&d);
}

int main(int argc, char **argv) {
  CHECK(argc >= 3, "usage: mrc_misuse <device A> <device B>");
  struct end a, b;
  struct peer_info ai, bi;
  end_open(&a, argv[1], 1 << 16, 4, 2, 0);
  end_open(&b, argv[2], 1 << 16, 4, 2, 0);
  end_info(&a, 0x10, &ai);
  end_info(&b, 0x20, &bi);
  check_queries(&a);
  check_bad_arguments(&a);
  check_transitions(&a, &bi);
  check_channel(&a, &b, &bi, &ai);
  struct peer_info missing = bi;
  missing.qpn = 0xABCDE; /* no such QP at the peer */
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  /* 1.024 us << 18 = 268 ms per timeout, ~1 s with the two retries before the QP gives up:
   * check_posting must see it alive (262 us timeouts ran out first under a loaded ctest -j2). */
  m.timeout = 18;
  m.retry.linear_cnt = 1;
  m.retry.exp_cnt = 1;
  CHECK(end_connect(&a, 0x10, &missing, &m, 0, 0, MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT) == 0, "connect A");
  check_posting(&a);
  check_failure_events(&a);
  check_in_use(&a);
  end_close(&a);
  end_close(&b);
  check_remote_access_error(argv[1], argv[2]);
  printf("mrc_misuse: every misuse refused with its documented errno\n");
  return 0;
}
