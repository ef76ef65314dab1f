// Completion queues, counters and event queues of the provider.
//
// A CQ holds entries in the tagged format, whatever format the application opened it with, and
// converts as it is read (an empty read yields the CPU: see read_from). Error entries wait in their
// own queue: while one waits, fi_cq_read answers -FI_EAVAIL, so the application reads it with
// fi_cq_readerr. Every queue is bounded by what feeds it: an endpoint accepts at most
// fi_tx_attr::size sends and fi_rx_attr::size receives at a time. Reads run progress on the domain
// first when its lock is free, so an application that polls does the work without waiting for the
// progress thread.
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "fabric/provider.h"

namespace mrc::fabric {
namespace {

void try_progress(Domain* d) {
  if (d == nullptr) return;
  std::unique_lock lock(d->lock, std::try_to_lock);
  if (lock.owns_lock()) d->progress();
}

size_t entry_bytes(fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_MSG:
      return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
      return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
      return sizeof(fi_cq_tagged_entry);
    default:
      return sizeof(fi_cq_entry);
  }
}

// fi_cq_tagged_entry's fields are a prefix-compatible superset of the other formats.
void store(fi_cq_format f, const fi_cq_tagged_entry& e, uint8_t* out) {
  std::memcpy(out, &e, entry_bytes(f));
}

ssize_t read_from(fid_cq* fid, void* buf, size_t count, fi_addr_t* src, bool drive = true) {
  Cq* cq = reinterpret_cast<Cq*>(fid);
  if (drive) try_progress(cq->domain);
  std::lock_guard lock(cq->lock);
  if (!cq->errors.empty()) return -FI_EAVAIL;
  if (cq->entries.empty()) {
    // Nothing yet: let another runnable task have the core. An MPI rank polls its CQ without
    // pause, and where ranks outnumber idle cores the kernel's packet work (veth, softirq) and
    // the peer rank would otherwise wait for the poller's time slice to end (milliseconds per
    // message); with a core to spare, sched_yield returns at once.
    sched_yield();
    return -FI_EAGAIN;
  }
  size_t n = 0;
  for (; n < count && !cq->entries.empty(); ++n) {
    store(cq->format, cq->entries.front().entry,
          static_cast<uint8_t*>(buf) + n * entry_bytes(cq->format));
    if (src != nullptr) src[n] = cq->entries.front().source;
    cq->entries.pop_front();
  }
  if (cq->wait_fd >= 0 && cq->entries.empty()) {
    uint64_t v;
    [[maybe_unused]] ssize_t r = ::read(cq->wait_fd, &v, sizeof v);
  }
  return static_cast<ssize_t>(n);
}

// fi_cq_read and fi_cq_readfrom. On a CQ without a wait object the application can only poll,
// so its reads tell the domain's progress thread to stand by (Domain::polled_ns).
ssize_t poll_from(fid_cq* fid, void* buf, size_t count, fi_addr_t* src) {
  Cq* cq = reinterpret_cast<Cq*>(fid);
  if (cq->wait_fd < 0 && cq->domain != nullptr)
    cq->domain->polled_ns.store(now_ns(), std::memory_order_relaxed);
  return read_from(fid, buf, count, src);
}

ssize_t cq_read(fid_cq* cq, void* buf, size_t count) {
  return poll_from(cq, buf, count, nullptr);
}

ssize_t cq_readerr(fid_cq* fid, fi_cq_err_entry* buf, uint64_t) {
  Cq* cq = reinterpret_cast<Cq*>(fid);
  std::lock_guard lock(cq->lock);
  if (cq->errors.empty()) return -FI_EAGAIN;
  fi_cq_err_entry e = cq->errors.front().first;
  cq->last_error = std::move(cq->errors.front().second);
  cq->errors.pop_front();
  // err_data: the reason as a C string, in the application's buffer if it gave one (API 1.5
  // and later), else in ours until the next read. An entry without a reason (a cancel, a peek
  // that found nothing) has err_data_size 0 and leaves the application's buffer alone, as
  // libfabric's own CQs do (its err_data pointer stays as given).
  const size_t room = buf->err_data_size;
  void* given = buf->err_data;
  if (cq->last_error.empty()) {
    e.err_data = room > 0 ? given : nullptr;
    e.err_data_size = 0;
  } else if (given != nullptr && room > 0) {
    const size_t n = std::min(room - 1, cq->last_error.size());
    std::memcpy(given, cq->last_error.data(), n);
    static_cast<char*>(given)[n] = '\0';
    e.err_data = given;
    e.err_data_size = n + 1;
  } else {
    e.err_data = cq->last_error.data();
    e.err_data_size = cq->last_error.size() + 1;
  }
  *buf = e;
  return 1;
}

ssize_t sread_from(fid_cq* fid, void* buf, size_t count, fi_addr_t* src, const void*,
                   int timeout_ms) {
  Cq* cq = reinterpret_cast<Cq*>(fid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // The first read runs progress; the waits after it leave the datapath to the threads that
  // answer the descriptors (Domain::before_blocking), re-reading each millisecond.
  for (bool first = true;; first = false) {
    const ssize_t n = read_from(fid, buf, count, src, first);
    if (n != -FI_EAGAIN) return n;
    if (first && cq->domain != nullptr) cq->domain->before_blocking();
    std::unique_lock lock(cq->lock);
    if (cq->signaled) {
      cq->signaled = false;
      return -FI_EAGAIN;
    }
    // Short waits (fi_cq_signal and the deadline are checked between them).
    const auto step = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    if (timeout_ms >= 0 && std::chrono::steady_clock::now() >= deadline) return -FI_EAGAIN;
    cq->changed.wait_until(lock, timeout_ms >= 0 ? std::min(step, deadline) : step);
  }
}

ssize_t cq_sread(fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  return sread_from(cq, buf, count, nullptr, cond, timeout);
}

int cq_signal(fid_cq* fid) {
  Cq* cq = reinterpret_cast<Cq*>(fid);
  std::lock_guard lock(cq->lock);
  cq->signaled = true;
  cq->changed.notify_all();
  return 0;
}

const char* cq_strerror(fid_cq*, int prov_errno, const void* err_data, char* buf, size_t len) {
  const char* text =
      err_data != nullptr ? static_cast<const char*>(err_data) : fi_strerror(prov_errno);
  if (buf != nullptr && len > 0) {
    std::strncpy(buf, text, len - 1);
    buf[len - 1] = '\0';
  }
  return text;
}

int cq_close(fid* f) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  if (cq->wait_fd >= 0) close(cq->wait_fd);
  delete cq;
  return 0;
}

int cq_control(fid* f, int command, void* arg) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  if (command != FI_GETWAIT) return -FI_ENOSYS;
  if (cq->wait_fd < 0) return -FI_ENODATA;
  *static_cast<int*>(arg) = cq->wait_fd;
  return 0;
}

