// Verbs completion queues, completion channels and asynchronous events of the software verbs
// device. A consumer of MRC (an NCCL net plugin, say) creates a plain verbs CQ on the mrc
// context next to its MRC objects, and waits for the device's asynchronous events with
// ibv_get_async_event; verbs.h's ibv_poll_cq and ibv_req_notify_cq are inline functions calling
// through the context's ops, which fill_context_ops sets. A SoftCq is a ring of ibv_wc that
// whatever reports into it pushes to (SoftCq::push), with an MRC CQ behind it once a verbs RC
// QP reports into it (verbs_qp.cc; ibv_poll_cq drains both); the device's asynchronous events come
// from Nic::after_progress, the same events mrc_get_async_event delivers.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>

#include "ocp/objects.h"
#include "ocp/ocp_internal.h"

using namespace mrc;
using namespace mrc::ocp;

namespace {

constexpr int kMaxVerbsCqe = 1 << 20;

// Under cq.mutex: one event on the CQ's channel; the CQ is disarmed until the next request.
void signal_locked(SoftCq& cq) {
  cq.armed = false;
  ++cq.events_delivered;
  SoftCq* p = &cq;
  (void)!write(cq.channel->write_fd, &p,
               sizeof p);  // NOLINT(bugprone-sizeof-expression): the pointer is the message
}

// Completions pushed into the ring first, then those of the backing MRC CQ (the verbs RC QPs'
// completions, verbs_qp.cc), which also runs a round of the datapath when it is empty.
int poll_cq(ibv_cq* handle, int num_entries, ibv_wc* wc) {
  SoftCq* cq = soft_cq(handle);
  if (cq == nullptr || num_entries < 0 || (num_entries > 0 && wc == nullptr))
    return fail(EINVAL, -1);
  int done = 0;
  {
    std::lock_guard lock(cq->mutex);
    while (done < num_entries && !cq->entries.empty()) {
      wc[done++] = cq->entries.front();
      cq->entries.pop_front();
    }
  }
  mrc_cq* backing = cq->backing.load(std::memory_order_acquire);
  if (backing == nullptr || done == num_entries) return done;
  // Empty: a round of the datapath beside the progress thread, which keeps running, since a
  // verbs program may next wait without calling in (ib_write_lat spins on its buffer). With
  // several shards their threads run the rounds (as for mrc_poll_cq).
  if (!backing->any_ready()) {
    Nic& nic = *cq->owner->nic;
    if (nic.shards() == 1) nic.shard(0).assist();
    if (!backing->any_ready()) return done;
  }
  return done + poll_completions(*backing, num_entries - done, wc + done);
}

int req_notify_cq(ibv_cq* handle, int solicited_only) {
  (void)solicited_only;  // every completion counts
  SoftCq* cq = soft_cq(handle);
  if (cq == nullptr) return EINVAL;
  std::lock_guard lock(cq->mutex);
  if (cq->channel == nullptr) return 0;  // nothing to tell: as verbs, no error
  cq->armed = true;
  // Completions already waiting are announced now; later ones of the backing CQ when it turns
  // non-empty (Nic::on_completions -> SoftCq::notify).
  mrc_cq* backing = cq->backing.load(std::memory_order_acquire);
  if (!cq->entries.empty() || (backing != nullptr && backing->any_ready())) signal_locked(*cq);
  return 0;
}

}  // namespace

namespace mrc::ocp {

bool SoftCq::push(const ibv_wc& wc) {
  std::lock_guard lock(mutex);
  if (entries.size() >= capacity) {
    overrun = true;
    return false;
  }
  entries.push_back(wc);
  if (armed && channel != nullptr) signal_locked(*this);
  return true;
}

void SoftCq::notify() {
  std::lock_guard lock(mutex);
  if (armed && channel != nullptr) signal_locked(*this);
}

SoftCq* soft_cq(ibv_cq* cq) {
  if (cq == nullptr || !ours(cq->context)) return nullptr;
  auto* soft = reinterpret_cast<SoftCq*>(cq);
  return soft->magic == kMagicVerbsCq ? soft : nullptr;
}

SoftChannel* soft_channel(ibv_comp_channel* channel) {
  if (channel == nullptr || !ours(channel->context)) return nullptr;
  auto* soft = reinterpret_cast<SoftChannel*>(channel);
  return soft->magic == kMagicVerbsChannel ? soft : nullptr;
}

void fill_context_ops(ibv_context_ops& ops) {
  ops.poll_cq = poll_cq;
  ops.req_notify_cq = req_notify_cq;
}

void say_once(const std::string& text) {
  static std::mutex mutex;
  static auto& said = *new std::set<std::string>();
  std::lock_guard lock(mutex);
  if (said.insert(text).second) std::fprintf(stderr, "mrc: %s\n", text.c_str());
}

}  // namespace mrc::ocp

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_create_comp_channel, "IBVERBS_1.0");
    return next != nullptr ? next(context) : fail<ibv_comp_channel*>(EINVAL, nullptr);
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  (void)fcntl(fds[1], F_SETFL, O_NONBLOCK);  // a push never blocks on it
  auto* ch = new SoftChannel();
  ch->owner = soft;
  ch->channel.context = context;
  ch->channel.fd = fds[0];
  ch->write_fd = fds[1];
  auto locks = soft->nic->lock_all();
  ++soft->channels;
  return &ch->channel;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  SoftChannel* ch = soft_channel(channel);
  if (ch == nullptr) {
    auto next = NEXT(ibv_destroy_comp_channel, "IBVERBS_1.0");
    return next != nullptr ? next(channel) : EINVAL;
  }
  {
    auto locks = ch->owner->nic->lock_all();
    if (ch->cqs > 0) return fail(EBUSY, EBUSY);
    --ch->owner->channels;
    ch->magic = kDead;
  }
  close(ch->channel.fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_create_cq, "IBVERBS_1.1");
    return next != nullptr ? next(context, cqe, cq_context, channel, comp_vector)
                           : fail<ibv_cq*>(EINVAL, nullptr);
  }
  SoftChannel* ch = soft_channel(channel);
  if (cqe < 1 || cqe > kMaxVerbsCqe || comp_vector != 0 || (channel != nullptr && ch == nullptr) ||
      (ch != nullptr && ch->owner != soft))
    return fail<ibv_cq*>(EINVAL, nullptr);
  if (soft->nic->remote())
    return fail<ibv_cq*>(refuse_data_path(*soft->nic), nullptr);  // controller-only
  auto* cq = new SoftCq();
  cq->owner = soft;
  cq->channel = ch;
  cq->capacity = static_cast<size_t>(cqe);
  cq->cq.context = context;
  cq->cq.channel = channel;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = cqe;
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  auto locks = soft->nic->lock_all();
  ++soft->cqs;
  if (ch != nullptr) ++ch->cqs;
  return &cq->cq;
}

