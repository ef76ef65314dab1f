/* mrc_ctl_srv6: SRv6 EVs through the OCP controller API (EV format mode SRV6), as OCP's
 * examples/mrc_ctl_exp_ev.md and mrc_ctl_gen_ev.md set them up, on an SRv6 device (srv6=).
 *
 *   mrc_ctl_srv6 api <srv6 device> <IPv4 device> <IPv6 device without srv6=>
 *     - the device offers format modes UDP, SRV6 and STEV (its planes are IPv6);
 *     - OCP's SRv6 format profile (a 32-bit locator and four 16-bit uSIDs) goes ONLINE; its
 *       SRv6+SRH profile (224 bits) and a format of no whole uSIDs are E2BIG and leave no
 *       profile; SRV6 on the IPv4 device and on the IPv6 device without srv6= is EINVAL;
 *     - an explicit profile of SRv6 EVs takes addresses (the plane's block and uSIDs), refuses
 *       another block, a uSID after a zero one, bits past the format's width, an SRH segment, a
 *       port the device lacks and a UDP-port EV (EINVAL), and reads its EVs back as given;
 *     - OCP's generated SRv6 profile (fixed locator field, generated uSID bits) draws EVs of the
 *       plane's block whose uSID is 0x200 or 0x201, both; a rule wider than its format field is
 *       EINVAL; rules whose locator is no plane's block leave the profile OFFLINE (EINVAL);
 *     - an AUTO profile cannot use the SRv6 format (EINVAL); the format cannot leave ONLINE
 *       while an ONLINE EV profile uses it (EBUSY).
 *   mrc_ctl_srv6 probe <srv6 device> <uSID,uSID,...> <peer locator,...>
 *     - connectionless EV probes on the SRv6 EV of every uSID on every plane (one per path),
 *       to the peer's locator on that plane: every one answered, on its plane.
 *   mrc_ctl_srv6 serve <device> <seconds>
 *     - holds the device open (its endpoint answers probes) for that long, or until it is killed.
 */
#include <arpa/inet.h>
#include <unistd.h>

#include "mrc_ctl.h"
#include "ocp_common.h"

static int profile_offline(struct mrc_context* ctx, uint64_t id, enum mrc_ctl_ev_mode mode,
                           uint32_t count, struct mrc_ctl_ev_field* fields, int n) {
  return ctl_profile_offline(ctx, id, 14, mode, count, fields, n);
}

static void ev_array(struct mrc_context* ctx, uint64_t id, struct mrc_ctl_ev_op_entry* out, int n) {
  CHECK(ctl_ev_op(ctx, id, MRC_CTL_EV_OP_QUERY_EV_ARRAY, out, n, 1) == 0,
        "EV array of profile %llu", (unsigned long long)id);
}

/* Format profiles: OCP's SRv6 one ONLINE; STEV, SRH, odd widths and non-SRv6 devices refused. */
static void check_formats(struct mrc_context* ctx, struct mrc_context* v4,
                          struct mrc_context* plain) {
  struct mrc_ctl_ev_fmt_field srv6[5] = {{32}, {16}, {16}, {16}, {16}};
  struct mrc_ctl_ev_fmt_field srh[12] = {{32}, {16}, {16}, {16}, {16}, {16},
                                         {16}, {32}, {16}, {16}, {16}, {16}};
  struct mrc_ctl_ev_fmt_field odd[2] = {{32}, {8}};
  struct mrc_ctl_ev_fmt_field stev[2] = {{16}, {16}};
  struct mrc_ctl_ev_fmt_profile_attr q;
  CHECK(ctl_format_online(ctx, 13, MRC_CTL_EV_FMT_MODE_STEV, stev, 2) == 0,
        "a STEV format on IPv6 planes");
  EXPECT_ERRNO(ctl_format_online(ctx, 15, MRC_CTL_EV_FMT_MODE_SRV6, srh, 12), E2BIG);
  EXPECT_ERRNO(mrc_ctl_query_ev_fmt_profile(ctx, 15, &q, 0), EINVAL); /* nothing created */
  EXPECT_ERRNO(ctl_format_online(ctx, 16, MRC_CTL_EV_FMT_MODE_SRV6, odd, 2), E2BIG);
  EXPECT_ERRNO(ctl_format_online(v4, 14, MRC_CTL_EV_FMT_MODE_SRV6, srv6, 5), EINVAL);
  EXPECT_ERRNO(ctl_format_online(plain, 14, MRC_CTL_EV_FMT_MODE_SRV6, srv6, 5), EINVAL);
  CHECK(ctl_format_online(ctx, 14, MRC_CTL_EV_FMT_MODE_SRV6, srv6, 5) == 0,
        "OCP's SRv6 format profile ONLINE");
  memset(&q, 0, sizeof q);
  CHECK(mrc_ctl_query_ev_fmt_profile(ctx, 14, &q, MRC_CTL_EV_FMT_PROFILE_MODE) == 0 &&
            q.ev_fmt_mode == MRC_CTL_EV_FMT_MODE_SRV6,
        "format profile 14 reads mode SRV6");
}

