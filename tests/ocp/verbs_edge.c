/* verbs_edge: every libibverbs entry point that can reach an mrc object either works or fails
 * with an errno; none may crash (libibverbs's own code runs a NULL provider op on an mrc context)
 * or succeed with garbage. Goes through <infiniband/verbs.h>: the exported calls and the static
 * inline ones that call through the context's ops or verbs_context's slots, on mrc's context,
 * PD, MR, CQ and completion channel, and on objects of kinds mrc never creates (QP, SRQ, AH, MW,
 * XRCD, WQ, ...) given its context, as a consumer holding a QP from an asynchronous event does.
 * Verbs RC QPs (MRC QPs underneath) are created and driven; what they cannot post is refused.
 * Also what the MRC NCCL plugin asks: REMOTE_ATOMIC registrations, the DMA-BUF probe, verbs
 * CQs, mlx5dv_is_supported, and the device's QP-fatal event through ibv_get_async_event.
 *
 *   verbs_edge <device A> <device B>
 */
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>

#include "ocp_common.h"

/* Declared as a vendor's mlx5dv.h does; lib_mrc.so defines it (the program links no libmlx5). */
bool mlx5dv_is_supported(struct ibv_device* device);

/* `call` (a pointer) must be NULL with errno `err`. */
#define EXPECT_NULL(call, err)                                                                  \
  do {                                                                                          \
    errno = 0;                                                                                  \
    const void* p_ = (const void*)(call);                                                       \
    CHECK(p_ == NULL && errno == (err), "%s gave %p, errno %d; expected NULL, errno %d", #call, \
          p_, errno, (err));                                                                    \
  } while (0)
