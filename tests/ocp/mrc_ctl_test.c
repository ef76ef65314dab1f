/* mrc_ctl_test: the OCP MRC controller API (mrc_ctl.h) with effect on live QPs.
 *   - versions and controller device attributes (algorithms, ports, EV modes);
 *   - a CC profile (uet-1.0-nscc) and an EV profile taken ONLINE and given to a QP, which then
 *     reports them; an ONLINE profile in use cannot go OFFLINE (EBUSY);
 *   - CC profile 0 is the default: ONLINE, uet-1.0-nscc with its parameters, fixed (EBUSY), and
 *     accepted by a QP (MRC_QP_CC_PROFILE_ID = 0) that then moves data;
 *   - port 2 set administratively down: ibv_query_port reads DOWN, an IBV_EVENT_PORT_ERR
 *     arrives, traffic continues over the other planes; up again reads ACTIVE;
 *   - an EV denied and allowed again, as seen by QUERY_EV_STATE, with traffic flowing;
 *   - an EV event CQ can be created, polled and destroyed; an unknown EV mode is EINVAL;
 *   - what mrc_ctl.h forbids is refused (EINVAL) and creates nothing: an EV or EV format
 *     profile moving OFFLINE without its MODE, a format profile moving ONLINE without fields,
 *     denying an EV on a profile never created (or still INIT), denying an EV value that is not
 *     one of the device's UDP source ports.
 *
 *   mrc_ctl_test <device A> <device B> <A's ev-ports base>     (A with 3 planes, B with 2 or more)
 */
#include <arpa/inet.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static void setup_profiles(struct end *a) {
  struct mrc_ctl_cc_profile_attr cc;
  struct mrc_ctl_cc_nscc_cfg nscc;
  memset(&cc, 0, sizeof cc);
  memset(&nscc, 0, sizeof nscc);
  nscc.max_cwnd = 512 * 1024;
  nscc.eta = 0.2f;
  cc.profile_state = MRC_CTL_PROFILE_OFFLINE;
  cc.algorithm = "uet-1.0-nscc";
  CHECK(mrc_ctl_modify_cc_profile(a->ctx, 7, &cc, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_ALGORITHM) == 0,
        "CC profile -> OFFLINE");
  cc.profile_state = MRC_CTL_PROFILE_ONLINE;
  EXPECT_ERRNO(mrc_ctl_modify_cc_profile(a->ctx, 7, &cc, MRC_CTL_CC_PROFILE_STATE), EINVAL); /* no config yet */
  cc.cc_config = &nscc;
  CHECK(mrc_ctl_modify_cc_profile(a->ctx, 7, &cc, MRC_CTL_CC_PROFILE_STATE | MRC_CTL_CC_PROFILE_CONFIG) == 0,
        "CC profile -> ONLINE");
  cc.algorithm = "cubic";
  EXPECT_ERRNO(mrc_ctl_modify_cc_profile(a->ctx, 8, &cc, MRC_CTL_CC_PROFILE_ALGORITHM), EINVAL);

  struct mrc_ctl_ev_profile_attr ev;
  memset(&ev, 0, sizeof ev);
  ev.profile_state = MRC_CTL_PROFILE_OFFLINE;
  ev.ev_mode = (enum mrc_ctl_ev_mode)(1 << 5); /* no such mode; EXP and GEN: mrc_ctl_explicit.c */
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(a->ctx, 5, &ev, MRC_CTL_EV_PROFILE_MODE), EINVAL);
  ev.ev_mode = MRC_CTL_EV_MODE_AUTO;
  ev.ev_count = 64;
  ev.ev_min_active = 8;
  ev.ev_event_mask = MRC_CTL_EV_ASSUMED_BAD | MRC_CTL_EV_GOOD;
  CHECK(mrc_ctl_modify_ev_profile(a->ctx, 5, &ev,
                                  MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_COUNT |
                                      MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EVENT_MASK) == 0,
        "EV profile -> OFFLINE");
  ev.profile_state = MRC_CTL_PROFILE_ONLINE;
  CHECK(mrc_ctl_modify_ev_profile(a->ctx, 5, &ev, MRC_CTL_EV_PROFILE_STATE) == 0, "EV profile -> ONLINE");
  struct mrc_ctl_ev_profile_attr q;
  memset(&q, 0, sizeof q);
  CHECK(mrc_ctl_query_ev_profile(a->ctx, 5, &q, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_COUNT) == 0 &&
            q.cur_profile_state == MRC_CTL_PROFILE_ONLINE && q.ev_count <= 64 && q.ev_count >= 62,
        "query EV profile (count aligned to the planes: %u)", q.ev_count);
}

