/* Checks of the mrc libfabric provider through libfabric's own API (FI_PROVIDER_PATH must name
 * the directory of libmrc-fi.so). Each check prints its name; the first failure exits 1.
 *
 *   hints      fi_getinfo refuses what the provider lacks (-FI_ENODATA: orders beyond SAS, shared
 *              AVs, registration modes RMA cannot work with) and offers RDM, its mr_mode within
 *              the hints'
 *   self       a message to the endpoint's own name
 *   unexpected messages sent before their receives, taken by tag in another order
 *   truncate   a message longer than its receive: FI_ETRUNC with the overflow length
 *   peek       FI_PEEK finds nothing (FI_ENOMSG), then a message; FI_CLAIM takes it
 *   cancel     a posted receive cancelled: FI_ECANCELED; fi_cq_readerr leaves err_data alone
 *   badflags   an unknown flag on an operation: -FI_EBADFLAGS; a bad address: error
 *   inject msg fi_tsendmsg/fi_sendmsg with FI_INJECT still complete
 *   vanish     a peer process that exits: the next send completes in error within seconds
 *   stall      a peer process stopped for 3 s (SIGSTOP) while a message to it is under way, as a
 *              process starved on a loaded host may be: the message arrives and its send
 *              completes without error once the peer runs again (FI_MRC_PEER_TIMEOUT_MS)
 *   mtu        a link between different FI_MRC_MTU is refused, naming it
 *   stall report with FI_MRC_STALL_REPORT_MS, an endpoint whose receive waits while a message of
 *              another tag waits unexpected writes its state on stderr once, naming both
 *   late av    a message from a sender not yet in the AV, then a receive directed at it
 *   av dup     a name inserted again keeps its fi_addr (receives directed at it match); removes
 *              count inserts
 *   node       fi_getinfo's node/service: src_addr with FI_SOURCE (the endpoint listens there),
 *              else dest_addr (fi_av_insert takes it, fi_av_insertsvc gives the same entry); a
 *              node that does not resolve: -FI_ENODATA; an answer given back as hints is
 *              taken; an endpoint opens again at the address of one just closed
 *   dies       a sender killed in the middle of a rendezvous message: the receive fails
 *   silent     a sender stopped (SIGSTOP) in the middle of a rendezvous message: the link from it
 *              is dropped after FI_MRC_PEER_TIMEOUT_MS and the receive fails
 *   refused    a send to an endpoint that is gone: an error completion
 *   rma        fi_write, fi_writedata (CQ data at the target after the bytes), a bad key
 *   read       fi_read into one buffer and into two, of nothing; a key the target did not open to
 *              reads and a range past its registration: FI_EACCES, and the link still works
 *   multi      FI_MULTI_RECV: messages (sent before and after it is posted, one a rendezvous
 *              message) at aligned offsets of one buffer, released when under the minimum
 *   exit open  processes that exit with their domain open (libfabric unloads the provider) exit
 *              cleanly
 *   exit thread a process whose exit() runs on a provider thread (a signal handler) exits cleanly
 * `fi_checks badplanes` expects fi_domain to fail (a bad FI_MRC_* setting in the environment). */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "fi_checks: FAILED %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      exit(1);                                            \
    }                                                     \
  } while (0)

struct node {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  char name[64];
  size_t name_len;
};

static struct fi_info* hints_rdm(void) {
  struct fi_info* h = fi_allocinfo();
  h->caps = FI_MSG | FI_TAGGED;
  h->ep_attr->type = FI_EP_RDM;
  h->fabric_attr->prov_name = strdup("mrc");
  return h;
}

/* An endpoint from fi_getinfo(node, service, flags). */
static void open_node_at(struct node* n, const char* node, const char* service, uint64_t flags, uint64_t caps) {
  struct fi_info* h = hints_rdm();
  h->caps |= caps;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL;
  CHECK(fi_getinfo(FI_VERSION(1, 17), node, service, flags, h, &n->info) == 0, "fi_getinfo");
  fi_freeinfo(h);
  CHECK(fi_fabric(n->info->fabric_attr, &n->fabric, NULL) == 0, "fi_fabric");
  CHECK(fi_domain(n->fabric, n->info, &n->domain, NULL) == 0, "fi_domain");
  struct fi_av_attr av = {.type = FI_AV_TABLE};
  CHECK(fi_av_open(n->domain, &av, &n->av, NULL) == 0, "fi_av_open");
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = 128};
  CHECK(fi_cq_open(n->domain, &cq, &n->cq, NULL) == 0, "fi_cq_open");
  CHECK(fi_endpoint(n->domain, n->info, &n->ep, NULL) == 0, "fi_endpoint");
  CHECK(fi_ep_bind(n->ep, &n->av->fid, 0) == 0, "bind av");
  CHECK(fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
  CHECK(fi_enable(n->ep) == 0, "fi_enable");
  n->name_len = 1;
  CHECK(fi_getname(&n->ep->fid, n->name, &n->name_len) == -FI_ETOOSMALL && n->name_len == 32, "getname too small");
  n->name_len = sizeof n->name;
  CHECK(fi_getname(&n->ep->fid, n->name, &n->name_len) == 0, "fi_getname");
}

static void open_node_with(struct node* n, uint64_t caps) { open_node_at(n, NULL, NULL, 0, caps); }

static void open_node(struct node* n) { open_node_with(n, 0); }

static void close_node(struct node* n) {
  fi_close(&n->ep->fid);
  fi_close(&n->cq->fid);
  fi_close(&n->av->fid);
  fi_close(&n->domain->fid);
  fi_close(&n->fabric->fid);
  fi_freeinfo(n->info);
}

/* One completion (or error entry: returns -err) within `seconds`. */
static int wait_one(struct node* n, struct fi_cq_tagged_entry* e, int seconds) {
  const time_t end = time(NULL) + seconds;
  while (time(NULL) <= end) {
    ssize_t r = fi_cq_read(n->cq, e, 1);
    if (r == 1) return 0;
    if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      CHECK(fi_cq_readerr(n->cq, &err, 0) == 1, "readerr");
      e->op_context = err.op_context;
      e->len = err.olen;
      e->tag = err.tag;
      if (err.err_data != NULL)
        printf("  error entry: %s\n", fi_cq_strerror(n->cq, err.prov_errno, err.err_data, NULL, 0));
      return -err.err;
    }
    CHECK(r == -FI_EAGAIN, "fi_cq_read: %zd", r);
    usleep(100);
  }
  CHECK(0, "no completion within %d s", seconds);
  return 0;
}