fi_ops cq_fi_ops{sizeof(fi_ops), cq_close, no_bind, cq_control, no_ops_open, no_tostr, no_ops_set};
fi_ops_cq cq_ops{sizeof(fi_ops_cq), cq_read,    poll_from, cq_readerr,
                 cq_sread,          sread_from, cq_signal, cq_strerror};

}  // namespace

void Cq::push(const CqEntry& e) {
  std::lock_guard guard(lock);
  entries.push_back(e);
  if (wait_fd >= 0 && entries.size() == 1) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wait_fd, &one, sizeof one);
  }
  changed.notify_all();
}

void Cq::push_error(const fi_cq_err_entry& e, std::string why) {
  std::lock_guard guard(lock);
  errors.emplace_back(e, std::move(why));
  if (wait_fd >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wait_fd, &one, sizeof one);
  }
  changed.notify_all();
}

int open_cq(fid_domain* domain, fi_cq_attr* attr, fid_cq** out, void* context) {
  if (attr == nullptr) return -FI_EINVAL;
  if (attr->format > FI_CQ_FORMAT_TAGGED || attr->wait_obj == FI_WAIT_SET ||
      attr->wait_obj == FI_WAIT_MUTEX_COND || attr->wait_obj == FI_WAIT_POLLFD ||
      (attr->flags & FI_AFFINITY) != 0)
    return -FI_ENOSYS;
  auto* cq = new Cq();
  cq->domain = reinterpret_cast<Domain*>(domain);
  cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
  if (attr->wait_obj == FI_WAIT_FD || attr->wait_obj == FI_WAIT_UNSPEC) {
    cq->wait_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (cq->wait_fd < 0) {
      delete cq;
      return -FI_ENOMEM;
    }
  }
  init_fid(cq->fid, FI_CLASS_CQ, context, &cq_fi_ops, &cq_ops);
  *out = &cq->fid;
  return 0;
}

// --- counters ---

namespace {

// A counter has no wait object the application could sleep on but fi_cntr_wait, so its reads
// are polls: they run progress and tell the progress thread to stand by, as CQ reads do.
uint64_t cntr_read(fid_cntr* f) {
  Cntr* c = reinterpret_cast<Cntr*>(f);
  if (c->domain != nullptr) {
    c->domain->polled_ns.store(now_ns(), std::memory_order_relaxed);
    try_progress(c->domain);
  }
  std::lock_guard lock(c->lock);
  return c->value;
}
uint64_t cntr_readerr(fid_cntr* f) {
  Cntr* c = reinterpret_cast<Cntr*>(f);
  std::lock_guard lock(c->lock);
  return c->errors;
}
int cntr_add(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->add(v, false);
  return 0;
}
int cntr_adderr(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->add(v, true);
  return 0;
}
int cntr_set(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->set(v, false);
  return 0;
}
int cntr_seterr(fid_cntr* f, uint64_t v) {
  reinterpret_cast<Cntr*>(f)->set(v, true);
  return 0;
}
int cntr_wait(fid_cntr* f, uint64_t threshold, int timeout_ms) {
  Cntr* c = reinterpret_cast<Cntr*>(f);
  if (c->domain != nullptr) c->domain->before_blocking();
  std::unique_lock lock(c->lock);
  const uint64_t errors = c->errors;
  const auto done = [&] { return c->value >= threshold || c->errors != errors; };
  if (timeout_ms < 0)
    c->changed.wait(lock, done);
  else if (!c->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), done))
    return -FI_ETIMEDOUT;
  return c->value >= threshold ? 0 : -FI_EAVAIL;
}
int cntr_close(fid* f) {
  delete reinterpret_cast<Cntr*>(f);
  return 0;
}

