/* mrc_ctl_explicit: an explicit EV profile (MRC_CTL_EV_MODE_EXP) built the way OCP's
 * examples/mrc_ctl_exp_ev.md does it, and its effect on a live QP.
 *   - INIT -> OFFLINE creates ev_count unpopulated entries; ONLINE is refused until every entry
 *     is replaced; REPLACE_EV refuses EVs the device cannot send (EINVAL) and EVs not in the
 *     array (ENOENT), and is refused once the profile is ONLINE (EBUSY);
 *   - a QP of the profile moves data, and its engine holds exactly the listed EVs: a listed EV
 *     reads GOOD, a device EV that is not listed is unknown to the QP (ENOENT);
 *   - denying every listed EV of plane 1 leaves traffic on planes 2 and 3, and the EV array
 *     (copies included) reads the denied ones as DENIED;
 *   - generated EVs (MRC_CTL_EV_MODE_GEN) are refused with EOPNOTSUPP;
 *   - EV probes need no QP: before any QP exists, probes on EVs of planes 1 and 3 are
 *     answered by device B's endpoint, with the port and an RTT.
 * mrc EVs are UDP source ports: value = port in the first two bytes (big-endian), port = plane;
 * plane p (1-based) owns ports [base + (p-1)*n, base + p*n), n = 256/planes + 16.
 *
 *   mrc_ctl_explicit <device A> <device B> <A's ev-ports base>   (A with 3 planes)
 */
#include <arpa/inet.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static uint32_t g_base, g_per_plane;

static struct mrc_ctl_ev make_ev(uint8_t plane, uint32_t index) {
  struct mrc_ctl_ev ev;
  const uint32_t port = g_base + (plane - 1u) * g_per_plane + index;
  memset(&ev, 0, sizeof ev);
  ev.val[0] = (uint8_t)(port >> 8);
  ev.val[1] = (uint8_t)port;
  ev.port = plane;
  return ev;
}

static int ev_op(struct mrc_context *ctx, enum mrc_ctl_ev_op op, struct mrc_ctl_ev_op_entry *e, int n, int query) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.ev_op.op = op;
  a.ev_op.entries = e;
  a.ev_op.entry_count = n;
  return query ? mrc_ctl_query_ev_profile(ctx, 9, &a, MRC_CTL_EV_PROFILE_EV_OP)
               : mrc_ctl_modify_ev_profile(ctx, 9, &a, MRC_CTL_EV_PROFILE_EV_OP);
}

static int replace(struct mrc_context *ctx, struct mrc_ctl_ev from, struct mrc_ctl_ev to) {
  struct mrc_ctl_ev_op_entry e = {.ev = from, .ev_new = to, .state = MRC_CTL_EV_GOOD};
  return ev_op(ctx, MRC_CTL_EV_OP_REPLACE_EV, &e, 1, 0);
}

static int set_state(struct mrc_context *ctx, enum mrc_ctl_profile_state state) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = state;
  return mrc_ctl_modify_ev_profile(ctx, 9, &a, MRC_CTL_EV_PROFILE_STATE);
}

static enum mrc_ctl_ev_state state_of(struct mrc_context *ctx, struct mrc_ctl_ev ev) {
  struct mrc_ctl_ev_op_entry e = {.ev = ev};
  CHECK(ev_op(ctx, MRC_CTL_EV_OP_QUERY_EV_STATE, &e, 1, 1) == 0, "QUERY_EV_STATE");
  return e.state;
}