int ibv_destroy_cq(ibv_cq* handle) {
  SoftCq* cq = soft_cq(handle);
  if (cq == nullptr) {
    auto next = NEXT(ibv_destroy_cq, "IBVERBS_1.1");
    return next != nullptr ? next(handle) : EINVAL;
  }
  {
    auto locks = cq->owner->nic->lock_all();
    std::lock_guard lock(cq->mutex);
    if (cq->users > 0 || cq->events_delivered != cq->events_acked) return fail(EBUSY, EBUSY);
  }
  // No verbs QP reports into it any more: its backing CQ goes first (it takes every shard's
  // lock).
  if (mrc_cq* backing = cq->backing.exchange(nullptr); backing != nullptr)
    if (mrc_destroy_cq(backing) != 0) return fail(EBUSY, EBUSY);
  {
    auto locks = cq->owner->nic->lock_all();
    std::lock_guard lock(cq->mutex);
    if (cq->channel != nullptr) --cq->channel->cqs;
    --cq->owner->cqs;
    cq->magic = kDead;
  }
  pthread_mutex_destroy(&cq->cq.mutex);
  pthread_cond_destroy(&cq->cq.cond);
  delete cq;
  return 0;
}

int ibv_resize_cq(ibv_cq* handle, int cqe) {
  SoftCq* cq = soft_cq(handle);
  if (cq == nullptr) {
    auto next = NEXT(ibv_resize_cq, "IBVERBS_1.1");
    return next != nullptr ? next(handle, cqe) : EINVAL;
  }
  std::lock_guard lock(cq->mutex);
  if (cqe < 1 || cqe > kMaxVerbsCqe || static_cast<size_t>(cqe) < cq->entries.size())
    return fail(EINVAL, EINVAL);
  cq->capacity = static_cast<size_t>(cqe);
  cq->cq.cqe = cqe;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  SoftChannel* ch = soft_channel(channel);
  if (ch == nullptr) {
    auto next = NEXT(ibv_get_cq_event, "IBVERBS_1.1");
    return next != nullptr ? next(channel, cq, cq_context) : fail(EINVAL, -1);
  }
  if (cq == nullptr || cq_context == nullptr) return fail(EINVAL, -1);
  uintptr_t raw = 0;  // the channel carries SoftCq pointers, written whole
  const ssize_t n = read(ch->channel.fd, &raw, sizeof raw);  // EAGAIN if made non-blocking
  if (n != static_cast<ssize_t>(sizeof raw)) return n < 0 ? -1 : fail(EIO, -1);
  auto* got = reinterpret_cast<SoftCq*>(raw);
  *cq = &got->cq;
  *cq_context = got->cq.cq_context;
  return 0;
}

void ibv_ack_cq_events(ibv_cq* handle, unsigned int nevents) {
  SoftCq* cq = soft_cq(handle);
  if (cq == nullptr) {
    if (auto next = NEXT(ibv_ack_cq_events, "IBVERBS_1.1"); next != nullptr && handle != nullptr)
      next(handle, nevents);
    return;
  }
  std::lock_guard lock(cq->mutex);
  cq->events_acked = std::min(cq->events_acked + nevents, cq->events_delivered);
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  SoftContext* soft = soft_context(context);
  if (soft == nullptr) {
    auto next = NEXT(ibv_get_async_event, "IBVERBS_1.1");
    return next != nullptr ? next(context, event) : fail(EINVAL, -1);
  }
  if (event == nullptr) return fail(EINVAL, -1);
  // Blocks until the device has an event (a QP entering ERROR, a port going down or up);
  // closing the device wakes it with EBADF, as closing libibverbs's async_fd would.
  return soft->async.wait_pop(*event) ? 0 : fail(EBADF, -1);
}

void ibv_ack_async_event(ibv_async_event* event) {
  if (event == nullptr) return;
  ibv_context* owner = nullptr;  // the context of the event's object, if it has one
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      owner = event->element.cq != nullptr ? event->element.cq->context : nullptr;
      break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      owner = event->element.qp != nullptr ? event->element.qp->context : nullptr;
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      owner = event->element.srq != nullptr ? event->element.srq->context : nullptr;
      break;
    case IBV_EVENT_WQ_FATAL:
      owner = event->element.wq != nullptr ? event->element.wq->context : nullptr;
      break;
    default:
      break;  // port and device events: nothing to release
  }
  if (ours(owner)) return;  // nothing waits for the acknowledgement of an mrc event
  if (auto next = NEXT(ibv_ack_async_event, "IBVERBS_1.1"); next != nullptr) next(event);
}

}  // extern "C"