/* One change to tagged RDM hints that the provider cannot honour: -FI_ENODATA. */
static void expect_refused(const char* what, void (*change)(struct fi_info*)) {
  struct fi_info* h = hints_rdm();
  struct fi_info* out = NULL;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  change(h);
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == -FI_ENODATA, "%s refused", what);
  fi_freeinfo(h);
}
static void tx_order_raw(struct fi_info* h) { h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW; }
static void rx_order_waw(struct fi_info* h) { h->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_WAW; }
static void comp_order_strict(struct fi_info* h) { h->tx_attr->comp_order = FI_ORDER_STRICT; }
static void shared_av_domain(struct fi_info* h) { h->domain_attr->caps = FI_SHARED_AV; }
static void shared_av_caps(struct fi_info* h) { h->caps |= FI_SHARED_AV; }
static void rma_no_mr_mode(struct fi_info* h) {
  h->caps |= FI_RMA;
  h->domain_attr->mr_mode = 0; /* from API 1.5: no mode bit allowed */
}
static void rma_without_prov_key(struct fi_info* h) {
  h->caps |= FI_RMA;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
}

/* Orders beyond FI_ORDER_SAS, shared AVs and registration modes short of what RMA needs are
 * refused; an answer's mr_mode holds only bits the hints allowed. */
static void check_refused_hints(void) {
  expect_refused("tx msg_order RAW", tx_order_raw);
  expect_refused("rx msg_order WAW", rx_order_waw);
  expect_refused("comp_order STRICT", comp_order_strict);
  expect_refused("domain caps FI_SHARED_AV", shared_av_domain);
  expect_refused("caps FI_SHARED_AV", shared_av_caps);
  expect_refused("RMA with mr_mode 0", rma_no_mr_mode);
  expect_refused("RMA without FI_MR_PROV_KEY", rma_without_prov_key);
  struct fi_info* h = hints_rdm();
  struct fi_info* out = NULL;
  h->tx_attr->msg_order = h->rx_attr->msg_order = FI_ORDER_SAS;
  const int allowed[] = {0, FI_MR_LOCAL | FI_MR_VIRT_ADDR,
                         FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT};
  for (int i = 0; i < 3; ++i) {
    h->domain_attr->mr_mode = allowed[i];
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == 0, "SAS offered (mr_mode %#x)", allowed[i]);
    CHECK((out->domain_attr->mr_mode & ~allowed[i]) == 0, "mr_mode %#x answered for %#x",
          out->domain_attr->mr_mode, allowed[i]);
    fi_freeinfo(out);
  }
  h->caps |= FI_RMA;
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == 0 && (out->caps & FI_RMA), "RMA offered");
  CHECK(out->domain_attr->mr_mode == (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY), "RMA's mr_mode");
  fi_freeinfo(out);
  fi_freeinfo(h);
}

static void check_hints(void) {
  struct fi_info* h = hints_rdm();
  struct fi_info* out = NULL;
  h->ep_attr->type = FI_EP_MSG;
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == -FI_ENODATA, "MSG endpoints refused");
  h->ep_attr->type = FI_EP_RDM;
  h->caps |= FI_ATOMIC;
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == -FI_ENODATA, "atomics refused");
  h->caps = FI_TAGGED;
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == 0, "tagged RDM offered");
  CHECK(out->ep_attr->type == FI_EP_RDM && (out->caps & FI_TAGGED) && out->domain_attr->cq_data_size >= 4,
        "offer: RDM, tagged, 4+ bytes of CQ data");
  fi_freeinfo(out);
  fi_freeinfo(h);
  check_refused_hints();
  printf("hints: ok\n");
}

static fi_addr_t insert(struct node* n, const void* name) {
  fi_addr_t a = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(n->av, name, 1, &a, 0, NULL) == 1, "fi_av_insert");
  return a;
}

/* FI_INJECT on fi_tsendmsg and fi_sendmsg: the buffer is free at return, and the send still
 * completes (only the inject calls produce no completion). */
static void check_inject_msg(struct node* n, fi_addr_t self) {
  int v = 5, got = 0;
  struct iovec iov = {&v, sizeof v};
  struct fi_context ctx;
  struct fi_cq_tagged_entry e;
  struct fi_msg_tagged t = {.msg_iov = &iov, .iov_count = 1, .addr = self, .tag = 66, .context = &ctx};
  CHECK(fi_tsendmsg(n->ep, &t, FI_INJECT) == 0, "tsendmsg FI_INJECT");
  v = 0;
  CHECK(wait_one(n, &e, 5) == 0 && e.op_context == &ctx && (e.flags & FI_SEND) && (e.flags & FI_TAGGED),
        "a tsendmsg with FI_INJECT completes");
  CHECK(fi_trecv(n->ep, &got, sizeof got, NULL, FI_ADDR_UNSPEC, 66, 0, &got) == 0, "trecv");
  CHECK(wait_one(n, &e, 5) == 0 && e.op_context == &got && got == 5, "the injected tagged message");
  v = 6;
  struct fi_msg m = {.msg_iov = &iov, .iov_count = 1, .addr = self, .context = &ctx};
  CHECK(fi_sendmsg(n->ep, &m, FI_INJECT) == 0, "sendmsg FI_INJECT");
  v = 0;
  CHECK(wait_one(n, &e, 5) == 0 && e.op_context == &ctx && (e.flags & FI_SEND) && (e.flags & FI_MSG),
        "a sendmsg with FI_INJECT completes");
  CHECK(fi_recv(n->ep, &got, sizeof got, NULL, FI_ADDR_UNSPEC, &got) == 0, "recv");
  CHECK(wait_one(n, &e, 5) == 0 && e.op_context == &got && got == 6, "the injected message");
  printf("inject msg: ok\n");
}

/* An error entry without error data (a cancelled receive): fi_cq_readerr sets err_data_size to 0
 * and writes nothing into the application's err_data buffer. */
static void check_readerr_without_data(struct node* n) {
  int in = 0;
  struct fi_context ctx;
  CHECK(fi_trecv(n->ep, &in, sizeof in, NULL, FI_ADDR_UNSPEC, 998, 0, &ctx) == 0, "trecv to cancel");
  CHECK(fi_cancel(&n->ep->fid, &ctx) == 0, "fi_cancel");
  struct fi_cq_tagged_entry e;
  ssize_t r;
  const time_t end = time(NULL) + 5;
  while ((r = fi_cq_read(n->cq, &e, 1)) == -FI_EAGAIN && time(NULL) <= end) usleep(100);
  CHECK(r == -FI_EAVAIL, "the cancel's error entry (%zd)", r);
  char data[64];
  memset(data, 'Z', sizeof data);
  struct fi_cq_err_entry err = {.err_data = data, .err_data_size = sizeof data};
  CHECK(fi_cq_readerr(n->cq, &err, 0) == 1 && err.err == FI_ECANCELED && err.op_context == &ctx, "readerr");
  CHECK(err.err_data_size == 0, "no error data: err_data_size 0 (%zu)", err.err_data_size);
  for (size_t i = 0; i < sizeof data; ++i) CHECK(data[i] == 'Z', "err_data's buffer written at %zu", i);
}