/* The list: two EVs on plane 1, one on plane 2, one on plane 3 listed twice. */
static void build_profile(struct mrc_context *ctx) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = MRC_CTL_EV_MODE_GEN;
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(ctx, 9, &a, MRC_CTL_EV_PROFILE_MODE), EOPNOTSUPP);
  a.ev_mode = MRC_CTL_EV_MODE_EXP;
  a.ev_fmt_profile_id = 77; /* no such format profile */
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(ctx, 9, &a, MRC_CTL_EV_PROFILE_FMT_ID), EINVAL);
  a.ev_fmt_profile_id = 0; /* the device's own UDP source-port format */
  a.ev_count = 5;
  a.ev_min_active = 2;
  a.ev_event_mask = MRC_CTL_EV_GOOD | MRC_CTL_EV_ASSUMED_BAD;
  CHECK(mrc_ctl_modify_ev_profile(ctx, 9, &a,
                                  MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID |
                                      MRC_CTL_EV_PROFILE_COUNT | MRC_CTL_EV_PROFILE_MIN_ACTIVE |
                                      MRC_CTL_EV_PROFILE_EVENT_MASK) == 0,
        "explicit EV profile -> OFFLINE");
  struct mrc_ctl_ev_op_entry array[8];
  memset(array, 0xff, sizeof array);
  CHECK(ev_op(ctx, MRC_CTL_EV_OP_QUERY_EV_ARRAY, array, 8, 1) == 0, "QUERY_EV_ARRAY");
  const struct mrc_ctl_ev unpopulated = MRC_CTL_EV_UNPOPULATED;
  for (int i = 0; i < 5; i++) CHECK(memcmp(&array[i].ev, &unpopulated, sizeof unpopulated) == 0, "entry %d unpopulated", i);
  EXPECT_ERRNO(set_state(ctx, MRC_CTL_PROFILE_ONLINE), EINVAL); /* entries still unpopulated */
  struct mrc_ctl_ev wrong_plane = make_ev(1, 0);
  wrong_plane.port = 2; /* plane 1's port number on plane 2 */
  EXPECT_ERRNO(replace(ctx, unpopulated, wrong_plane), EINVAL);
  EXPECT_ERRNO(replace(ctx, make_ev(1, 7), make_ev(1, 0)), ENOENT); /* not in the array */
  CHECK(replace(ctx, unpopulated, make_ev(1, 0)) == 0 && replace(ctx, unpopulated, make_ev(1, 1)) == 0 &&
            replace(ctx, unpopulated, make_ev(2, 3)) == 0 && replace(ctx, unpopulated, make_ev(3, 5)) == 0 &&
            replace(ctx, unpopulated, make_ev(3, 5)) == 0,
        "REPLACE_EV x5");
  CHECK(set_state(ctx, MRC_CTL_PROFILE_ONLINE) == 0, "explicit EV profile -> ONLINE");
  EXPECT_ERRNO(replace(ctx, make_ev(1, 0), make_ev(1, 2)), EBUSY); /* no MODIFY_ONLINE capability */
}

static void traffic(struct end *a, struct end *b, const struct peer_info *bi, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) {
    memset(a->buf, (int)(i + 1), 8192);
    CHECK(post_write(a->qp, a->mr, a->buf, 8192, bi->addr, bi->rkey, 1, htonl(i), 1, i) == 0, "post");
    struct ibv_wc wc = wait_wc(b->recv_cq);
    CHECK(wc.status == IBV_WC_SUCCESS && ntohl(wc.imm_data) == i, "receive %u", i);
    CHECK(b->buf[8191] == (uint8_t)(i + 1), "data of message %u in place", i);
    CHECK(post_recvs(b->qp, 1) == 0, "post_recv");
    wc = wait_wc(a->send_cq);
    CHECK(wc.status == IBV_WC_SUCCESS, "send completion: %s", ibv_wc_status_str(wc.status));
  }
}