/* `call` must return the errno value `err` (the calls documented "returns 0 or errno"). */
#define EXPECT_RET(call, err)                                           \
  do {                                                                  \
    long rc_ = (long)(call);                                            \
    CHECK(rc_ == (err), "%s gave %ld; expected %d", #call, rc_, (err)); \
  } while (0)
/* `call` must fail: a non-zero result and a non-zero errno (whatever libibverbs answers for an
 * op the context does not have: EOPNOTSUPP or ENOSYS). */
#define EXPECT_FAIL(call)                                                                      \
  do {                                                                                         \
    errno = 0;                                                                                 \
    long rc_ = (long)(call);                                                                   \
    CHECK(rc_ != 0 && (errno != 0 || rc_ > 0), "%s gave %ld, errno %d: must fail", #call, rc_, \
          errno);                                                                              \
  } while (0)

static void check_device(struct ibv_context* dev) {
  struct ibv_device_attr_ex ex;
  CHECK(ibv_query_device_ex(dev, NULL, &ex) == 0 && ex.orig_attr.phys_port_cnt >= 1,
        "ibv_query_device_ex");
  struct ibv_values_ex values = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  EXPECT_FAIL(ibv_query_rt_values_ex(dev, &values));
  struct ibv_port_attr port;
  CHECK(ibv_query_port(dev, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE, "ibv_query_port");
  struct ibv_gid_entry entry, table[64];
  CHECK(ibv_query_gid_ex(dev, 1, 3, &entry, 0) == 0 && entry.gid_type == IBV_GID_TYPE_ROCE_V2,
        "ibv_query_gid_ex");
  CHECK(ibv_query_gid_table(dev, table, 64, 0) > 0, "ibv_query_gid_table");
  __be16 pkey = 0;
  CHECK(ibv_query_pkey(dev, 1, 0, &pkey) == 0, "ibv_query_pkey");
  CHECK(ibv_get_pkey_index(dev, 1, pkey) == 0, "ibv_get_pkey_index");
  CHECK(ibv_get_pkey_index(dev, 1, htobe16(0x7fff)) == -1, "an unknown P_Key has no index");
  CHECK(!mlx5dv_is_supported(dev->device), "an mrc device is no mlx5 device");
  uint8_t mac[6];
  struct ibv_ah_attr ah_attr;
  memset(&ah_attr, 0, sizeof ah_attr);
  EXPECT_FAIL(ibv_resolve_eth_l2_from_gid(dev, &ah_attr, mac, NULL));
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  EXPECT_FAIL(ibv_init_ah_from_wc(dev, 1, &wc, NULL, &ah_attr));
  EXPECT_NULL(ibv_import_pd(dev, 1), EOPNOTSUPP);
  EXPECT_NULL(ibv_import_dm(dev, 1), EOPNOTSUPP);
}

/* Objects of kinds an mrc context never creates: each create fails. (An RC QP without CQs is
 * refused as bad input; RC QPs with CQs are check_verbs_qp's.) */
static void check_creates_refused(struct ibv_context* dev, struct ibv_pd* pd) {
  struct ibv_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.qp_type = IBV_QPT_RC;
  EXPECT_NULL(ibv_create_qp(pd, &qa), EINVAL);
  struct ibv_qp_init_attr_ex qx;
  memset(&qx, 0, sizeof qx);
  qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  qx.pd = pd;
  CHECK(ibv_create_qp_ex(dev, &qx) == NULL && errno != 0, "ibv_create_qp_ex");
  struct ibv_qp_open_attr oa;
  memset(&oa, 0, sizeof oa);
  CHECK(ibv_open_qp(dev, &oa) == NULL && errno != 0, "ibv_open_qp");
  struct ibv_srq_init_attr sa;
  memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  EXPECT_NULL(ibv_create_srq(pd, &sa), EOPNOTSUPP);
  struct ibv_srq_init_attr_ex sx;
  memset(&sx, 0, sizeof sx);
  sx.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
  sx.pd = pd;
  CHECK(ibv_create_srq_ex(dev, &sx) == NULL && errno != 0, "ibv_create_srq_ex");
  struct ibv_ah_attr ah;
  memset(&ah, 0, sizeof ah);
  ah.port_num = 1;
  EXPECT_NULL(ibv_create_ah(pd, &ah), EOPNOTSUPP);
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  EXPECT_NULL(ibv_create_ah_from_wc(pd, &wc, NULL, 1), EOPNOTSUPP);
  EXPECT_NULL(ibv_alloc_mw(pd, IBV_MW_TYPE_1), EOPNOTSUPP);
  struct ibv_xrcd_init_attr xa = {.comp_mask = 0};
  CHECK(ibv_open_xrcd(dev, &xa) == NULL && errno != 0, "ibv_open_xrcd");
  struct ibv_td_init_attr ta = {.comp_mask = 0};
  CHECK(ibv_alloc_td(dev, &ta) == NULL && errno != 0, "ibv_alloc_td");
  struct ibv_parent_domain_init_attr pa;
  memset(&pa, 0, sizeof pa);
  pa.pd = pd;
  CHECK(ibv_alloc_parent_domain(dev, &pa) == NULL && errno != 0, "ibv_alloc_parent_domain");
  struct ibv_alloc_dm_attr da = {.length = 64};
  CHECK(ibv_alloc_dm(dev, &da) == NULL && errno != 0, "ibv_alloc_dm");
  struct ibv_wq_init_attr wa;
  memset(&wa, 0, sizeof wa);
  CHECK(ibv_create_wq(dev, &wa) == NULL && errno != 0, "ibv_create_wq");
  struct ibv_rwq_ind_table_init_attr ra;
  memset(&ra, 0, sizeof ra);
  CHECK(ibv_create_rwq_ind_table(dev, &ra) == NULL && errno != 0, "ibv_create_rwq_ind_table");
  struct ibv_counters_init_attr ca = {.comp_mask = 0};
  CHECK(ibv_create_counters(dev, &ca) == NULL && errno != 0, "ibv_create_counters");
  struct ibv_flow_action_esp_attr ea;
  memset(&ea, 0, sizeof ea);
  CHECK(ibv_create_flow_action_esp(dev, &ea) == NULL && errno != 0, "ibv_create_flow_action_esp");
  struct ibv_cq_init_attr_ex cx = {.cqe = 16};
  CHECK(ibv_create_cq_ex(dev, &cx) == NULL && errno != 0, "ibv_create_cq_ex");
}

/* Memory: REMOTE_ATOMIC accepted (no effect), DMA-BUF and the rest refused. */
static void check_memory(struct ibv_context* dev, struct ibv_pd* pd) {
  static char buf[8192];
  const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, rw | IBV_ACCESS_REMOTE_ATOMIC);
  CHECK(mr != NULL && mr->rkey != 0, "ibv_reg_mr with REMOTE_ATOMIC");
  struct ibv_mr* mr2 =
      ibv_reg_mr_iova2(pd, buf, 4096, (uint64_t)(uintptr_t)buf,
                       rw | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING);
  CHECK(mr2 != NULL, "ibv_reg_mr_iova2 with REMOTE_ATOMIC (as the NCCL plugin asks)");
  EXPECT_NULL(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_REMOTE_ATOMIC),
              EINVAL); /* no LOCAL_WRITE */
  EXPECT_NULL(ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND),
              EOPNOTSUPP);
  EXPECT_NULL(ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0), EOPNOTSUPP); /* the plugin's probe */
  EXPECT_NULL(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE), EOPNOTSUPP);
  errno = 0;
  CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE) != 0 &&
            errno == EOPNOTSUPP,
        "ibv_rereg_mr");
  EXPECT_NULL(ibv_alloc_null_mr(pd), EOPNOTSUPP);
  struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)buf, .length = 64, .lkey = mr->lkey};
  EXPECT_FAIL(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1));
  EXPECT_NULL(ibv_import_mr(pd, mr->handle), EOPNOTSUPP);
  ibv_unimport_mr(mr); /* nothing imported: a no-op, the MR stays */
  ibv_unimport_pd(pd);
  CHECK(ibv_dereg_mr(mr2) == 0 && ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
  (void)dev;
}