static void check_messages(struct node* n) {
  const fi_addr_t self = insert(n, n->name);
  char junk[32] = "not an mrc name";
  fi_addr_t bad = 0;
  CHECK(fi_av_insert(n->av, junk, 1, &bad, 0, NULL) == 0 && bad == FI_ADDR_NOTAVAIL, "a junk name is refused");
  struct fi_cq_tagged_entry e;
  /* unexpected: three tagged messages to self, then receives in reverse tag order. */
  int out[3] = {10, 11, 12}, in[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) CHECK(fi_tsend(n->ep, &out[i], sizeof(int), NULL, self, 100 + i, &out[i]) == 0, "tsend");
  for (int i = 0; i < 3; ++i) CHECK(wait_one(n, &e, 5) == 0 && (e.flags & FI_SEND), "send completion");
  for (int i = 2; i >= 0; --i) {
    CHECK(fi_trecv(n->ep, &in[i], sizeof(int), NULL, FI_ADDR_UNSPEC, 100 + i, 0, &in[i]) == 0, "trecv");
    CHECK(wait_one(n, &e, 5) == 0 && e.op_context == &in[i] && e.tag == (uint64_t)(100 + i), "recv by tag");
    CHECK(in[i] == 10 + i, "unexpected message data");
  }
  printf("self, unexpected: ok\n");
  /* truncate */
  char big[1000], small[10];
  memset(big, 'x', sizeof big);
  CHECK(fi_trecv(n->ep, small, sizeof small, NULL, FI_ADDR_UNSPEC, 7, 0, small) == 0, "trecv small");
  CHECK(fi_tsend(n->ep, big, sizeof big, NULL, self, 7, big) == 0, "tsend big");
  int got_trunc = 0, got_send = 0;
  for (int i = 0; i < 2; ++i) {
    const int r = wait_one(n, &e, 5);
    if (r == -FI_ETRUNC) got_trunc = e.op_context == small && e.len == sizeof big - sizeof small;
    if (r == 0) got_send = e.op_context == big;
  }
  CHECK(got_trunc && got_send, "FI_ETRUNC with the overflow length, and the send completes");
  printf("truncate: ok\n");
  /* peek, claim */
  struct fi_context ctx;
  struct iovec iov = {in, sizeof(int)};
  struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = 55, .context = &ctx};
  CHECK(fi_trecvmsg(n->ep, &m, FI_PEEK) == 0, "peek");
  CHECK(wait_one(n, &e, 5) == -FI_ENOMSG, "peek of nothing: FI_ENOMSG");
  CHECK(fi_tinject(n->ep, &out[1], sizeof(int), self, 55) == 0, "tinject");
  int r;
  do {
    CHECK(fi_trecvmsg(n->ep, &m, FI_PEEK | FI_CLAIM) == 0, "peek+claim");
  } while ((r = wait_one(n, &e, 5)) == -FI_ENOMSG);
  CHECK(r == 0 && e.len == sizeof(int) && e.tag == 55, "peek finds the message");
  in[0] = 0;
  CHECK(fi_trecvmsg(n->ep, &m, FI_CLAIM) == 0, "claim");
  CHECK(wait_one(n, &e, 5) == 0 && in[0] == 11, "claimed message received");
  printf("peek, claim: ok\n");
  /* cancel */
  CHECK(fi_trecv(n->ep, in, sizeof(int), NULL, FI_ADDR_UNSPEC, 999, 0, &ctx) == 0, "trecv to cancel");
  CHECK(fi_cancel(&n->ep->fid, &ctx) == 0, "fi_cancel");
  CHECK(wait_one(n, &e, 5) == -FI_ECANCELED && e.op_context == &ctx, "FI_ECANCELED");
  check_readerr_without_data(n);
  printf("cancel: ok\n");
  /* bad flags, bad address */
  struct fi_msg_tagged s = {.msg_iov = &iov, .iov_count = 1, .addr = self, .tag = 1};
  CHECK(fi_tsendmsg(n->ep, &s, 1ULL << 62) == -FI_EBADFLAGS, "unknown send flag");
  CHECK(fi_tsend(n->ep, in, sizeof(int), NULL, 12345, 1, NULL) == -FI_EINVAL, "send to an fi_addr not in the AV");
  printf("badflags: ok\n");
  check_inject_msg(n, self);
}

/* RMA writes to self: plain, with remote CQ data, and to a key that is not registered. */
static void check_rma(void) {
  struct node n;
  open_node_with(&n, FI_RMA);
  CHECK((n.info->caps & FI_WRITE) && (n.info->caps & FI_READ) && (n.info->caps & FI_REMOTE_READ),
        "RMA means reads and writes");
  const fi_addr_t self = insert(&n, n.name);
  enum { kBytes = 300000 };
  unsigned char* target = calloc(kBytes, 1);
  unsigned char* source = malloc(kBytes);
  for (int i = 0; i < kBytes; ++i) source[i] = (unsigned char)(i * 7 + 3);
  struct fid_mr* mr = NULL;
  CHECK(fi_mr_reg(n.domain, target, kBytes, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) == 0, "fi_mr_reg");
  const uint64_t key = fi_mr_key(mr);
  struct fi_cq_tagged_entry e;
  CHECK(fi_write(n.ep, source, kBytes, NULL, self, (uint64_t)(uintptr_t)target, key, source) == 0, "fi_write");
  CHECK(wait_one(&n, &e, 10) == 0 && e.op_context == source && (e.flags & FI_WRITE), "write completion");
  CHECK(memcmp(source, target, kBytes) == 0, "written bytes");
  memset(target, 0, 64);
  CHECK(fi_writedata(n.ep, source, 64, NULL, 0xabcd, self, (uint64_t)(uintptr_t)target, key, target) == 0, "writedata");
  int tx = 0, rx = 0;
  for (int i = 0; i < 2; ++i) {
    CHECK(wait_one(&n, &e, 10) == 0, "writedata completions");
    if (e.flags & FI_REMOTE_WRITE) rx = e.data == 0xabcd && (e.flags & FI_REMOTE_CQ_DATA) && memcmp(target, source, 64) == 0;
    else tx = e.op_context == target;
  }
  CHECK(tx && rx, "writedata: the writer's completion and the target's CQ data, after the bytes");
  CHECK(fi_write(n.ep, source, 64, NULL, self, (uint64_t)(uintptr_t)target, key + 1000, NULL) == 0, "bad-key write");
  CHECK(wait_one(&n, &e, 30) != 0, "a write to a key not registered completes in error");
  fi_close(&mr->fid);
  close_node(&n);
  free(target);
  free(source);
  printf("rma: ok\n");
}

