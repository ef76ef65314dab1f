/* mrc_ctl_stev: STEV EVs through the OCP controller API (EV format mode STEV: an EV in the UDP
 * source port and the IPv6 flow label), as OCP's examples/mrc_ctl_exp_ev.md, mrc_ctl_gen_ev.md
 * and mrc_ctl_ev_probes.md set them up, on a device of IPv6 planes.
 *   - the device offers format modes UDP and STEV (32-bit EVs); an IPv4 device refuses STEV
 *     (EINVAL); a STEV format wider than 32 bits is E2BIG;
 *   - an explicit profile of STEV EVs (source port, then flow label) refuses a port outside the
 *     plane's EV source ports and bytes past the fourth (EINVAL), reads its EVs back as given,
 *     and a second profile giving one of its ports another label cannot go ONLINE (EINVAL), a
 *     refused call leaving the profile as it was;
 *   - OCP's generated STEV profile (three fields, 8 + 4 + 4 bits) draws EVs whose port is one of
 *     the plane's;
 *   - a QP of the explicit profile moves data (two QPs of the device, connected to each other)
 *     and its EVs read as in use; probes on a STEV EV are answered, and a probe giving a port
 *     held by an ONLINE profile another label is refused (EBUSY).
 * The wire (each port's packets carry their flow label) is checked by
 * UdpLoopback.AnEvSourcePortSendsTheFlowLabelItIsGiven.
 *
 *   mrc_ctl_stev <IPv6 device> <IPv4 device> <the IPv6 device's ev-ports base>
 */
#include <arpa/inet.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static uint32_t g_base;

static struct mrc_ctl_ev stev(uint32_t index, uint16_t label) {
  struct mrc_ctl_ev ev;
  const uint32_t port = g_base + index;
  memset(&ev, 0, sizeof ev);
  ev.val[0] = (uint8_t)(port >> 8), ev.val[1] = (uint8_t)port;
  ev.val[2] = (uint8_t)(label >> 8), ev.val[3] = (uint8_t)label;
  ev.port = 1;
  return ev;
}

static int format(struct mrc_context *ctx, uint64_t id, struct mrc_ctl_ev_fmt_field *fields, int n) {
  return ctl_format_online(ctx, id, MRC_CTL_EV_FMT_MODE_STEV, fields, n);
}

static int online(struct mrc_context *ctx, uint64_t id) {
  return ctl_profile_state(ctx, id, MRC_CTL_PROFILE_ONLINE);
}

static void check_formats(struct ibv_context *dev, struct mrc_context *ctx, struct mrc_context *v4) {
  struct mrc_ctl_device_attr d;
  CHECK(mrc_ctl_query_device(dev, &d) == 0 && (d.ev.ev_fmt_mode_mask & MRC_CTL_EV_FMT_MODE_STEV) &&
            !(d.ev.ev_fmt_mode_mask & MRC_CTL_EV_FMT_MODE_SRV6) && d.ev.ev_max_width == 32,
        "IPv6 device offers format STEV, 32-bit EVs");
  struct mrc_ctl_ev_fmt_field ocp[2] = {{16}, {16}}, wide[3] = {{16}, {16}, {8}}, gen[3] = {{8}, {4}, {4}};
  EXPECT_ERRNO(format(v4, 13, ocp, 2), EINVAL);
  EXPECT_ERRNO(format(ctx, 13, wide, 3), E2BIG);
  CHECK(format(ctx, 13, ocp, 2) == 0, "OCP's STEV format profile (16 + 16 bits) ONLINE");
  CHECK(format(ctx, 14, gen, 3) == 0, "OCP's generated STEV format (8 + 4 + 4 bits) ONLINE");
}

static void check_explicit(struct mrc_context *ctx) {
  CHECK(ctl_profile_offline(ctx, 9, 13, MRC_CTL_EV_MODE_EXP, 3, NULL, 0) == 0, "explicit STEV profile OFFLINE");
  struct mrc_ctl_ev bad = stev(300, 0x1234); /* past the plane's 272 EV source ports */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  bad = stev(1, 0x1234);
  bad.val[4] = 1; /* a STEV EV has 32 bits */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  const struct mrc_ctl_ev good[3] = {stev(1, 0x1234), stev(2, 0x5678), stev(1, 0x1234)};
  for (int i = 0; i < 3; i++) CHECK(ctl_fill(ctx, 9, good[i]) == 0, "REPLACE_EV %d", i);
  CHECK(online(ctx, 9) == 0, "explicit STEV profile ONLINE");
  struct mrc_ctl_ev_op_entry array[3];
  CHECK(ctl_ev_op(ctx, 9, MRC_CTL_EV_OP_QUERY_EV_ARRAY, array, 3, 1) == 0, "EV array");
  for (int i = 0; i < 3; i++)
    CHECK(memcmp(&array[i].ev, &good[i], sizeof good[i]) == 0, "EV %d reads back as given", i);
  /* Port 1 of the plane carries label 0x1234 for profile 9: another label cannot go ONLINE. */
  CHECK(ctl_profile_offline(ctx, 12, 13, MRC_CTL_EV_MODE_EXP, 1, NULL, 0) == 0 && ctl_fill(ctx, 12, stev(1, 0x9999)) == 0,
        "profile 12 OFFLINE");
  EXPECT_ERRNO(online(ctx, 12), EINVAL);
  /* A refused call changes nothing: the event mask given with that move is not kept. */
  struct mrc_ctl_ev_profile_attr a;
  memset(&a, 0, sizeof a);
  a.profile_state = MRC_CTL_PROFILE_ONLINE;
  a.ev_event_mask = MRC_CTL_EV_GOOD;
  EXPECT_ERRNO(mrc_ctl_modify_ev_profile(ctx, 12, &a, MRC_CTL_EV_PROFILE_STATE | MRC_CTL_EV_PROFILE_EVENT_MASK),
               EINVAL);
  memset(&a, 0, sizeof a);
  CHECK(mrc_ctl_query_ev_profile(ctx, 12, &a, MRC_CTL_EV_PROFILE_EVENT_MASK | MRC_CTL_EV_PROFILE_STATE) == 0 &&
            a.ev_event_mask == 0 && a.cur_profile_state == MRC_CTL_PROFILE_OFFLINE,
        "profile 12 unchanged by the refused call (mask %d, state %d)", a.ev_event_mask, (int)a.cur_profile_state);
}