/* A verbs CQ on a completion channel: created, polled (empty), armed, resized, destroyed. */
static void check_cq(struct ibv_context* dev) {
  struct ibv_comp_channel* ch = ibv_create_comp_channel(dev);
  CHECK(ch != NULL && ch->fd >= 0 && ch->context == dev, "ibv_create_comp_channel");
  EXPECT_NULL(ibv_create_cq(dev, 0, NULL, NULL, 0), EINVAL);
  EXPECT_NULL(ibv_create_cq(dev, 16, NULL, NULL, 5), EINVAL); /* one completion vector */
  int tag = 7;
  struct ibv_cq* cq = ibv_create_cq(dev, 16, &tag, ch, 0);
  CHECK(cq != NULL && cq->context == dev && cq->cq_context == &tag && cq->cqe >= 16,
        "ibv_create_cq");
  struct ibv_cq* plain = ibv_create_cq(dev, 1, NULL, NULL, 0);
  CHECK(plain != NULL, "ibv_create_cq without a channel");
  struct ibv_wc wc[4];
  CHECK(ibv_poll_cq(cq, 4, wc) == 0, "an empty CQ polls 0");
  CHECK(ibv_poll_cq(cq, -1, wc) < 0, "a negative count is refused");
  CHECK(ibv_req_notify_cq(cq, 0) == 0 && ibv_req_notify_cq(plain, 1) == 0, "ibv_req_notify_cq");
  struct pollfd p = {.fd = ch->fd, .events = POLLIN};
  CHECK(poll(&p, 1, 0) == 0, "no event before a completion");
  CHECK(fcntl(ch->fd, F_SETFL, O_NONBLOCK) == 0, "non-blocking channel");
  struct ibv_cq* got = NULL;
  void* got_context = NULL;
  errno = 0;
  CHECK(ibv_get_cq_event(ch, &got, &got_context) == -1 && errno == EAGAIN, "no event: EAGAIN");
  ibv_ack_cq_events(cq, 0);
  EXPECT_RET(ibv_resize_cq(cq, 64), 0);
  CHECK(cq->cqe >= 64, "resized");
  EXPECT_RET(ibv_resize_cq(cq, 0), EINVAL);
  struct ibv_modify_cq_attr mc;
  memset(&mc, 0, sizeof mc);
  EXPECT_FAIL(ibv_modify_cq(cq, &mc));
  EXPECT_RET(ibv_destroy_comp_channel(ch), EBUSY);
  EXPECT_RET(ibv_close_device(dev) == 0 ? 0 : errno, EBUSY); /* CQs left */
  EXPECT_RET(ibv_destroy_cq(cq), 0);
  EXPECT_RET(ibv_destroy_cq(plain), 0);
  EXPECT_RET(ibv_destroy_comp_channel(ch), 0);
}