/* RMA reads between two endpoints: whole, scattered, empty, and refused. */
static void check_read(void) {
  struct node a, b;
  open_node_with(&a, FI_RMA);
  open_node_with(&b, FI_RMA);
  const fi_addr_t to_b = insert(&a, b.name);
  enum { kBytes = 300000 };
  unsigned char* source = malloc(kBytes);
  unsigned char* target = calloc(kBytes, 1);
  for (int i = 0; i < kBytes; ++i) source[i] = (unsigned char)(i * 13 + 5);
  struct fid_mr *readable = NULL, *write_only = NULL;
  CHECK(fi_mr_reg(b.domain, source, kBytes, FI_REMOTE_READ, 0, 0, 0, &readable, NULL) == 0, "mr_reg read");
  CHECK(fi_mr_reg(b.domain, target, kBytes, FI_REMOTE_WRITE, 0, 0, 0, &write_only, NULL) == 0, "mr_reg write");
  const uint64_t at = (uint64_t)(uintptr_t)source, key = fi_mr_key(readable);
  unsigned char* into = calloc(kBytes, 1);
  struct fi_cq_tagged_entry e;
  CHECK(fi_read(a.ep, into, kBytes, NULL, to_b, at, key, into) == 0, "fi_read");
  CHECK(wait_one(&a, &e, 10) == 0 && e.op_context == into && (e.flags & FI_READ) && (e.flags & FI_RMA),
        "read completion");
  CHECK(memcmp(into, source, kBytes) == 0, "the bytes read");
  unsigned char part1[100], part2[200];
  struct iovec iov[2] = {{part1, sizeof part1}, {part2, sizeof part2}};
  CHECK(fi_readv(a.ep, iov, NULL, 2, to_b, at + 1000, key, part1) == 0, "fi_readv");
  CHECK(wait_one(&a, &e, 10) == 0 && e.op_context == part1, "readv completion");
  CHECK(memcmp(part1, source + 1000, 100) == 0 && memcmp(part2, source + 1100, 200) == 0, "the bytes readv scattered");
  CHECK(fi_read(a.ep, into, 0, NULL, to_b, at, key, &e) == 0, "an empty read");
  CHECK(wait_one(&a, &e, 10) == 0, "an empty read completes");
  /* refused: a key only open to writes, a range past the registration, an unknown key */
  CHECK(fi_read(a.ep, into, 64, NULL, to_b, (uint64_t)(uintptr_t)target, fi_mr_key(write_only), NULL) == 0, "read 1");
  CHECK(wait_one(&a, &e, 10) == -FI_EACCES, "a key the target did not open to reads: FI_EACCES");
  CHECK(fi_read(a.ep, into, 64, NULL, to_b, at + kBytes - 32, key, NULL) == 0, "read 2");
  CHECK(wait_one(&a, &e, 10) == -FI_EACCES, "a range past the registration: FI_EACCES");
  CHECK(fi_read(a.ep, into, 64, NULL, to_b, at, key + 999, NULL) == 0, "read 3");
  CHECK(wait_one(&a, &e, 10) == -FI_EACCES, "an unknown key: FI_EACCES");
  memset(into, 0, 64);
  CHECK(fi_read(a.ep, into, 64, NULL, to_b, at + 64, key, into) == 0, "read after refusals");
  CHECK(wait_one(&a, &e, 10) == 0 && memcmp(into, source + 64, 64) == 0, "the link still reads");
  CHECK(fi_readmsg(a.ep, &(struct fi_msg_rma){.msg_iov = iov, .iov_count = 1, .addr = to_b, .rma_iov_count = 1,
                                               .rma_iov = &(struct fi_rma_iov){at, 8, key}},
                   FI_INJECT) == -FI_EBADFLAGS, "an injected read: -FI_EBADFLAGS");
  /* A region opened to reads only is not opened to writes (the write fails the link: last). */
  CHECK(fi_write(a.ep, into, 64, NULL, to_b, at, key, NULL) == 0, "write to a read-only key");
  CHECK(wait_one(&a, &e, 30) != 0, "a write to a region opened to reads only completes in error");
  CHECK(source[0] == (unsigned char)5, "the read-only region is unchanged");
  fi_close(&readable->fid);
  fi_close(&write_only->fid);
  close_node(&a);
  close_node(&b);
  free(source);
  free(target);
  free(into);
  printf("read: ok\n");
}

/* FI_MULTI_RECV on one endpoint, messages to itself. */
static void check_multi_recv(struct node* n) {
  const fi_addr_t self = insert(n, n->name);
  size_t min = 64, len = sizeof min;
  CHECK(fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min) == 0, "setopt");
  min = 0;
  CHECK(fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, &len) == 0 && min == 64, "getopt");
  char out[41]; /* parts at 8-byte aligned offsets: 0, 48, 96, ... */
  memset(out, 'a', sizeof out);
  struct fi_cq_tagged_entry e;
  for (int i = 0; i < 2; ++i) { /* two before the buffer is posted: unexpected */
    out[0] = (char)i;
    CHECK(fi_send(n->ep, out, sizeof out, NULL, self, NULL) == 0, "send");
    CHECK(wait_one(n, &e, 5) == 0 && (e.flags & FI_SEND), "send completion");
  }
  _Alignas(8) char buffer[256];
  struct iovec iov = {buffer, sizeof buffer};
  struct fi_context ctx;
  struct fi_msg m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &ctx};
  CHECK(fi_recvmsg(n->ep, &m, FI_MULTI_RECV) == 0, "post multi-recv");
  for (int i = 2; i < 5; ++i) {
    out[0] = (char)i;
    CHECK(fi_send(n->ep, out, sizeof out, NULL, self, NULL) == 0, "send");
  }
  int received = 0, sends = 0, released_at = -1;
  while (received < 5 || sends < 3) {
    CHECK(wait_one(n, &e, 5) == 0, "completion");
    if (e.flags & FI_SEND) {
      ++sends;
      continue;
    }
    CHECK((e.flags & FI_RECV) && (e.flags & FI_MSG) && e.op_context == &ctx && e.len == sizeof out,
          "a part's completion names the multi-receive");
    CHECK((char*)e.buf == buffer + 48 * received && ((char*)e.buf)[0] == (char)received,
          "message %d at offset %d: at %d, first byte %d", received, 48 * received,
          (int)((char*)e.buf - buffer), ((char*)e.buf)[0]);
    if (e.flags & FI_MULTI_RECV) released_at = received;
    ++received;
  }
  CHECK(released_at == 4, "released with the part that leaves under 64 bytes (at %d)", released_at);
  /* A rendezvous-sized message into a fresh multi-receive. */
  enum { kBig = 100000 };
  char* big = malloc(kBig);
  char* space = malloc(3 * kBig);
  for (int i = 0; i < kBig; ++i) big[i] = (char)(i * 3);
  struct iovec v2 = {space, 3 * kBig};
  struct fi_msg m2 = {.msg_iov = &v2, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &ctx};
  CHECK(fi_recvmsg(n->ep, &m2, FI_MULTI_RECV) == 0, "post multi-recv 2");
  CHECK(fi_send(n->ep, big, kBig, NULL, self, big) == 0, "send big");
  int got = 0;
  for (int i = 0; i < 2; ++i) {
    CHECK(wait_one(n, &e, 10) == 0, "big completions");
    if (e.flags & FI_RECV)
      got = e.buf == space && e.len == kBig && !(e.flags & FI_MULTI_RECV) && memcmp(space, big, kBig) == 0;
  }
  CHECK(got, "a rendezvous message into a multi-receive");
  CHECK(fi_cancel(&n->ep->fid, &ctx) == 0 && wait_one(n, &e, 5) == -FI_ECANCELED, "cancel the rest");
  free(big);
  free(space);
  printf("multi: ok\n");
}