/* MODIFY_EV_STATE of one EV, given as a UDP source port (val[0..1]), a port and a third value byte. */
static int set_ev(struct mrc_context *ctx, uint64_t profile, uint32_t value, uint8_t port, uint8_t extra_byte,
                  enum mrc_ctl_ev_state state) {
  struct mrc_ctl_ev_op_entry e;
  struct mrc_ctl_ev_profile_attr m;
  memset(&e, 0, sizeof e);
  memset(&m, 0, sizeof m);
  e.ev.val[0] = (uint8_t)(value >> 8);
  e.ev.val[1] = (uint8_t)value;
  e.ev.val[2] = extra_byte;
  e.ev.port = port;
  e.state = state;
  m.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
  m.ev_op.entries = &e;
  m.ev_op.entry_count = 1;
  return mrc_ctl_modify_ev_profile(ctx, profile, &m, MRC_CTL_EV_PROFILE_EV_OP);
}

static int deny(struct mrc_context *ctx, uint64_t profile, uint32_t value, uint8_t port, uint8_t extra_byte) {
  return set_ev(ctx, profile, value, port, extra_byte, MRC_CTL_EV_DENIED);
}

/* EV profiles: the move OFFLINE needs MODE; EVs are denied only in a configured profile and only
 * if the device can send them. `ev_base`: the device's first EV source port (plane 1's). */
static void check_ev_profile_refusals(struct mrc_context *ctx, uint32_t ev_base) {
  struct mrc_ctl_ev_profile_attr ev, q;
  memset(&ev, 0, sizeof ev);
  ev.profile_state = MRC_CTL_PROFILE_OFFLINE;
  ev.ev_count = 6;
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(ctx, 79, &ev, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_COUNT), EINVAL);
  memset(&q, 0, sizeof q);
  EXPECT_ERRNO(mrc_ctl_query_ev_profile(ctx, 79, &q, 0), EINVAL); /* the refused call created nothing */
  EXPECT_ERRNO(deny(ctx, 77, ev_base, 1, 0), EINVAL);                /* a profile never created */
  EXPECT_ERRNO(mrc_ctl_query_ev_profile(ctx, 77, &q, 0), EINVAL);
  ev.ev_event_mask = MRC_CTL_EV_ASSUMED_BAD;
  CHECK(mrc_ctl_modify_ev_profile(ctx, 78, &ev, MRC_CTL_EV_PROFILE_EVENT_MASK) == 0, "profile 78 created, INIT");
  EXPECT_ERRNO(deny(ctx, 78, ev_base, 1, 0), EINVAL); /* INIT: not configured */
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(ctx, 78, &ev, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_COUNT), EINVAL);
  ev.ev_mode = MRC_CTL_EV_MODE_AUTO;
  CHECK(mrc_ctl_modify_ev_profile(ctx, 78, &ev,
                                  MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_COUNT) == 0,
        "INIT -> OFFLINE with MODE");
  CHECK(deny(ctx, 78, ev_base, 1, 0) == 0, "deny in an OFFLINE profile");
  /* EV values that are no EV source port of this device (profile 0, ONLINE). */
  EXPECT_ERRNO(deny(ctx, 0, 0, 1, 0), EINVAL);                 /* port 0 is no UDP port */
  EXPECT_ERRNO(deny(ctx, 0, ev_base, 1, 0x01), EINVAL);        /* more than 16 bits */
  EXPECT_ERRNO(deny(ctx, 0, ev_base, 0, 0), EINVAL);           /* no port (plane) 0 */
  EXPECT_ERRNO(deny(ctx, 0, ev_base, 9, 0), EINVAL);           /* no port 9 */
  EXPECT_ERRNO(deny(ctx, 0, ev_base - 1, 1, 0), EINVAL);       /* below the device's EV ports */
  EXPECT_ERRNO(deny(ctx, 0, ev_base + 101, 1, 0), EINVAL);     /* plane 2's port named on port 1 */
  CHECK(deny(ctx, 0, ev_base + 101, 2, 0) == 0, "deny plane 2's first EV on port 2");
  CHECK(set_ev(ctx, 0, ev_base + 101, 2, 0, MRC_CTL_EV_GOOD) == 0, "allow it again");
  EXPECT_ERRNO(set_ev(ctx, 0, 0, 1, 0, MRC_CTL_EV_GOOD), EINVAL); /* allowing is checked the same way */
}