/* An explicit profile of SRv6 EVs: bad EVs refused, good ones read back as given. */
static void check_explicit(struct ibv_context* dev, struct mrc_context* ctx) {
  CHECK(profile_offline(ctx, 9, MRC_CTL_EV_MODE_EXP, 2, NULL, 0) == 0,
        "explicit SRv6 profile OFFLINE");
  struct mrc_ctl_ev bad = srv6_ev(dev, 1, 0x200);
  bad.val[0] ^= 0xff; /* another block */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  bad = srv6_ev(dev, 1, 0x200);
  bad.val[8] = 0x01; /* a uSID after the zero one that ended the container */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  bad = srv6_ev(dev, 1, 0x200);
  bad.val[6] = bad.val[8] = bad.val[10] = 0x02; /* four uSIDs fill the 96-bit format */
  bad.val[12] = 0x01;                           /* and bits 96-127 are past it */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  bad = srv6_ev(dev, 1, 0x200);
  bad.val[20] = 1; /* an SRH segment */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  bad = srv6_ev(dev, 1, 0x200);
  bad.port = 2; /* the device has one port */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  memset(&bad, 0, sizeof bad);
  bad.val[0] = 0x8f, bad.val[1] = 0x0c, bad.port = 1; /* a UDP-port EV: no SRv6 EV */
  EXPECT_ERRNO(ctl_fill(ctx, 9, bad), EINVAL);
  EXPECT_ERRNO(ctl_profile_state(ctx, 9, MRC_CTL_PROFILE_ONLINE), EINVAL); /* still unpopulated */
  struct mrc_ctl_ev good[2] = {srv6_ev(dev, 1, 0x200), srv6_ev(dev, 1, 0x201)};
  CHECK(ctl_fill(ctx, 9, good[0]) == 0 && ctl_fill(ctx, 9, good[1]) == 0,
        "REPLACE_EV with SRv6 EVs");
  CHECK(ctl_profile_state(ctx, 9, MRC_CTL_PROFILE_ONLINE) == 0, "explicit SRv6 profile ONLINE");
  struct mrc_ctl_ev_op_entry array[2];
  ev_array(ctx, 9, array, 2);
  for (int i = 0; i < 2; i++)
    CHECK(memcmp(&array[i].ev, &good[i], sizeof good[i]) == 0 && array[i].state == MRC_CTL_EV_GOOD,
          "EV %d reads back as given, GOOD", i);
  struct mrc_ctl_ev_fmt_profile_attr f;
  memset(&f, 0, sizeof f);
  f.profile_state = MRC_CTL_PROFILE_OFFLINE;
  EXPECT_ERRNO(mrc_ctl_modify_ev_fmt_profile(ctx, 14, &f, MRC_CTL_EV_FMT_PROFILE_STATE), EBUSY);
}

