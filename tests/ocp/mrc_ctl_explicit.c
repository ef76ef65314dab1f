/* mrc_ctl_explicit: explicit and generated EV profiles (MRC_CTL_EV_MODE_EXP / _GEN) built the
 * way OCP's examples/mrc_ctl_exp_ev.md and mrc_ctl_gen_ev.md do it, and their effect on a QP.
 *   - INIT -> OFFLINE creates ev_count unpopulated entries; ONLINE is refused until every entry
 *     is replaced; REPLACE_EV refuses EVs the device cannot send (EINVAL) and EVs not in the
 *     array (ENOENT), and is refused once the profile is ONLINE (EBUSY);
 *   - a QP of the profile moves data, and its engine holds exactly the listed EVs: a listed EV
 *     reads GOOD, a device EV that is not listed is unknown to the QP (ENOENT);
 *   - denying every listed EV of plane 1 leaves traffic on planes 2 and 3, and the EV array
 *     (copies included) reads the denied ones as DENIED;
 *   - a generated profile (fields set with the move INIT -> OFFLINE) draws ev_count EVs at the
 *     move ONLINE: a field whose mask frees the low 4 bits gives ports init|r, only those inside
 *     the device's source-port ranges, on the plane owning each; a field spanning every plane's
 *     range spreads the EVs evenly; bad rules are EINVAL, rules on an EXP profile EOPNOTSUPP;
 *     with "gen", the QP uses the generated profile (profile 10) instead of the explicit one;
 *   - EV probes need no QP: before any QP exists, probes on EVs of planes 1 and 3 are
 *     answered by device B's endpoint, with the port and an RTT.
 * mrc EVs are UDP source ports: value = port in the first two bytes (big-endian), port = plane;
 * plane p (1-based) owns ports [base + (p-1)*n, base + p*n), n = 256/planes + 16.
 *
 *   mrc_ctl_explicit <device A> <device B> <A's ev-ports base> [gen]   (A with 3 planes)
 */
#include <arpa/inet.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static uint32_t g_base, g_per_plane;
static uint64_t g_profile = 9; /* the profile ev_op() and set_state() act on */

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
  return ctl_ev_op(ctx, g_profile, op, e, n, query);
}

static int replace(struct mrc_context *ctx, struct mrc_ctl_ev from, struct mrc_ctl_ev to) {
  struct mrc_ctl_ev_op_entry e = {.ev = from, .ev_new = to, .state = MRC_CTL_EV_GOOD};
  return ev_op(ctx, MRC_CTL_EV_OP_REPLACE_EV, &e, 1, 0);
}

static int set_state(struct mrc_context *ctx, enum mrc_ctl_profile_state state) {
  return ctl_profile_state(ctx, g_profile, state);
}

static enum mrc_ctl_ev_state state_of(struct mrc_context *ctx, struct mrc_ctl_ev ev) {
  struct mrc_ctl_ev_op_entry e = {.ev = ev};
  CHECK(ev_op(ctx, MRC_CTL_EV_OP_QUERY_EV_STATE, &e, 1, 1) == 0, "QUERY_EV_STATE");
  return e.state;
}

/* An EV the QP uses reads GOOD, or ASSUMED_BAD when a starved progress thread (a loaded machine)
 * let an ACK pass the 4 ms ACK timeout: the engine's own judgement, never DENIED or unknown. */
static int in_use(enum mrc_ctl_ev_state state) {
  return state == MRC_CTL_EV_GOOD || state == MRC_CTL_EV_ASSUMED_BAD;
}

static int modify(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_profile_attr *a, int mask) {
  return mrc_ctl_modify_ev_profile(ctx, id, a, mask);
}

static uint32_t port_of(const struct mrc_ctl_ev *ev) { return (uint32_t)ev->val[0] << 8 | ev->val[1]; }