/* A message that arrives before its sender is in the receiver's AV (MPI adds peers lazily) is
 * still found by a receive directed at that sender once the sender is inserted, and ahead of the
 * sender's later messages. */
static void check_late_av(void) {
  struct node rx, tx;
  open_node_with(&rx, FI_DIRECTED_RECV);
  open_node(&tx);
  const fi_addr_t to_rx = insert(&tx, rx.name);
  int first = 1, second = 2222, got = 0;
  struct fi_cq_tagged_entry e;
  CHECK(fi_tsend(tx.ep, &first, sizeof first, NULL, to_rx, 5, NULL) == 0, "first send");
  CHECK(wait_one(&tx, &e, 10) == 0, "first send completes (the message is at the receiver)");
  const fi_addr_t from_tx = insert(&rx, tx.name);
  CHECK(fi_tsend(tx.ep, &second, sizeof second, NULL, to_rx, 5, NULL) == 0, "second send");
  CHECK(wait_one(&tx, &e, 10) == 0, "second send completes");
  CHECK(fi_trecv(rx.ep, &got, sizeof got, NULL, from_tx, 5, 0, NULL) == 0, "directed trecv");
  CHECK(wait_one(&rx, &e, 10) == 0 && got == 1, "the directed receive takes the first message (got %d)", got);
  CHECK(fi_trecv(rx.ep, &got, sizeof got, NULL, from_tx, 5, 0, NULL) == 0, "directed trecv");
  CHECK(wait_one(&rx, &e, 10) == 0 && got == 2222, "then the second");
  close_node(&tx);
  close_node(&rx);
  printf("late av: ok\n");
}

/* A peer inserted twice (Open MPI's MPI_Intercomm_create does) keeps one fi_addr, as libfabric's
 * own AV does: a receive directed at the second insert's fi_addr takes the peer's messages, and the
 * entry stays until it has been removed as often as inserted. */