/* OCP's generated SRv6 profile: a fixed locator, uSIDs 0x200 | generated bit. */
static void check_generated(struct ibv_context* dev, struct mrc_context* ctx) {
  const struct mrc_ctl_ev block = srv6_ev(dev, 1, 0);
  struct mrc_ctl_ev_field fields[2];
  memset(fields, 0, sizeof fields);
  fields[0].width = 32;
  fields[0].init_val = (uint32_t)block.val[0] << 24 | (uint32_t)block.val[1] << 16 |
                       (uint32_t)block.val[2] << 8 | block.val[3];
  fields[1].width = 17; /* wider than its 16-bit format field */
  fields[1].init_val = 0x200;
  fields[1].max_val = 1;
  fields[1].mask = 0x1;
  EXPECT_ERRNO(profile_offline(ctx, 10, MRC_CTL_EV_MODE_GEN, 8, fields, 2), EINVAL);
  fields[1].width = 16;
  fields[0].init_val ^= 0x00010000; /* no plane's block */
  CHECK(profile_offline(ctx, 10, MRC_CTL_EV_MODE_GEN, 8, fields, 2) == 0,
        "generated SRv6 profile OFFLINE");
  EXPECT_ERRNO(ctl_profile_state(ctx, 10, MRC_CTL_PROFILE_ONLINE), EINVAL);
  fields[0].init_val ^= 0x00010000;
  CHECK(profile_offline(ctx, 10, MRC_CTL_EV_MODE_GEN, 8, fields, 2) == 0,
        "generated profile's rules");
  CHECK(ctl_profile_state(ctx, 10, MRC_CTL_PROFILE_ONLINE) == 0, "generated SRv6 profile ONLINE");
  struct mrc_ctl_ev_op_entry array[8];
  ev_array(ctx, 10, array, 8);
  int seen[2] = {0, 0};
  for (int i = 0; i < 8; i++) {
    const struct mrc_ctl_ev* ev = &array[i].ev;
    const int usid = ev->val[4] << 8 | ev->val[5];
    CHECK(memcmp(ev->val, block.val, 4) == 0 && (usid == 0x200 || usid == 0x201) && ev->port == 1,
          "generated EV %d: the plane's block, then uSID 200 or 201 (got %x)", i, usid);
    seen[usid - 0x200]++;
  }
  CHECK(seen[0] > 0 && seen[1] > 0, "both uSIDs drawn (%d, %d)", seen[0], seen[1]);
  CHECK(profile_offline(ctx, 11, MRC_CTL_EV_MODE_AUTO, 1, NULL, 0) == 0, "AUTO profile OFFLINE");
  EXPECT_ERRNO(ctl_profile_state(ctx, 11, MRC_CTL_PROFILE_ONLINE), EINVAL); /* AUTO EVs are ports */
}

static int run_api(const char* srv6_device, const char* v4_device, const char* plain_device) {
  struct mrc_context_attr attr = {.mrc_api_version_used = MRC_API_CURRENT_VERSION};
  struct ibv_context *dev = open_named(srv6_device), *v4 = open_named(v4_device),
                     *plain = open_named(plain_device);
  struct mrc_context *ctx = mrc_create_context(dev, &attr), *ctx4 = mrc_create_context(v4, &attr),
                     *ctx6 = mrc_create_context(plain, &attr);
  CHECK(ctx && ctx4 && ctx6, "mrc_create_context");
  struct mrc_ctl_device_attr d;
  CHECK(mrc_ctl_query_device(dev, &d) == 0 && (d.ev.ev_fmt_mode_mask & MRC_CTL_EV_FMT_MODE_SRV6) &&
            (d.ev.ev_fmt_mode_mask & MRC_CTL_EV_FMT_MODE_UDP) &&
            (d.ev.ev_fmt_mode_mask & MRC_CTL_EV_FMT_MODE_STEV) && d.ev.ev_max_width == 128,
        "SRv6 device offers formats UDP, SRV6 and STEV, 128-bit EVs");
  CHECK(mrc_ctl_query_device(v4, &d) == 0 && d.ev.ev_fmt_mode_mask == MRC_CTL_EV_FMT_MODE_UDP,
        "IPv4 device offers format UDP only");
  check_formats(ctx, ctx4, ctx6);
  check_explicit(dev, ctx);
  check_generated(dev, ctx);
  mrc_destroy_context(ctx), mrc_destroy_context(ctx4), mrc_destroy_context(ctx6);
  ibv_close_device(dev), ibv_close_device(v4), ibv_close_device(plain);
  printf(
      "mrc_ctl_srv6: SRv6 format, explicit and generated profiles as OCP's examples build them\n");
  return 0;
}