/* EV format profiles: the move OFFLINE needs MODE, the move ONLINE the fields; ONLINE is fixed. */
static void check_fmt_profile_refusals(struct mrc_context *ctx) {
  struct mrc_ctl_ev_fmt_field field = {.width = 16};
  struct mrc_ctl_ev_fmt_profile_attr f, q;
  memset(&f, 0, sizeof f);
  memset(&q, 0, sizeof q);
  f.profile_state = MRC_CTL_PROFILE_OFFLINE;
  f.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_UDP;
  EXPECT_ERRNO(mrc_ctl_modify_ev_fmt_profile(ctx, 40, &f, MRC_CTL_EV_FMT_PROFILE_STATE), EINVAL); /* no MODE */
  EXPECT_ERRNO(mrc_ctl_query_ev_fmt_profile(ctx, 40, &q, 0), EINVAL); /* nothing created */
  CHECK(mrc_ctl_modify_ev_fmt_profile(ctx, 40, &f, MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE) == 0,
        "format profile -> OFFLINE with MODE");
  f.profile_state = MRC_CTL_PROFILE_ONLINE;
  EXPECT_ERRNO(mrc_ctl_modify_ev_fmt_profile(ctx, 40, &f, MRC_CTL_EV_FMT_PROFILE_STATE), EINVAL); /* no fields */
  f.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  f.ev_fmt_op.fmt_fields = &field;
  f.ev_fmt_op.fmt_field_count = 1;
  CHECK(mrc_ctl_modify_ev_fmt_profile(ctx, 40, &f, MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_OP) == 0,
        "format profile -> ONLINE with its fields");
  EXPECT_ERRNO(mrc_ctl_modify_ev_fmt_profile(ctx, 40, &f, MRC_CTL_EV_FMT_PROFILE_OP), EBUSY); /* ONLINE */
  CHECK(mrc_ctl_query_ev_fmt_profile(ctx, 40, &q, 0) == 0 && q.cur_profile_state == MRC_CTL_PROFILE_ONLINE,
        "format profile 40 reads ONLINE");
}

/* CC profile 0: the configuration of a QP without a CC profile. */
static void check_cc_profile0(struct end *a) {
  struct mrc_ctl_cc_profile_attr cc;
  memset(&cc, 0, sizeof cc);
  CHECK(mrc_ctl_query_cc_profile(a->ctx, 0, &cc, MRC_CTL_CC_PROFILE_STATE) == 0, "query CC profile 0");
  CHECK(cc.cur_profile_state == MRC_CTL_PROFILE_ONLINE && cc.algorithm != NULL &&
            strcmp(cc.algorithm, "uet-1.0-nscc") == 0 && cc.cc_config != NULL,
        "CC profile 0 is ONLINE with uet-1.0-nscc and its parameters");
  const struct mrc_ctl_cc_nscc_cfg *nscc = (const struct mrc_ctl_cc_nscc_cfg *)cc.cc_config;
  CHECK(nscc->max_cwnd > 0 && nscc->eta > 0 && nscc->target_delay > 0, "CC profile 0's NSCC parameters");
  cc.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_ERRNO(mrc_ctl_modify_cc_profile(a->ctx, 0, &cc, MRC_CTL_CC_PROFILE_STATE), EBUSY); /* fixed */
  cc.algorithm = NULL;
  EXPECT_ERRNO(mrc_ctl_modify_cc_profile(a->ctx, 0, &cc, MRC_CTL_CC_PROFILE_ALGORITHM), EBUSY);
}