/* Profile `id`: GEN, `count` EVs from one 16-bit field; returns the drawn array in `out`. */
static int generated(struct mrc_context *ctx, uint64_t id, uint32_t count, struct mrc_ctl_ev_field f,
                     struct mrc_ctl_ev_op_entry *out) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = MRC_CTL_EV_MODE_GEN;
  a.ev_fmt_profile_id = 13;
  a.ev_count = count;
  a.ev_min_active = 1;
  a.ev_fields_op.op = MRC_CTL_EV_FIELDS_OP_MODIFY_FIELDS;
  a.ev_fields_op.fields = &f;
  a.ev_fields_op.field_count = 1;
  CHECK(modify(ctx, id, &a,
               MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_MODE | MRC_CTL_EV_PROFILE_FMT_ID | MRC_CTL_EV_PROFILE_COUNT |
                   MRC_CTL_EV_PROFILE_MIN_ACTIVE | MRC_CTL_EV_PROFILE_EV_FIELDS_OP) == 0,
        "generated profile %llu -> OFFLINE with its fields", (unsigned long long)id);
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_ONLINE;
  if (modify(ctx, id, &a, MRC_CTL_EV_PROFILE_STATE) != 0) return -1;
  memset(&a, 0, sizeof a);
  a.ev_op.op = MRC_CTL_EV_OP_QUERY_EV_ARRAY;
  a.ev_op.entries = out;
  a.ev_op.entry_count = (int)count;
  CHECK(mrc_ctl_query_ev_profile(ctx, id, &a, MRC_CTL_EV_PROFILE_EV_OP) == 0 && a.ev_op.entry_count == (int)count,
        "generated EV array");
  return 0;
}

static void build_generated(struct mrc_context *ctx) {
  struct mrc_ctl_ev_fmt_field fmt = {.width = 16};
  struct mrc_ctl_ev_fmt_profile_attr fa;
  memset(&fa, 0, sizeof fa);
  fa.profile_state = MRC_CTL_PROFILE_OFFLINE;
  fa.ev_fmt_mode = MRC_CTL_EV_FMT_MODE_UDP;
  fa.ev_fmt_op.op = MRC_CTL_EV_FMT_OP_MODIFY_FIELDS;
  fa.ev_fmt_op.fmt_fields = &fmt;
  fa.ev_fmt_op.fmt_field_count = 1;
  CHECK(mrc_ctl_modify_ev_fmt_profile(ctx, 13, &fa,
                                      MRC_CTL_EV_FMT_PROFILE_STATE | MRC_CTL_EV_FMT_PROFILE_MODE |
                                          MRC_CTL_EV_FMT_PROFILE_OP) == 0,
        "UDP EV format profile -> OFFLINE");
  fa.profile_state = MRC_CTL_PROFILE_ONLINE;
  CHECK(mrc_ctl_modify_ev_fmt_profile(ctx, 13, &fa, MRC_CTL_EV_FMT_PROFILE_STATE) == 0, "format profile -> ONLINE");
  struct mrc_ctl_ev_op_entry evs[256];
  /* The low 4 bits drawn over the base: only ports from the base up are the device's (plane 1). */
  struct mrc_ctl_ev_field low = {.width = 16, .init_val = g_base, .min_val = 0, .max_val = 15, .mask = 0xf};
  CHECK(generated(ctx, 11, 6, low, evs) == 0, "profile 11 ONLINE");
  for (int i = 0; i < 6; i++) {
    const uint32_t port = port_of(&evs[i].ev);
    CHECK(evs[i].ev.port == 1 && port >= g_base && port < (g_base & ~0xfu) + 16, "EV %d: port %u plane %u", i, port,
          evs[i].ev.port);
  }
  /* One field spanning every plane's source ports: the EVs spread evenly over the planes. */
  struct mrc_ctl_ev_field all = {.width = 16, .min_val = g_base, .max_val = g_base + 3 * g_per_plane - 1, .mask = 0xffff};
  CHECK(generated(ctx, 10, 12, all, evs) == 0, "profile 10 ONLINE");
  int per_plane[4] = {0};
  for (int i = 0; i < 12; i++) {
    const uint32_t port = port_of(&evs[i].ev);
    CHECK(evs[i].ev.port >= 1 && evs[i].ev.port <= 3 && port >= g_base + (evs[i].ev.port - 1u) * g_per_plane &&
              port < g_base + evs[i].ev.port * g_per_plane,
          "EV %d: port %u on its plane %u", i, port, evs[i].ev.port);
    per_plane[evs[i].ev.port]++;
  }
  CHECK(per_plane[1] == 4 && per_plane[2] == 4 && per_plane[3] == 4, "4 EVs per plane (%d %d %d)", per_plane[1],
        per_plane[2], per_plane[3]);
  struct mrc_ctl_ev_field query[4];
  struct mrc_ctl_ev_profile_attr q;
  memset(&q, 0, sizeof q);
  q.ev_fields_op.op = MRC_CTL_EV_FIELDS_OP_QUERY_FIELDS;
  q.ev_fields_op.fields = query;
  q.ev_fields_op.field_count = 4;
  CHECK(mrc_ctl_query_ev_profile(ctx, 10, &q, MRC_CTL_EV_PROFILE_EV_FIELDS_OP) == 0 && q.ev_fields_op.field_count == 1 &&
            query[0].max_val == all.max_val && query[0].mask == 0xffff,
        "QUERY_FIELDS");
  /* Rules no device port satisfies: ONLINE refused. Bad rules: EINVAL. Rules on EXP: EOPNOTSUPP. */
  struct mrc_ctl_ev_field none = {.width = 16, .init_val = 1, .mask = 0};
  EXPECT_ERRNO(generated(ctx, 12, 4, none, evs), EINVAL);
  struct mrc_ctl_ev_profile_attr bad;
  memset(&bad, 0, sizeof bad);
  struct mrc_ctl_ev_field wide = {.width = 8, .max_val = 16, .mask = 0xf}; /* 16 needs 5 bits */
  bad.ev_fields_op.op = MRC_CTL_EV_FIELDS_OP_MODIFY_FIELDS;
  bad.ev_fields_op.fields = &wide;
  bad.ev_fields_op.field_count = 1;
  bad.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_ERRNO(modify(ctx, 12, &bad, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_EV_FIELDS_OP), EINVAL);
  EXPECT_ERRNO(modify(ctx, 9, &bad, MRC_CTL_EV_PROFILE_EV_FIELDS_OP), EOPNOTSUPP); /* 9 is explicit */
}