/* Probes on the SRv6 EV of each path on each plane, to the peer's locators. */
static int run_probe(const char* device, const char* usids, const char* peer) {
  struct mrc_context_attr attr = {.mrc_api_version_used = MRC_API_CURRENT_VERSION};
  struct ibv_context* dev = open_named(device);
  struct mrc_context* ctx = mrc_create_context(dev, &attr);
  struct mrc_ctl_ep_req req[32];
  struct mrc_ctl_ep_rsp rsp[32];
  char peers[512], paths[128];
  int n = 0;
  CHECK(ctx != NULL, "mrc_create_context");
  memset(req, 0, sizeof req);
  snprintf(peers, sizeof peers, "%s", peer);
  union ibv_gid to[8];
  int planes = 0;
  for (char *save = NULL, *p = strtok_r(peers, ",", &save); p != NULL && planes < 8;
       p = strtok_r(NULL, ",", &save))
    CHECK(inet_pton(AF_INET6, p, to[planes++].raw) == 1, "peer locator %s", p);
  for (int port = 1; port <= planes; port++) {
    snprintf(paths, sizeof paths, "%s", usids);
    for (char *save = NULL, *u = strtok_r(paths, ",", &save); u != NULL && n < 32;
         u = strtok_r(NULL, ",", &save)) {
      req[n].req_id = (uint16_t)(n + 1);
      req[n].ev_fmt_mode = MRC_CTL_EV_FMT_MODE_SRV6;
      req[n].req_ev = srv6_ev(dev, (uint8_t)port, (uint16_t)strtoul(u, NULL, 16));
      req[n].dgid = to[port - 1];
      n++;
    }
  }
  int got = -1;
  CHECK(mrc_ctl_ep_batch_send_wait(ctx, 0, MRC_CTL_EP_OP_EV_PROBE, req, n, 3000000000u, rsp,
                                   &got) == 0 &&
            got == n,
        "%d SRv6 EV probes answered (got %d)", n, got);
  for (int i = 0; i < got; i++) {
    const struct mrc_ctl_ep_req* r = &req[rsp[i].req_id - 1];
    CHECK(rsp[i].port == r->req_ev.port && rsp[i].rtt > 0, "probe %u answered on port %u",
          rsp[i].req_id, rsp[i].port);
    printf("probe %u: port %u uSID %02x%02x rtt %u ns\n", rsp[i].req_id, rsp[i].port,
           r->req_ev.val[4], r->req_ev.val[5], rsp[i].rtt);
  }
  mrc_destroy_context(ctx);
  ibv_close_device(dev);
  printf("mrc_ctl_srv6: %d probes over SRv6 EVs answered\n", n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && strcmp(argv[1], "api") == 0) return run_api(argv[2], argv[3], argv[4]);
  if (argc == 5 && strcmp(argv[1], "probe") == 0) return run_probe(argv[2], argv[3], argv[4]);
  if (argc == 4 && strcmp(argv[1], "serve") == 0) {
    struct ibv_context* dev = open_named(argv[2]);
    printf("mrc_ctl_srv6: serving %s\n", argv[2]); /* the device answers probes from now on */
    fflush(stdout);
    sleep((unsigned)atoi(argv[3]));
    ibv_close_device(dev);
    return 0;
  }
  fprintf(stderr,
          "usage: mrc_ctl_srv6 api <srv6 device> <IPv4 device> <IPv6 device>\n"
          "       mrc_ctl_srv6 probe <srv6 device> <uSID,...> <peer locator,...>\n"
          "       mrc_ctl_srv6 serve <device> <seconds>\n");
  return 2;
}