static void check_engine(struct end *a, struct end *b, const struct peer_info *bi) {
  traffic(a, b, bi, 30);
  CHECK(state_of(a->ctx, make_ev(2, 3)) == MRC_CTL_EV_GOOD, "listed EV reads GOOD in the QP");
  struct mrc_ctl_ev_op_entry e = {.ev = make_ev(1, 2)}; /* a device EV the list does not name */
  EXPECT_ERRNO(ev_op(a->ctx, MRC_CTL_EV_OP_QUERY_EV_STATE, &e, 1, 1), ENOENT);
  struct mrc_ctl_ev_op_entry deny[2] = {{.ev = make_ev(1, 0), .state = MRC_CTL_EV_DENIED},
                                        {.ev = make_ev(1, 1), .state = MRC_CTL_EV_DENIED}};
  CHECK(ev_op(a->ctx, MRC_CTL_EV_OP_MODIFY_EV_STATE, deny, 2, 0) == 0, "deny plane 1's EVs");
  traffic(a, b, bi, 30);
  struct mrc_ctl_ev_op_entry array[8];
  CHECK(ev_op(a->ctx, MRC_CTL_EV_OP_QUERY_EV_ARRAY, array, 8, 1) == 0, "QUERY_EV_ARRAY");
  CHECK(array[0].state == MRC_CTL_EV_DENIED && array[1].state == MRC_CTL_EV_DENIED &&
            array[2].state == MRC_CTL_EV_GOOD && array[3].state == MRC_CTL_EV_GOOD &&
            memcmp(&array[3].ev, &array[4].ev, sizeof array[3].ev) == 0,
        "EV array: plane 1 denied, the copy listed twice");
}

/* Connectionless EV probes from A to B's addresses, on EVs no QP uses (there is no QP yet). */
static void check_probes_without_qp(struct end *a, struct end *b) {
  struct mrc_ctl_ep_req req[2];
  struct mrc_ctl_ep_rsp rsp[2];
  memset(req, 0, sizeof req);
  for (int i = 0; i < 2; i++) {
    req[i].req_id = (uint16_t)(21 + i);
    req[i].ev_fmt_mode = MRC_CTL_EV_FMT_MODE_UDP;
    req[i].req_ev = make_ev(i == 0 ? 1 : 3, 50u + (uint32_t)i);
    CHECK(ibv_query_gid(b->dev, req[i].req_ev.port, 3, &req[i].dgid) == 0, "B's GID on port %u", req[i].req_ev.port);
  }
  int got = -1;
  CHECK(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, req, 2, 2000000000u, rsp, &got) == 0 && got == 2,
        "two connectionless probes answered (got %d)", got);
  for (int i = 0; i < 2; i++) {
    const uint8_t want = rsp[i].req_id == 21 ? 1 : 3;
    CHECK((rsp[i].req_id == 21 || rsp[i].req_id == 22) && rsp[i].port == want && rsp[i].rtt > 0,
          "answer %u on port %u, rtt %u ns", rsp[i].req_id, rsp[i].port, rsp[i].rtt);
  }
  printf("connectionless EV probes: rtt %u ns and %u ns\n", rsp[0].rtt, rsp[1].rtt);
}

int main(int argc, char **argv) {
  CHECK(argc >= 4, "usage: mrc_ctl_explicit <device A> <device B> <A's ev-ports base>");
  g_base = (uint32_t)atoi(argv[3]);
  g_per_plane = 256 / 3 + 16;
  struct end a, b;
  struct peer_info ai, bi;
  end_open(&a, argv[1], 1 << 16, 64, 8, 0);
  end_open(&b, argv[2], 1 << 16, 64, 64, 0);
  struct mrc_ctl_device_attr d;
  CHECK(mrc_ctl_query_device(a.dev, &d) == 0 && (d.ev.ev_mode_mask & MRC_CTL_EV_MODE_EXP), "EXP EV mode offered");
  end_info(&a, 0x30, &ai);
  end_info(&b, 0x40, &bi);
  check_probes_without_qp(&a, &b);
  build_profile(a.ctx);
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.profile.ev_profile_id = 9;
  CHECK(end_connect(&a, 0x30, &bi, &m, MRC_QP_EV_PROFILE_ID, 0, 0) == 0, "connect A with the explicit profile");
  CHECK(end_connect(&b, 0x40, &ai, NULL, 0, 0, 0) == 0, "connect B");
  CHECK(post_recvs(b.qp, 64) == 0, "post_recv");
  check_engine(&a, &b, &bi);
  EXPECT_ERRNO(set_state(a.ctx, MRC_CTL_PROFILE_OFFLINE), EBUSY); /* a QP uses it */
  end_close(&a);
  end_close(&b);
  printf("mrc_ctl_explicit: the explicit EV list is what the QP's engine uses\n");
  return 0;
}