static void check_device(struct end *a) {
  uint32_t cur = 0, last = 1, vendor = 0, lastv = 1;
  mrc_ctl_query_version(&cur, &last, &vendor, &lastv);
  CHECK(cur == MRC_CTL_API_VER(1, 0, 1) && vendor == MRC_CTL_API_VER(1, 0, 0), "mrc_ctl_query_version");
  struct mrc_ctl_device_attr d;
  int supported = 0;
  CHECK(mrc_ctl_query_device_ex(a->dev, a->ctx, &d, &supported) == 0 && supported, "mrc_ctl_query_device_ex");
  CHECK(d.cc.algorithms != NULL && strcmp(d.cc.algorithms[0], "uet-1.0-nscc") == 0 && d.cc.algorithms[1] == NULL,
        "CC algorithms");
  CHECK(d.phy_port_mask & (1u << 1), "port 1 owned");
  CHECK(d.ev.ev_mode_mask & MRC_CTL_EV_MODE_AUTO, "AUTO EV mode");
  struct mrc_ctl_ep_rsp rsp;
  struct mrc_ctl_ep_req req;
  int n = 0;
  memset(&req, 0, sizeof req);
  /* a zeroed request names no EV of ours (probes themselves: mrc_ctl_events.c) */
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a->ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &req, 1, 1000000, &rsp, &n), EOPNOTSUPP);
}

static void check_port_down(struct end *a, struct end *b, const struct peer_info *bi) {
  struct mrc_ctl_port_attr p = {.port_admin_state = MRC_CTL_PORT_ADMIN_DISABLED};
  CHECK(mrc_ctl_modify_port(a->ctx, 2, &p, MRC_CTL_PORT_ADMIN_STATE) == 0, "port 2 admin down");
  EXPECT_ERRNO(mrc_ctl_modify_port(a->ctx, 99, &p, MRC_CTL_PORT_ADMIN_STATE), EINVAL);
  struct mrc_ctl_port_attr got;
  CHECK(mrc_ctl_query_port(a->ctx, 2, &got, MRC_CTL_PORT_ADMIN_STATE) == 0 &&
            got.port_admin_state == MRC_CTL_PORT_ADMIN_DISABLED,
        "query port 2");
  struct ibv_port_attr pa;
  CHECK(ibv_query_port(a->dev, 2, &pa) == 0 && pa.state == IBV_PORT_DOWN, "ibv_query_port reads DOWN");
  struct mrc_async_event ev;
  do {
    CHECK(mrc_get_async_event(a->ctx, &ev) == 0, "async event");
    mrc_ack_async_event(&ev);
  } while (ev.event_type != IBV_EVENT_PORT_ERR);
  CHECK(ev.element.port_num == 2, "PORT_ERR names port 2");
  write_messages(a, b, bi, 50);
  p.port_admin_state = MRC_CTL_PORT_ADMIN_ENABLED;
  CHECK(mrc_ctl_modify_port(a->ctx, 2, &p, MRC_CTL_PORT_ADMIN_STATE) == 0, "port 2 admin up");
  CHECK(ibv_query_port(a->dev, 2, &pa) == 0 && pa.state == IBV_PORT_ACTIVE, "ibv_query_port reads ACTIVE");
}

static void check_ev_states(struct end *a, struct end *b, const struct peer_info *bi) {
  struct mrc_ctl_ev_op_entry entries[256];
  struct mrc_ctl_ev_profile_attr q;
  memset(&q, 0, sizeof q);
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  q.ev_op.entries = entries;
  q.ev_op.entry_count = 1;
  EXPECT_ERRNO(mrc_ctl_query_ev_profile(a->ctx, 5, &q, MRC_CTL_EV_PROFILE_EV_OP), E2BIG);
  CHECK(q.ev_op.entry_count >= 64, "EV array needs %d entries", q.ev_op.entry_count);
  q.ev_op.entry_count = 256;
  CHECK(mrc_ctl_query_ev_profile(a->ctx, 5, &q, MRC_CTL_EV_PROFILE_EV_OP) == 0, "query EV array");
  struct mrc_ctl_ev_op_entry e = entries[0];
  struct mrc_ctl_ev_profile_attr m;
  memset(&m, 0, sizeof m);
  m.ev_op.op = MRC_CTL_EV_OP_MODIFY_EV_STATE;
  m.ev_op.entries = &e;
  m.ev_op.entry_count = 1;
  e.state = MRC_CTL_EV_DENIED;
  CHECK(mrc_ctl_modify_ev_profile(a->ctx, 5, &m, MRC_CTL_EV_PROFILE_EV_OP) == 0, "deny an EV");
  q.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_STATE;
  q.ev_op.entries = &e;
  q.ev_op.entry_count = 1;
  CHECK(mrc_ctl_query_ev_profile(a->ctx, 5, &q, MRC_CTL_EV_PROFILE_EV_OP) == 0 && e.state == MRC_CTL_EV_DENIED,
        "the EV reads DENIED");
  write_messages(a, b, bi, 20);
  e.state = MRC_CTL_EV_GOOD;
  CHECK(mrc_ctl_modify_ev_profile(a->ctx, 5, &m, MRC_CTL_EV_PROFILE_EV_OP) == 0, "allow the EV");
  CHECK(mrc_ctl_query_ev_profile(a->ctx, 5, &q, MRC_CTL_EV_PROFILE_EV_OP) == 0 && e.state == MRC_CTL_EV_GOOD,
        "the EV reads GOOD");
  e.state = MRC_CTL_EV_ASSUMED_BAD; /* only the transport sets ASSUMED_BAD */
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(a->ctx, 5, &m, MRC_CTL_EV_PROFILE_EV_OP), EINVAL);
}