/* The list: two EVs on plane 1, one on plane 2, one on plane 3 listed twice. */
static void build_profile(struct mrc_context *ctx) {
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_OFFLINE;
  a.ev_mode = (enum mrc_ctl_ev_mode)8; /* no such mode */
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(ctx, 9, &a, MRC_CTL_EV_PROFILE_MODE), EINVAL);
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

static void check_engine(struct end *a, struct end *b, const struct peer_info *bi) {
  write_messages(a, b, bi, 30);
  const enum mrc_ctl_ev_state listed = state_of(a->ctx, make_ev(2, 3));
  CHECK(in_use(listed), "listed EV in use in the QP (state %d)", (int)listed);
  struct mrc_ctl_ev_op_entry e = {.ev = make_ev(1, 2)}; /* a device EV the list does not name */
  EXPECT_ERRNO(ev_op(a->ctx, MRC_CTL_EV_OP_QUERY_EV_STATE, &e, 1, 1), ENOENT);
  struct mrc_ctl_ev_op_entry deny[2] = {{.ev = make_ev(1, 0), .state = MRC_CTL_EV_DENIED},
                                        {.ev = make_ev(1, 1), .state = MRC_CTL_EV_DENIED}};
  CHECK(ev_op(a->ctx, MRC_CTL_EV_OP_MODIFY_EV_STATE, deny, 2, 0) == 0, "deny plane 1's EVs");
  write_messages(a, b, bi, 30);
  struct mrc_ctl_ev_op_entry array[8];
  CHECK(ev_op(a->ctx, MRC_CTL_EV_OP_QUERY_EV_ARRAY, array, 8, 1) == 0, "QUERY_EV_ARRAY");
  CHECK(array[0].state == MRC_CTL_EV_DENIED && array[1].state == MRC_CTL_EV_DENIED &&
            in_use(array[2].state) && in_use(array[3].state) &&
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

/* The QP uses generated profile 10: its EVs and only those; plane 1's denied, traffic goes on. */
static void check_engine_generated(struct end *a, struct end *b, const struct peer_info *bi) {
  write_messages(a, b, bi, 30);
  struct mrc_ctl_ev_op_entry array[12];
  CHECK(ev_op(a->ctx, MRC_CTL_EV_OP_QUERY_EV_ARRAY, array, 12, 1) == 0, "QUERY_EV_ARRAY");
  for (int i = 0; i < 12; i++) CHECK(in_use(array[i].state), "generated EV %d in use in the QP", i);
  uint32_t unused = g_base;
  for (int i = 0; i < 12; i++)
    if (port_of(&array[i].ev) == unused) unused++, i = -1; /* a plane-1 port the draw did not pick */
  struct mrc_ctl_ev_op_entry e = {.ev = make_ev(1, unused - g_base)};
  EXPECT_ERRNO(ev_op(a->ctx, MRC_CTL_EV_OP_QUERY_EV_STATE, &e, 1, 1), ENOENT);
  for (int i = 0; i < 12; i++) {
    if (array[i].ev.port != 1) continue;
    struct mrc_ctl_ev_op_entry deny = {.ev = array[i].ev, .state = MRC_CTL_EV_DENIED};
    CHECK(ev_op(a->ctx, MRC_CTL_EV_OP_MODIFY_EV_STATE, &deny, 1, 0) == 0, "deny a plane-1 EV");
  }
  write_messages(a, b, bi, 30);
}

int main(int argc, char **argv) {
  CHECK(argc >= 4, "usage: mrc_ctl_explicit <device A> <device B> <A's ev-ports base> [gen]");
  const int gen = argc >= 5 && strcmp(argv[4], "gen") == 0;
  g_base = (uint32_t)atoi(argv[3]);
  g_per_plane = 256 / 3 + 16;
  struct end a, b;
  struct peer_info ai, bi;
  end_open(&a, argv[1], 1 << 16, 64, 8, 0);
  end_open(&b, argv[2], 1 << 16, 64, 64, 0);
  struct mrc_ctl_device_attr d;
  CHECK(mrc_ctl_query_device(a.dev, &d) == 0 && (d.ev.ev_mode_mask & MRC_CTL_EV_MODE_EXP) &&
            (d.ev.ev_mode_mask & MRC_CTL_EV_MODE_GEN),
        "EXP and GEN EV modes offered");
  end_info(&a, 0x30, &ai);
  end_info(&b, 0x40, &bi);
  check_probes_without_qp(&a, &b);
  build_profile(a.ctx);
  build_generated(a.ctx);
  g_profile = gen ? 10 : 9;
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.profile.ev_profile_id = g_profile;
  CHECK(end_connect(&a, 0x30, &bi, &m, MRC_QP_EV_PROFILE_ID, 0, 0) == 0, "connect A with EV profile %llu",
        (unsigned long long)g_profile);
  CHECK(end_connect(&b, 0x40, &ai, NULL, 0, 0, 0) == 0, "connect B");
  CHECK(post_recvs(b.qp, 64) == 0, "post_recv");
  if (gen) {
    check_engine_generated(&a, &b, &bi);
  } else {
    check_engine(&a, &b, &bi);
  }
  EXPECT_ERRNO(set_state(a.ctx, MRC_CTL_PROFILE_OFFLINE), EBUSY); /* a QP uses it */
  end_close(&a);
  end_close(&b);
  printf("mrc_ctl_explicit: the %s EV list is what the QP's engine uses\n", gen ? "generated" : "explicit");
  return 0;
}