static void check_av_duplicate(void) {
  struct node rx, tx;
  open_node_with(&rx, FI_DIRECTED_RECV);
  open_node(&tx);
  const fi_addr_t to_rx = insert(&tx, rx.name);
  struct fi_cq_tagged_entry e;
  int v = 31, got = 0;
  CHECK(fi_tsend(tx.ep, &v, sizeof v, NULL, to_rx, 9, NULL) == 0, "first send");
  CHECK(wait_one(&tx, &e, 10) == 0, "first send completes");
  const fi_addr_t first = insert(&rx, tx.name);
  CHECK(fi_trecv(rx.ep, &got, sizeof got, NULL, first, 9, 0, NULL) == 0, "trecv from the first insert");
  CHECK(wait_one(&rx, &e, 10) == 0 && got == 31, "message from the first insert");
  char both[64];
  memcpy(both, tx.name, 32);
  memcpy(both + 32, tx.name, 32);
  fi_addr_t again[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
  CHECK(fi_av_insert(rx.av, both, 2, again, 0, NULL) == 2, "insert the name twice more");
  CHECK(again[0] == first && again[1] == first, "a name already in the AV keeps its fi_addr (%lu, %lu, %lu)",
        (unsigned long)first, (unsigned long)again[0], (unsigned long)again[1]);
  v = 32;
  CHECK(fi_tsend(tx.ep, &v, sizeof v, NULL, to_rx, 9, NULL) == 0, "second send");
  CHECK(fi_trecv(rx.ep, &got, sizeof got, NULL, again[1], 9, 0, NULL) == 0, "trecv from the later insert");
  CHECK(wait_one(&rx, &e, 10) == 0 && got == 32, "a receive directed at the later insert takes the message");
  CHECK(wait_one(&tx, &e, 10) == 0, "second send completes");
  char back[32];
  size_t len = sizeof back;
  CHECK(fi_av_remove(rx.av, again, 2, 0) == 0, "remove two of three inserts");
  CHECK(fi_av_lookup(rx.av, first, back, &len) == 0 && memcmp(back, tx.name, 32) == 0, "still there");
  CHECK(fi_av_remove(rx.av, (fi_addr_t[]){first}, 1, 0) == 0, "remove the last insert");
  len = sizeof back;
  CHECK(fi_av_lookup(rx.av, first, back, &len) == -FI_EINVAL, "gone after as many removes as inserts");
  CHECK(fi_av_remove(rx.av, (fi_addr_t[]){first}, 1, 0) == -FI_EINVAL, "a removed entry cannot be removed");
  close_node(&tx);
  close_node(&rx);
  printf("av duplicate: ok\n");
}

/* fi_getinfo's node and service, as fabtests use them: with FI_SOURCE the server's address (its
 * endpoint listens there), without it the client's destination, which fi_av_insert takes and which
 * stands for whichever endpoint listens there (a receive directed at it takes the server's reply). */
static void check_node_service(void) {
  struct fi_info* h = hints_rdm();
  struct fi_info* out = NULL;
  CHECK(fi_getinfo(FI_VERSION(1, 17), "no-such-host.invalid", "23500", 0, h, &out) == -FI_ENODATA,
        "a node that does not resolve: -FI_ENODATA");
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &out) == 0, "fi_getinfo without node");
  CHECK(out->src_addr != NULL && out->src_addrlen == 32 && out->dest_addr == NULL,
        "a source address without node, no destination");
  fi_freeinfo(out);
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, "23502", 0, h, &out) == 0 && out->dest_addr != NULL &&
        memcmp((char*)out->dest_addr + 8, "\x7f\x00\x00\x01", 4) == 0, "a service alone: this host's loopback");
  fi_freeinfo(out);
  /* A node without a service names no endpoint (port 0); the answer, given back as hints (as
   * fi_multi_ep does for each endpoint it opens), is still one the provider takes. */
  CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.151", NULL, 0, h, &out) == 0 && out->dest_addr != NULL,
        "a node alone: a destination");
  struct fi_info* again = fi_dupinfo(out);
  struct fi_info* out2 = NULL;
  CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.151", NULL, 0, again, &out2) == 0,
        "fi_getinfo takes its own answer (a destination without a port) as hints");
  fi_freeinfo(out2);
  fi_freeinfo(again);
  fi_freeinfo(out);
  fi_freeinfo(h);
  struct node server, client;
  open_node_at(&server, "127.0.0.151", "23500", FI_SOURCE, 0);
  CHECK(server.info->src_addr != NULL && server.info->src_addrlen == 32 && server.info->dest_addr == NULL,
        "FI_SOURCE: node/service are the source address");
  CHECK(((unsigned char)server.name[6] << 8 | (unsigned char)server.name[7]) == 23500,
        "the endpoint listens at the service's port");
  open_node_at(&client, "127.0.0.151", "23500", 0, FI_DIRECTED_RECV);
  CHECK(client.info->dest_addr != NULL && client.info->dest_addrlen == 32, "without FI_SOURCE: the destination");
  fi_addr_t to_server = FI_ADDR_NOTAVAIL, by_service = FI_ADDR_NOTAVAIL;
  CHECK(fi_av_insert(client.av, client.info->dest_addr, 1, &to_server, 0, NULL) == 1, "insert dest_addr");
  CHECK(fi_av_insertsvc(client.av, "127.0.0.151", "23500", &by_service, 0, NULL) == 1 && by_service == to_server,
        "fi_av_insertsvc names the same entry");
  CHECK(fi_av_insertsvc(client.av, "no-such-host.invalid", "23500", &by_service, 0, NULL) == 0 &&
        by_service == FI_ADDR_NOTAVAIL, "fi_av_insertsvc of a node that does not resolve inserts nothing");
  struct fi_cq_tagged_entry e;
  char name[32];
  CHECK(fi_tsend(client.ep, client.name, 32, NULL, to_server, 3, NULL) == 0, "send the client's name");
  CHECK(fi_trecv(server.ep, name, 32, NULL, FI_ADDR_UNSPEC, 3, 0, NULL) == 0, "server trecv");
  CHECK(wait_one(&server, &e, 10) == 0 && memcmp(name, client.name, 32) == 0, "the server has the client's name");
  CHECK(wait_one(&client, &e, 10) == 0, "the client's send completes");
  const fi_addr_t to_client = insert(&server, name);
  int v = 0, reply = 4321;
  CHECK(fi_trecv(client.ep, &v, sizeof v, NULL, to_server, 4, 0, NULL) == 0, "client trecv from dest_addr");
  CHECK(fi_tsend(server.ep, &reply, sizeof reply, NULL, to_client, 4, NULL) == 0, "server reply");
  CHECK(wait_one(&client, &e, 10) == 0 && v == 4321, "the reply matches a receive directed at dest_addr");
  CHECK(wait_one(&server, &e, 10) == 0, "the reply's send completes");
  close_node(&server); /* first: its end of the connection stays in TIME_WAIT */
  close_node(&client);
  /* An endpoint opened again at the address of one just closed (fi_av_xfer does so). */
  open_node_at(&server, "127.0.0.151", "23500", FI_SOURCE, 0);
  close_node(&server);
  /* FI_SOURCE with a service and no node: the endpoint listens on every address of the host and
   * names its first plane's; a client reaches it by another of the host's addresses. */
  open_node_at(&server, NULL, "23501", FI_SOURCE, 0);
  CHECK(((unsigned char)server.name[6] << 8 | (unsigned char)server.name[7]) == 23501 &&
        memcmp(server.name + 8, "\x7f\x00\x00\x97", 4) == 0, "named by the first plane, at the service's port");
  open_node_at(&client, "127.0.0.1", "23501", 0, 0);
  CHECK(fi_av_insert(client.av, client.info->dest_addr, 1, &to_server, 0, NULL) == 1, "insert dest_addr");
  CHECK(fi_tsend(client.ep, &reply, sizeof reply, NULL, to_server, 5, NULL) == 0, "send by another address");
  CHECK(fi_trecv(server.ep, &v, sizeof v, NULL, FI_ADDR_UNSPEC, 5, 0, NULL) == 0, "server trecv");
  CHECK(wait_one(&server, &e, 10) == 0 && v == 4321, "the server takes it");
  close_node(&client);
  close_node(&server);
  printf("node, service: ok\n");
}

/* A child that opens an endpoint, hands its name over a pipe, takes one message and exits. */
static void check_vanish(struct node* n) {
  int names[2], go[2];
  CHECK(pipe(names) == 0 && pipe(go) == 0, "pipe");
  const pid_t child = fork();
  if (child == 0) {
    struct node c;
    open_node(&c);
    CHECK(write(names[1], c.name, 32) == 32, "child: write name");
    int v = 0;
    struct fi_cq_tagged_entry e;
    CHECK(fi_trecv(c.ep, &v, sizeof v, NULL, FI_ADDR_UNSPEC, 1, 0, NULL) == 0, "child: trecv");
    CHECK(wait_one(&c, &e, 10) == 0 && v == 77, "child: message");
    if (read(go[0], &v, 1) == 1) close_node(&c); /* closes cleanly when told to, else as a crash */
    _exit(0);
  }
  char name[32];
  CHECK(read(names[0], name, 32) == 32, "read child's name");
  const fi_addr_t peer = insert(n, name);
  int v = 77;
  struct fi_cq_tagged_entry e;
  CHECK(fi_tsend(n->ep, &v, sizeof v, NULL, peer, 1, &v) == 0, "send to child");
  CHECK(wait_one(n, &e, 10) == 0, "send to child completes");
  CHECK(write(go[1], "c", 1) == 1, "tell the child to close");
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited cleanly");
  const time_t start = time(NULL);
  int r = 0;
  for (int i = 0; i < 100 && r == 0; ++i) {
    CHECK(fi_tsend(n->ep, &v, sizeof v, NULL, peer, 1, &v) == 0, "send to a vanished peer is accepted");
    r = wait_one(n, &e, 30);
  }
  CHECK(r != 0, "sends to a vanished peer complete in error");
  printf("vanish: ok (error %d, %s, after %ld s)\n", -r, fi_strerror(-r), (long)(time(NULL) - start));
}

/* A peer that stops answering for a while without being gone: a send under way to it while it is
 * stopped must neither fail then nor after, and arrives once the peer runs again. */