fi_ops cntr_fi_ops{sizeof(fi_ops), cntr_close, no_bind,   no_control,
                   no_ops_open,    no_tostr,   no_ops_set};
fi_ops_cntr cntr_ops{sizeof(fi_ops_cntr), cntr_read,   cntr_readerr, cntr_add, cntr_set,
                     cntr_wait,           cntr_adderr, cntr_seterr};

}  // namespace

void Cntr::add(uint64_t n, bool error) {
  std::lock_guard guard(lock);
  (error ? errors : value) += n;
  changed.notify_all();
}

void Cntr::set(uint64_t n, bool error) {
  std::lock_guard guard(lock);
  (error ? errors : value) = n;
  changed.notify_all();
}

int open_cntr(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** out, void* context) {
  if (attr != nullptr && (attr->events != FI_CNTR_EVENTS_COMP || attr->wait_obj == FI_WAIT_SET))
    return -FI_ENOSYS;
  auto* c = new Cntr();
  c->domain = reinterpret_cast<Domain*>(domain);
  init_fid(c->fid, FI_CLASS_CNTR, context, &cntr_fi_ops, &cntr_ops);
  *out = &c->fid;
  return 0;
}

// --- event queues: the provider raises no events on RDM endpoints; fi_eq_write works ---

namespace {

ssize_t eq_read_impl(Eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  if (eq->events.empty()) return -FI_EAGAIN;
  const Eq::Event& e = eq->events.front();
  if (len < e.bytes.size()) return -FI_ETOOSMALL;
  if (event != nullptr) *event = e.type;
  std::memcpy(buf, e.bytes.data(), e.bytes.size());
  const auto n = static_cast<ssize_t>(e.bytes.size());
  if ((flags & FI_PEEK) == 0) eq->events.pop_front();
  return n;
}
ssize_t eq_read(fid_eq* f, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  std::lock_guard lock(eq->lock);
  return eq_read_impl(eq, event, buf, len, flags);
}
ssize_t eq_sread(fid_eq* f, uint32_t* event, void* buf, size_t len, int timeout_ms,
                 uint64_t flags) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  std::unique_lock lock(eq->lock);
  const auto ready = [&] { return !eq->events.empty(); };
  if (timeout_ms < 0)
    eq->changed.wait(lock, ready);
  else
    eq->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  return eq_read_impl(eq, event, buf, len, flags);
}
ssize_t eq_readerr(fid_eq*, fi_eq_err_entry*, uint64_t) {
  return -FI_EAGAIN;
}
ssize_t eq_write(fid_eq* f, uint32_t event, const void* buf, size_t len, uint64_t) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  std::lock_guard lock(eq->lock);
  if (eq->events.size() >= kQueueSize) return -FI_EAGAIN;
  const auto* b = static_cast<const uint8_t*>(buf);
  eq->events.push_back({event, std::vector<uint8_t>(b, b + len)});
  eq->changed.notify_all();
  return static_cast<ssize_t>(len);
}
const char* eq_strerror(fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
  return cq_strerror(nullptr, prov_errno, nullptr, buf, len);
}
int eq_close(fid* f) {
  delete reinterpret_cast<Eq*>(f);
  return 0;
}

fi_ops eq_fi_ops{sizeof(fi_ops), eq_close, no_bind, no_control, no_ops_open, no_tostr, no_ops_set};
fi_ops_eq eq_ops{sizeof(fi_ops_eq), eq_read, eq_readerr, eq_write, eq_sread, eq_strerror};

}  // namespace

int open_eq(fid_fabric*, fi_eq_attr* attr, fid_eq** out, void* context) {
  if (attr != nullptr && (attr->wait_obj == FI_WAIT_SET || attr->wait_obj == FI_WAIT_FD))
    return -FI_ENOSYS;
  auto* eq = new Eq();
  init_fid(eq->fid, FI_CLASS_EQ, context, &eq_fi_ops, &eq_ops);
  *out = &eq->fid;
  return 0;
}

}  // namespace mrc::fabric