int main(int argc, char **argv) {
  CHECK(argc >= 4, "usage: mrc_ctl_test <device A> <device B> <A's ev-ports base>");
  struct end a, b;
  struct peer_info ai, bi;
  end_open(&a, argv[1], 1 << 16, 64, 8, 0);
  end_open(&b, argv[2], 1 << 16, 64, 64, 0);
  end_info(&a, 0x30, &ai);
  end_info(&b, 0x40, &bi);
  check_device(&a);
  setup_profiles(&a);
  check_ev_profile_refusals(a.ctx, (uint32_t)atoi(argv[3]));
  check_fmt_profile_refusals(a.ctx);
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.profile.ev_profile_id = 5;
  m.profile.cc_profile_id = 7;
  CHECK(end_connect(&a, 0x30, &bi, &m, MRC_QP_EV_PROFILE_ID | MRC_QP_CC_PROFILE_ID, 0, 0) == 0, "connect A");
  check_cc_profile0(&b);
  struct mrc_qp_attr zero;
  memset(&zero, 0, sizeof zero); /* CC profile 0: the default */
  CHECK(end_connect(&b, 0x40, &ai, &zero, MRC_QP_CC_PROFILE_ID, 0, 0) == 0, "connect B with CC profile 0");
  CHECK(post_recvs(b.qp, 64) == 0, "post_recv");
  struct mrc_qp_attr got;
  CHECK(mrc_query_qp(a.qp, NULL, 0, &got, MRC_QP_EV_PROFILE_ID | MRC_QP_CC_PROFILE_ID, NULL) == 0 &&
            got.profile.ev_profile_id == 5 && got.profile.cc_profile_id == 7,
        "the QP reports its profiles");
  CHECK(mrc_query_qp(b.qp, NULL, 0, &got, MRC_QP_CC_PROFILE_ID, NULL) == 0 && got.profile.cc_profile_id == 0,
        "B reports CC profile 0");
  struct mrc_ctl_cc_profile_attr cc;
  memset(&cc, 0, sizeof cc);
  cc.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_ERRNO(mrc_ctl_modify_cc_profile(a.ctx, 7, &cc, MRC_CTL_CC_PROFILE_STATE), EBUSY);
  struct mrc_cq *evcq = mrc_ctl_create_ev_event_cq(a.ctx, 64, NULL, NULL, 0);
  CHECK(evcq != NULL, "mrc_ctl_create_ev_event_cq");
  write_messages(&a, &b, &bi, 20);
  CHECK(post_recvs(a.qp, 4) == 0, "post_recv on A");
  write_messages(&b, &a, &ai, 10); /* B sends with CC profile 0 */
  check_port_down(&a, &b, &bi);
  check_ev_states(&a, &b, &bi);
  struct mrc_ctl_ev_event events[8];
  CHECK(mrc_ctl_poll_ev_event(evcq, 8, events) >= 0, "mrc_ctl_poll_ev_event");
  CHECK(mrc_ctl_poll_ev_event(a.send_cq, 8, events) == -EINVAL, "an ordinary CQ is no EV event CQ");
  CHECK(mrc_destroy_cq(evcq) == 0, "destroy the EV event CQ");
  end_close(&a);
  end_close(&b);
  printf("mrc_ctl_test: profiles, port admin state and EV states act on the engine\n");
  return 0;
}