static void check_stall(struct node* n) {
  int names[2];
  CHECK(pipe(names) == 0, "pipe");
  const pid_t child = fork();
  if (child == 0) {
    struct node c;
    open_node(&c);
    int v[2] = {0, 0};
    struct fi_cq_tagged_entry e;
    CHECK(fi_trecv(c.ep, &v[0], sizeof v[0], NULL, FI_ADDR_UNSPEC, 1, 0, NULL) == 0,
          "child: trecv");
    CHECK(fi_trecv(c.ep, &v[1], sizeof v[1], NULL, FI_ADDR_UNSPEC, 2, 0, NULL) == 0,
          "child: trecv");
    CHECK(write(names[1], c.name, 32) == 32, "child: write name");
    for (int i = 0; i < 2; ++i) CHECK(wait_one(&c, &e, 60) == 0, "child: message %d", i + 1);
    CHECK(v[0] == 1 && v[1] == 2, "child: received %d and %d, not 1 and 2", v[0], v[1]);
    close_node(&c);
    _exit(0);
  }
  char name[32];
  CHECK(read(names[0], name, 32) == 32, "read child's name");
  const fi_addr_t peer = insert(n, name);
  int one = 1, two = 2;
  struct fi_cq_tagged_entry e;
  CHECK(fi_tsend(n->ep, &one, sizeof one, NULL, peer, 1, &one) == 0, "send to child");
  CHECK(wait_one(n, &e, 30) == 0, "the first send completes (the link is up)");
  CHECK(kill(child, SIGSTOP) == 0, "stop the child");
  CHECK(fi_tsend(n->ep, &two, sizeof two, NULL, peer, 2, &two) == 0, "send to the stopped child");
  /* While the peer is stopped its datapath acknowledges nothing: the send must not fail. */
  int done = 0;
  for (const time_t end = time(NULL) + 3; time(NULL) < end;) {
    const ssize_t r = fi_cq_read(n->cq, &e, 1);
    if (r == -FI_EAVAIL) {
      struct fi_cq_err_entry err = {0};
      CHECK(fi_cq_readerr(n->cq, &err, 0) == 1, "readerr");
      CHECK(0, "a send to a peer stopped for under 3 s failed: %s",
            fi_cq_strerror(n->cq, err.prov_errno, err.err_data, NULL, 0));
    }
    CHECK(r == 1 || r == -FI_EAGAIN, "fi_cq_read: %zd", r);
    done += r == 1;
    usleep(1000);
  }
  CHECK(kill(child, SIGCONT) == 0, "let the child go on");
  if (!done)
    CHECK(wait_one(n, &e, 60) == 0, "the send to the stopped child completes once it runs");
  CHECK(e.op_context == &two, "the second send's completion");
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child received both messages");
  printf("stall: ok\n");
}

/* Processes that exit with their domain, endpoint and links open, while messages are under way:
 * libfabric unloads the provider at exit (fi_fini), so the provider must have stopped its threads
 * by then; each process must exit cleanly, never by a signal. Ten of them, since a thread that
 * outlives the provider's code crashes only when it runs at the wrong moment. */