/* A verbs RC QP on an mrc PD (an MRC QP underneath): created with its caps granted (inline data
 * up to 256 bytes), moved to INIT, queried; what MRC does not move is refused at the post with
 * EOPNOTSUPP and *bad_wr naming it (SEND, RDMA READ, atomics); other QP types, SRQs and too much
 * inline data are refused at the create; a CQ in use and the device stay until the QP goes. */
static void check_verbs_qp(struct ibv_context* dev, struct ibv_pd* pd) {
  struct ibv_cq* cq = ibv_create_cq(dev, 64, NULL, NULL, 0);
  CHECK(cq != NULL, "ibv_create_cq");
  struct ibv_qp_init_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.send_cq = qa.recv_cq = cq;
  qa.cap.max_send_wr = 16;
  qa.cap.max_recv_wr = 16;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  qa.qp_type = IBV_QPT_UD;
  EXPECT_NULL(ibv_create_qp(pd, &qa), EOPNOTSUPP);
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_inline_data = 4096;
  EXPECT_NULL(ibv_create_qp(pd, &qa), EINVAL);
  qa.cap.max_inline_data = 220;
  struct ibv_qp* qp = ibv_create_qp(pd, &qa);
  CHECK(qp != NULL, "ibv_create_qp(RC): errno %d", errno);
  CHECK(qa.cap.max_inline_data >= 220 && qp->qp_num != 0 && qp->state == IBV_QPS_RESET,
        "the RC QP's caps and handle");
  struct ibv_qp_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  EXPECT_RET(ibv_modify_qp(qp, &attr,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
             0);
  struct ibv_qp_init_attr init;
  EXPECT_RET(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
  CHECK(attr.qp_state == IBV_QPS_INIT && init.qp_type == IBV_QPT_RC && init.send_cq == cq,
        "ibv_query_qp");
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTS;
  EXPECT_RET(ibv_modify_qp(qp, &attr, IBV_QP_STATE), EINVAL); /* INIT -> RTS skips RTR */
  static const enum ibv_wr_opcode refused[] = {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
                                               IBV_WR_ATOMIC_CMP_AND_SWP,
                                               IBV_WR_ATOMIC_FETCH_AND_ADD};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.opcode = refused[i];
    EXPECT_RET(ibv_post_send(qp, &wr, &bad), EOPNOTSUPP);
    CHECK(bad == &wr, "*bad_wr names the refused request");
  }
  EXPECT_RET(ibv_destroy_cq(cq), EBUSY);
  EXPECT_RET(ibv_close_device(dev) == 0 ? 0 : errno, EBUSY); /* a QP left */
  EXPECT_RET(ibv_destroy_qp(qp), 0);
  EXPECT_RET(ibv_destroy_cq(cq), 0);
}

/* Verbs calls on objects of kinds mrc never creates, given an mrc context (a QP such as the
 * element of an MRC QP's asynchronous event): each fails with an errno. */
static void check_foreign_kinds(struct ibv_context* dev, struct ibv_pd* pd) {
  struct ibv_qp qp;
  memset(&qp, 0, sizeof qp);
  qp.context = dev;
  qp.pd = pd;
  struct ibv_send_wr swr, *sbad = NULL;
  memset(&swr, 0, sizeof swr);
  CHECK(ibv_post_send(&qp, &swr, &sbad) != 0 && sbad == &swr, "ibv_post_send");
  struct ibv_recv_wr rwr, *rbad = NULL;
  memset(&rwr, 0, sizeof rwr);
  CHECK(ibv_post_recv(&qp, &rwr, &rbad) != 0 && rbad == &rwr, "ibv_post_recv");
  struct ibv_qp_attr qattr;
  struct ibv_qp_init_attr qinit;
  EXPECT_RET(ibv_query_qp(&qp, &qattr, IBV_QP_STATE, &qinit), EOPNOTSUPP);
  memset(&qattr, 0, sizeof qattr);
  EXPECT_RET(ibv_modify_qp(&qp, &qattr, IBV_QP_STATE), EOPNOTSUPP);
  EXPECT_RET(ibv_destroy_qp(&qp), EOPNOTSUPP);
  union ibv_gid gid;
  memset(&gid, 0, sizeof gid);
  EXPECT_RET(ibv_attach_mcast(&qp, &gid, 0), EOPNOTSUPP);
  EXPECT_RET(ibv_detach_mcast(&qp, &gid, 0), EOPNOTSUPP);
  struct ibv_ece ece;
  memset(&ece, 0, sizeof ece);
  EXPECT_RET(ibv_set_ece(&qp, &ece), EOPNOTSUPP);
  EXPECT_RET(ibv_query_ece(&qp, &ece), EOPNOTSUPP);
  EXPECT_NULL(ibv_qp_to_qp_ex(&qp), EOPNOTSUPP);
  CHECK(ibv_query_qp_data_in_order(&qp, IBV_WR_RDMA_WRITE, 0) == 0, "data out of order");
  struct ibv_flow_attr fa;
  memset(&fa, 0, sizeof fa);
  CHECK(ibv_create_flow(&qp, &fa) == NULL && errno != 0, "ibv_create_flow");
  struct ibv_qp_rate_limit_attr rl;
  memset(&rl, 0, sizeof rl);
  EXPECT_FAIL(ibv_modify_qp_rate_limit(&qp, &rl));
  struct ibv_srq srq;
  memset(&srq, 0, sizeof srq);
  srq.context = dev;
  srq.pd = pd;
  CHECK(ibv_post_srq_recv(&srq, &rwr, &rbad) != 0, "ibv_post_srq_recv");
  struct ibv_srq_attr sattr;
  memset(&sattr, 0, sizeof sattr);
  EXPECT_RET(ibv_modify_srq(&srq, &sattr, IBV_SRQ_MAX_WR), EOPNOTSUPP);
  EXPECT_RET(ibv_query_srq(&srq, &sattr), EOPNOTSUPP);
  EXPECT_RET(ibv_destroy_srq(&srq), EOPNOTSUPP);
  uint32_t srqn = 0;
  EXPECT_FAIL(ibv_get_srq_num(&srq, &srqn));
  struct ibv_ops_wr op, *op_bad = NULL;
  memset(&op, 0, sizeof op);
  EXPECT_FAIL(ibv_post_srq_ops(&srq, &op, &op_bad));
  struct ibv_ah ah = {.context = dev, .pd = pd};
  EXPECT_RET(ibv_destroy_ah(&ah), EOPNOTSUPP);
  struct ibv_mw mw = {.context = dev, .pd = pd, .type = IBV_MW_TYPE_1};
  struct ibv_mw_bind bind;
  memset(&bind, 0, sizeof bind);
  CHECK(ibv_bind_mw(&qp, &mw, &bind) != 0, "ibv_bind_mw");
  CHECK(ibv_dealloc_mw(&mw) != 0, "ibv_dealloc_mw");
  struct ibv_xrcd xrcd = {.context = dev};
  CHECK(ibv_close_xrcd(&xrcd) != 0, "ibv_close_xrcd");
}

/* The rest of the kinds whose calls go through verbs_context's slots. */
static void check_foreign_kinds_ex(struct ibv_context* dev) {
  struct ibv_td td = {.context = dev};
  EXPECT_FAIL(ibv_dealloc_td(&td));
  struct ibv_wq wq;
  memset(&wq, 0, sizeof wq);
  wq.context = dev;
  struct ibv_wq_attr wattr;
  memset(&wattr, 0, sizeof wattr);
  EXPECT_FAIL(ibv_modify_wq(&wq, &wattr));
  EXPECT_FAIL(ibv_destroy_wq(&wq));
  struct ibv_rwq_ind_table table = {.context = dev};
  EXPECT_FAIL(ibv_destroy_rwq_ind_table(&table));
  struct ibv_counters counters = {.context = dev};
  uint64_t value = 0;
  EXPECT_FAIL(ibv_read_counters(&counters, &value, 1, 0));
  EXPECT_FAIL(ibv_destroy_counters(&counters));
  struct ibv_flow flow = {.context = dev};
  struct ibv_counter_attach_attr attach;
  memset(&attach, 0, sizeof attach);
  EXPECT_FAIL(ibv_attach_counters_point_flow(&counters, &attach, &flow));
  EXPECT_FAIL(ibv_destroy_flow(&flow));
  struct ibv_flow_action action = {.context = dev};
  struct ibv_flow_action_esp_attr esp;
  memset(&esp, 0, sizeof esp);
  EXPECT_FAIL(ibv_modify_flow_action_esp(&action, &esp));
  EXPECT_FAIL(ibv_destroy_flow_action(&action));
  struct ibv_dm dm;
  memset(&dm, 0, sizeof dm);
  dm.context = dev;
  EXPECT_FAIL(ibv_free_dm(&dm));
  ibv_unimport_dm(&dm);
}

/* An MRC QP whose peer never answers fails; ibv_get_async_event on the device's verbs context
 * delivers its QP_FATAL, naming it by a verbs QP that carries its number and qp_context. */
static void check_async_event(const char* device, const char* peer_device) {
  struct end a, b;
  struct peer_info bi;
  end_open(&a, device, 1 << 16, 4, 2, 0);
  end_open(&b, peer_device, 1 << 16, 4, 2, 0);
  end_info(&b, 0x20, &bi);
  bi.qpn = 0xABCDE; /* no such QP at the peer */
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.timeout = 12; /* no timing is checked: the QP fails after its retries, however long */
  m.retry.linear_cnt = 1;
  m.retry.exp_cnt = 1;
  CHECK(end_connect(&a, 0x10, &bi, &m, 0, 0, MRC_QP_TIMEOUT | MRC_QP_RETRY_CNT) == 0, "connect");
  CHECK(post_write(a.qp, a.mr, a.buf, 64, bi.addr, bi.rkey, 0, 0, 1, 1) == 0, "post_write");
  struct ibv_wc wc = wait_wc(a.send_cq);
  CHECK(wc.status != IBV_WC_SUCCESS, "a write to a missing QP fails");
  uint32_t qpn = 0;
  CHECK(mrc_get_qpn(a.qp, &qpn) == 0, "mrc_get_qpn");
  struct ibv_async_event ev;
  do {
    CHECK(ibv_get_async_event(a.dev, &ev) == 0, "ibv_get_async_event");
    if (ev.event_type != IBV_EVENT_QP_FATAL) ibv_ack_async_event(&ev);
  } while (ev.event_type != IBV_EVENT_QP_FATAL);
  CHECK(ev.element.qp != NULL && ev.element.qp->qp_num == qpn && ev.element.qp->context == a.dev &&
            ev.element.qp->state == IBV_QPS_ERR,
        "QP_FATAL names the MRC QP");
  struct ibv_qp_attr qattr;
  struct ibv_qp_init_attr qinit;
  EXPECT_RET(ibv_query_qp(ev.element.qp, &qattr, IBV_QP_STATE, &qinit), EOPNOTSUPP);
  ibv_ack_async_event(&ev);
  struct mrc_async_event mev; /* the MRC context has the same event */
  do {
    CHECK(mrc_get_async_event(a.ctx, &mev) == 0, "mrc_get_async_event");
  } while (mev.event_type != IBV_EVENT_QP_FATAL);
  CHECK(mev.element.qp == a.qp, "the MRC event names the mrc_qp");
  end_close(&a);
  end_close(&b);
}

int main(int argc, char** argv) {
  CHECK(argc >= 3, "usage: verbs_edge <device A> <device B>");
  struct ibv_context* dev = open_named(argv[1]);
  struct ibv_pd* pd = ibv_alloc_pd(dev);
  CHECK(pd != NULL, "ibv_alloc_pd");
  check_device(dev);
  check_creates_refused(dev, pd);
  check_memory(dev, pd);
  check_cq(dev);
  check_verbs_qp(dev, pd);
  check_foreign_kinds(dev, pd);
  check_foreign_kinds_ex(dev);
  EXPECT_RET(ibv_dealloc_pd(pd), 0);
  EXPECT_RET(ibv_close_device(dev), 0);
  check_async_event(argv[1], argv[2]);
  printf("verbs_edge: every verbs call on mrc objects works or fails with an errno\n");
  return 0;
}