/* OCP's generated STEV example, the top byte fixed at the device's range so draws land there. */
static void check_generated(struct mrc_context *ctx) {
  struct mrc_ctl_ev_field f[3];
  memset(f, 0, sizeof f);
  f[0].width = 8, f[0].init_val = g_base >> 8; /* fixed: the ports' high byte */
  f[1].width = 4, f[1].max_val = 15, f[1].mask = 0xf;
  f[2].width = 4, f[2].max_val = 15, f[2].mask = 0xf;
  CHECK(ctl_profile_offline(ctx, 10, 14, MRC_CTL_EV_MODE_GEN, 16, f, 3) == 0, "generated STEV profile OFFLINE");
  CHECK(online(ctx, 10) == 0, "generated STEV profile ONLINE");
  struct mrc_ctl_ev_op_entry array[16];
  CHECK(ctl_ev_op(ctx, 10, MRC_CTL_EV_OP_QUERY_EV_ARRAY, array, 16, 1) == 0, "generated EV array");
  for (int i = 0; i < 16; i++) {
    const uint32_t port = (uint32_t)array[i].ev.val[0] << 8 | array[i].ev.val[1];
    CHECK(port >= g_base && port < g_base + 272 && array[i].ev.val[2] == 0 && array[i].ev.val[3] == 0 &&
              array[i].ev.port == 1,
          "generated EV %d: one of the plane's ports (%u), label 0", i, port);
  }
}

/* Two QPs of the device, A using profile 9, connected to each other; then probes. */
static void check_traffic(const char *device) {
  struct end a, b;
  struct peer_info ai, bi;
  end_open(&a, device, 1 << 16, 64, 8, 0);
  end_open(&b, device, 1 << 16, 64, 64, 0);
  end_info(&a, 0x30, &ai);
  end_info(&b, 0x40, &bi);
  struct mrc_qp_attr m;
  memset(&m, 0, sizeof m);
  m.profile.ev_profile_id = 9;
  CHECK(end_connect(&a, 0x30, &bi, &m, MRC_QP_EV_PROFILE_ID, 0, 0) == 0, "connect A with STEV profile 9");
  CHECK(end_connect(&b, 0x40, &ai, NULL, 0, 0, 0) == 0, "connect B");
  CHECK(post_recvs(b.qp, 64) == 0, "post_recv");
  write_messages(&a, &b, &bi, 30);
  struct mrc_ctl_ev_op_entry e = {.ev = stev(2, 0x5678)};
  CHECK(ctl_ev_op(a.ctx, 9, MRC_CTL_EV_OP_QUERY_EV_STATE, &e, 1, 1) == 0 &&
            (e.state == MRC_CTL_EV_GOOD || e.state == MRC_CTL_EV_ASSUMED_BAD),
        "the QP uses STEV EV port 2 label 0x5678 (state %d)", (int)e.state);
  struct mrc_ctl_ep_req req[2];
  struct mrc_ctl_ep_rsp rsp[2];
  memset(req, 0, sizeof req);
  req[0].req_id = 1;
  req[0].ev_fmt_mode = MRC_CTL_EV_FMT_MODE_STEV;
  req[0].req_ev = stev(2, 0x5678);
  CHECK(ibv_query_gid(a.dev, 1, 3, &req[0].dgid) == 0, "GID");
  int got = -1;
  CHECK(mrc_ctl_ep_batch_send_wait(a.ctx, 0, MRC_CTL_EP_OP_EV_PROBE, req, 1, 2000000000u, rsp, &got) == 0 && got == 1,
        "a probe on a STEV EV answered");
  req[1] = req[0];
  req[1].req_ev = stev(1, 0x4444); /* port 1 holds 0x1234 for profile 9 */
  EXPECT_ERRNO(mrc_ctl_ep_batch_send_wait(a.ctx, 0, MRC_CTL_EP_OP_EV_PROBE, &req[1], 1, 2000000000u, rsp, &got),
               EBUSY);
  end_close(&a);
  end_close(&b);
}

int main(int argc, char **argv) {
  CHECK(argc == 4, "usage: mrc_ctl_stev <IPv6 device> <IPv4 device> <the IPv6 device's ev-ports base>");
  g_base = (uint32_t)atoi(argv[3]);
  struct mrc_context_attr attr = {.mrc_api_version_used = MRC_API_CURRENT_VERSION};
  struct ibv_context *dev = open_named(argv[1]), *v4 = open_named(argv[2]);
  struct mrc_context *ctx = mrc_create_context(dev, &attr), *ctx4 = mrc_create_context(v4, &attr);
  CHECK(ctx && ctx4, "mrc_create_context");
  check_formats(dev, ctx, ctx4);
  check_explicit(ctx);
  check_generated(ctx);
  check_traffic(argv[1]);
  mrc_destroy_context(ctx), mrc_destroy_context(ctx4);
  ibv_close_device(dev), ibv_close_device(v4);
  printf("mrc_ctl_stev: STEV format, explicit and generated profiles, a QP and probes on STEV EVs\n");
  return 0;
}