static void check_exit_open(void) {
  for (int round = 0; round < 10; ++round) {
    const pid_t child = fork();
    if (child == 0) {
      struct node c;
      open_node(&c);
      const fi_addr_t self = insert(&c, c.name);
      static char big[200000];
      struct fi_cq_tagged_entry e;
      CHECK(fi_tsend(c.ep, big, 8, NULL, self, 1, NULL) == 0, "child: tsend");
      CHECK(wait_one(&c, &e, 10) == 0, "child: send completes");
      for (int i = 0; i < 4; ++i) CHECK(fi_tsend(c.ep, big, sizeof big, NULL, self, 2, NULL) == 0, "child: tsend");
      exit(0); /* without closing anything: libfabric's fi_fini unloads the provider */
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a process that exits with its domain open (round %d): %s %d",
          round, WIFSIGNALED(status) ? "signal" : "exit status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  printf("exit open: ok\n");
}

static void exit_now(int sig) {
  (void)sig;
  exit(0);
}

/* A process whose exit runs on one of the provider's threads (a signal handler that calls exit(),
 * the signal taken by whichever thread does not block it, as fabtests under `timeout` are ended):
 * the provider's cleanup, run by that thread, must not join it, and the process exits cleanly. */
static void check_exit_on_thread(void) {
  for (int round = 0; round < 5; ++round) {
    const pid_t child = fork();
    if (child == 0) {
      signal(SIGTERM, exit_now);
      struct node c;
      open_node(&c);
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      CHECK(pthread_sigmask(SIG_BLOCK, &term, NULL) == 0, "child: block SIGTERM");
      usleep(100000); /* (the threads idle, as in a test ended by `timeout`) */
      kill(getpid(), SIGTERM); /* taken by a provider thread, which started unblocked */
      sleep(20);
      _exit(3);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a process that exits on a provider thread (round %d): %s %d",
          round, WIFSIGNALED(status) ? "signal" : "exit status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  printf("exit on thread: ok\n");
}

enum { kRendezvousBytes = 1 << 20 };

/* Forks a process that sends `n` a rendezvous message (kRendezvousBytes, `tag`) and then only
 * makes progress, until killed; returns its pid once `n` has the announcement (a peek finds it). */
static pid_t announce_from_child(struct node* n, uint64_t tag) {
  int names[2];
  CHECK(pipe(names) == 0, "pipe");
  const pid_t child = fork();
  if (child == 0) {
    struct node c;
    open_node(&c);
    char name[32];
    CHECK(read(names[0], name, 32) == 32, "child: read name");
    const fi_addr_t to = insert(&c, name);
    char* big = calloc(kRendezvousBytes, 1);
    CHECK(fi_tsend(c.ep, big, kRendezvousBytes, NULL, to, tag, NULL) == 0, "child: tsend");
    for (;;) {
      struct fi_cq_tagged_entry e;
      (void)fi_cq_read(c.cq, &e, 1); /* progress, until killed */
      usleep(100);
    }
  }
  CHECK(write(names[1], n->name, 32) == 32, "write name");
  struct fi_context ctx;
  char* peeked = malloc(kRendezvousBytes);
  struct iovec iov = {peeked, kRendezvousBytes};
  struct fi_msg_tagged m = {.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = tag, .context = &ctx};
  struct fi_cq_tagged_entry e;
  int r;
  do {
    CHECK(fi_trecvmsg(n->ep, &m, FI_PEEK) == 0, "peek");
  } while ((r = wait_one(n, &e, 10)) == -FI_ENOMSG);
  CHECK(r == 0 && e.len == kRendezvousBytes, "the announced message is found");
  free(peeked);
  return child;
}

/* Takes the announced message of `tag` from a sender that `stop` (a signal) ended or froze: the
 * receive completes in error within seconds, naming the sender. */
static void expect_receive_fails(struct node* n, uint64_t tag, pid_t child, int stop, const char* what) {
  CHECK(kill(child, stop) == 0, "signal the sender");
  /* Until it is dead or stopped: a sender still running when the answer goes out could take it
   * and begin the payload. */
  CHECK(waitpid(child, NULL, stop == SIGKILL ? 0 : WUNTRACED) == child, "waitpid");
  char* buf = malloc(kRendezvousBytes);
  struct fi_context ctx;
  struct fi_cq_tagged_entry e;
  CHECK(fi_trecv(n->ep, buf, kRendezvousBytes, NULL, FI_ADDR_UNSPEC, tag, 0, &ctx) == 0, "trecv");
  const time_t start = time(NULL);
  const int r = wait_one(n, &e, 30);
  CHECK(r != 0 && e.op_context == &ctx, "the receive of a %s sender's message completes in error", what);
  printf("%s sender: ok (error %d after %ld s)\n", what, -r, (long)(time(NULL) - start));
  if (stop != SIGKILL) {
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
  }
  free(buf);
}

/* A sender that dies in the middle of a rendezvous message: its connection closes, and the
 * receive that took the message fails. */
static void check_sender_dies(struct node* n) {
  expect_receive_fails(n, 77, announce_from_child(n, 77), SIGKILL, "dead");
}

/* A sender that stops answering (SIGSTOP, its connection left open) after announcing a
 * rendezvous message: the receiver's answer goes unacknowledged, its link from the sender is
 * dropped after FI_MRC_PEER_TIMEOUT_MS, and the receive that took the message fails instead of
 * waiting for a FIN that cannot come. */
static void check_silent_sender(void) {
  struct node a;
  setenv("FI_MRC_PEER_TIMEOUT_MS", "500", 1);
  open_node(&a);
  unsetenv("FI_MRC_PEER_TIMEOUT_MS");
  expect_receive_fails(&a, 79, announce_from_child(&a, 79), SIGSTOP, "silent");
  close_node(&a);
}

/* Two hosts with different packet sizes: the link is refused, naming the setting. */
static void check_mtu_mismatch(void) {
  struct node a, b;
  setenv("FI_MRC_MTU", "1024", 1);
  open_node(&a);
  unsetenv("FI_MRC_MTU");
  open_node(&b);
  const fi_addr_t to_b = insert(&a, b.name);
  int v = 1;
  struct fi_cq_tagged_entry e;
  CHECK(fi_tsend(a.ep, &v, sizeof v, NULL, to_b, 1, NULL) == 0, "tsend");
  CHECK(wait_one(&a, &e, 10) == -FI_EIO, "a link between different FI_MRC_MTU is refused");
  close_node(&a);
  close_node(&b);
  printf("mtu mismatch: ok\n");
}

/* FI_MRC_STALL_REPORT_MS: a receive for tag 7 waits while a message of tag 5 sits unexpected;
 * nothing completes for a second, so the endpoint's state goes to stderr, once, naming both. Run
 * in a child whose stderr is a pipe. */
static void check_stall_report(void) {
  int err[2];
  CHECK(pipe(err) == 0, "pipe");
  const pid_t child = fork();
  if (child == 0) {
    dup2(err[1], 2);
    close(err[0]);
    setenv("FI_MRC_STALL_REPORT_MS", "200", 1);
    struct node c;
    open_node(&c);
    const fi_addr_t self = insert(&c, c.name);
    int five = 5, got5 = 0, got7 = 0;
    struct fi_cq_tagged_entry e;
    CHECK(fi_tsend(c.ep, &five, sizeof five, NULL, self, 5, &five) == 0, "child: tsend");
    CHECK(wait_one(&c, &e, 10) == 0 && e.op_context == &five, "child: the send completes");
    CHECK(fi_trecv(c.ep, &got7, sizeof got7, NULL, FI_ADDR_UNSPEC, 7, 0, &got7) == 0, "trecv 7");
    for (const time_t end = time(NULL) + 2; time(NULL) < end;) {
      CHECK(fi_cq_read(c.cq, &e, 1) == -FI_EAGAIN, "child: nothing completes while stalled");
      usleep(1000);
    }
    CHECK(fi_trecv(c.ep, &got5, sizeof got5, NULL, FI_ADDR_UNSPEC, 5, 0, &got5) == 0, "trecv 5");
    CHECK(wait_one(&c, &e, 10) == 0 && got5 == 5, "child: the unexpected message is taken");
    close_node(&c);
    _exit(0);
  }
  close(err[1]);
  static char text[65536];
  size_t used = 0;
  ssize_t r;
  while (used < sizeof text - 1 && (r = read(err[0], text + used, sizeof text - 1 - used)) > 0)
    used += (size_t)r;
  text[used] = 0;
  close(err[0]);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's checks passed:\n%s", text);
  const char* first = strstr(text, "mrc-fi: stall report, endpoint fi_mrc://");
  CHECK(first != NULL, "a stall report on stderr; got:\n%s", text);
  CHECK(strstr(first + 20, "stall report") == NULL, "one report per stall; got:\n%s", text);
  CHECK(strstr(text, "0 sends and 1 receives outstanding") != NULL, "the counts; got:\n%s", text);
  CHECK(strstr(text, "tagged from any tag 0x0000000000000007") != NULL,
        "the posted receive; got:\n%s", text);
  CHECK(strstr(text, "unexpected messages: 1,") != NULL &&
            strstr(text, "tagged from 0 tag 0x0000000000000005, 4 bytes") != NULL,
        "the unexpected message; got:\n%s", text);
  printf("stall report: ok\n");
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 2 && strcmp(argv[1], "badplanes") == 0) {
    /* With a bad FI_MRC_* setting in the environment, the domain must not open. */
    struct node n;
    struct fi_info* h = hints_rdm();
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &n.info) == 0, "fi_getinfo");
    CHECK(fi_fabric(n.info->fabric_attr, &n.fabric, NULL) == 0, "fi_fabric");
    const int r = fi_domain(n.fabric, n.info, &n.domain, NULL);
    CHECK(r < 0, "fi_domain opened with a bad setting");
    printf("badplanes: fi_domain refused: %s\n", fi_strerror(-r));
    return 0;
  }
  check_hints();
  check_exit_open();
  check_exit_on_thread();
  struct node n;
  open_node(&n);
  check_messages(&n);
  check_late_av();
  check_av_duplicate();
  check_node_service();
  check_mtu_mismatch();
  check_stall_report();
  check_vanish(&n);
  check_stall(&n);
  check_sender_dies(&n);
  check_silent_sender();
  check_rma();
  check_read();
  check_multi_recv(&n);
  /* refused: an endpoint that is closed. */
  struct node gone;
  open_node(&gone);
  char name[32];
  memcpy(name, gone.name, 32);
  close_node(&gone);
  const fi_addr_t a = insert(&n, name);
  int v = 1;
  struct fi_cq_tagged_entry e;
  CHECK(fi_tsend(n.ep, &v, sizeof v, NULL, a, 1, &v) == 0, "send to a closed endpoint is accepted");
  CHECK(wait_one(&n, &e, 30) != 0, "a send to a closed endpoint completes in error");
  printf("refused: ok\n");
  close_node(&n);
  printf("fi_checks: all passed\n");
  return 0;
}
