// Moving messages over links (link.h, wire.h): fragments into slots, slots out in order, and
// credits back.
//
// Sender: while the link has a credit (a free receiver slot) and the staging slot of that index
// is no longer being written, the front message's next fragment is copied into the staging slot
// behind a SlotHeader and written into the receiver's slot, immediate = slot. A message holds
// its place in the link's queue until its last fragment is posted, so messages never
// interleave. Its send completes when the credit for its last slot returns: the receiver has
// taken the message (FI_DELIVERY_COMPLETE).
//
// Receiver: slots complete in order (RQ-MSN order); a completion for any slot but the next one
// breaks the link. Taking a slot checks its header (check_header), routes a first fragment to
// a posted receive or the unexpected store, copies the payload, and completes the message at
// its last fragment. A first fragment that neither a receive nor the store can take stops the
// link there; it resumes when a receive is posted or the store drains.
//
// Rendezvous messages (wire.h) post an RTS instead and wait for the receiver's CTS; then their
// payload is written by RDMA WRITE and a FIN fragment, ahead of the queue, finishes them. RMA
// writes go straight onto the queue pair in queue order.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fabric/provider.h"

namespace mrc::fabric {

Registered::~Registered() {
  if (context != nullptr && mr.lkey != 0) (void)context->deregister_memory(mr.lkey);
  std::free(bytes);
}

namespace {

constexpr uint64_t kRmaWr = ~1ull;  // wr_id of an RMA write (slots' wr_ids are their index)

// Posts `op`'s RDMA WRITE (its gather list to remote_address, rkey); false if the queue pair is
// full or the post failed (the link then failed). Unsignalled writes complete nothing (the
// engine queues completions for signalled ones only), so kRmaWr completions are exactly those of
// rma_in_flight, in post order.
bool post_write_of(TxLink& link, SendOp& op, bool signaled) {
  auto posted = link.qp->post_write(kRmaWr, op.local, op.remote_address, op.rkey, signaled);
  if (posted.ok()) return true;
  if (posted.error().code != Errc::kResourceExhausted)
    fail_link(link,
              "cannot post a write to " + to_string(link.peer) + ": " + posted.error().message);
  return false;
}

// Posts the front op's RDMA WRITE; false if the queue pair is full. A write without remote CQ
// data is then done with the link's slots; one with data goes on to its notice fragment.
bool post_rma_write(TxLink& link) {
  SendOp& op = *link.queue.front();
  if (!post_write_of(link, op, /*signaled=*/!op.has_data)) return false;
  op.written = true;
  if (!op.has_data) {
    link.rma_in_flight.push_back(std::move(link.queue.front()));
    link.queue.pop_front();
  }
  return true;
}

// The header of `op`'s next fragment, of `chunk` payload bytes.
SlotHeader next_header(const SendOp& op, uint64_t chunk, bool last) {
  SlotHeader h;
  if (op.read) {  // the target's range; the payload, a CtsRecord, says where the bytes go
    h.flags = kRead | kFirst | kLast;
    h.fragment_bytes = sizeof(CtsRecord);
    h.message_bytes = op.buffer.bytes;
    h.offset = op.rendezvous_index;
    h.tag = op.remote_address;
    h.data = op.rkey;
    return h;
  }
  h.tag = op.tag;
  h.data = op.data;
  const uint32_t kind = (op.tagged ? kTagged : 0u) | (op.has_data ? kHasData : 0u);
  if (op.rendezvous) {
    h.flags = (op.cts ? kFin : kRts | kind) | kFirst | kLast;
    h.message_bytes = op.cts ? 0 : op.buffer.bytes;
    h.offset = op.rendezvous_index;
    return h;
  }
  h.flags = kind | (op.started ? 0u : kFirst) | (last ? kLast : 0u) | (op.rma ? kRmaData : 0u);
  h.fragment_bytes = static_cast<uint32_t>(chunk);
  h.message_bytes = op.rma ? 0 : op.buffer.bytes;  // a write's notice carries no payload
  h.offset = op.posted_bytes;
  return h;
}

// Builds `op`'s next fragment at `at` (header and payload); returns the payload bytes taken from
// its buffer and the fragment's length, and whether it is the op's last.
struct Built {
  uint64_t chunk = 0;
  uint32_t length = 0;
  bool last = true;
};
Built build_fragment(const TxLink& link, const SendOp& op, uint8_t* at) {
  if (op.read) {  // a read request: where the target's bytes go
    const SlotHeader h = next_header(op, 0, true);
    const CtsRecord destination{op.destination, op.buffer.bytes, op.destination_rkey, 0};
    std::memcpy(at, &h, sizeof h);
    std::memcpy(at + sizeof h, &destination, sizeof destination);
    return {0, sizeof h + sizeof destination, true};
  }
  const uint64_t total = op.rma || op.rendezvous ? 0 : op.buffer.bytes;
  const uint64_t chunk =
      std::min<uint64_t>(link.slot_bytes - sizeof(SlotHeader), total - op.posted_bytes);
  const bool last = op.posted_bytes + chunk == total;
  const SlotHeader h = next_header(op, chunk, last);
  std::memcpy(at, &h, sizeof h);
  op.buffer.read(op.posted_bytes, at + sizeof h, chunk);
  return {chunk, static_cast<uint32_t>(sizeof h + chunk), last};
}

// Posts the next fragment of `from`'s front op into slot `slot`; false if the queue pair is full.
bool post_fragment(TxLink& link, uint32_t slot, std::deque<std::unique_ptr<SendOp>>& from) {
  SendOp& op = *from.front();
  uint8_t* at = link.staging.bytes + size_t{slot} * link.slot_bytes;
  const auto [chunk, length, last] = build_fragment(link, op, at);
  const Sge sge{reinterpret_cast<uint64_t>(at), length, link.staging.mr.lkey};
  auto posted = link.qp->post_write_imm(
      slot, {&sge, 1}, link.ring_address + uint64_t{slot} * link.slot_bytes, link.ring_rkey, slot);
  if (!posted.ok()) {
    if (posted.error().code != Errc::kResourceExhausted)
      fail_link(link, "cannot post to " + to_string(link.peer) + ": " + posted.error().message);
    return false;
  }
  op.posted_bytes += chunk;
  op.started = true;
  if ((op.rendezvous && !op.cts) || op.read) {  // an RTS or a read: the op waits for its answer
    link.awaiting_cts[op.rendezvous_index] = std::move(from.front());
    from.pop_front();
    link.in_flight.push_back(nullptr);
  } else if (last) {
    link.in_flight.push_back(std::move(from.front()));
    from.pop_front();
  } else {
    link.in_flight.push_back(nullptr);
  }
  return true;
}

// A rendezvous index no message of the link holds (awaiting its CTS or its FIN), if any.
std::optional<uint32_t> free_index(const TxLink& link) {
  for (uint32_t i = 0; i < kMaxRendezvous; ++i) {
    if (link.awaiting_cts[i]) continue;
    bool used = false;
    for (const auto& op : link.fins) used |= op->rendezvous_index == i;
    for (const auto& op : link.in_flight) used |= op && op->rendezvous && op->rendezvous_index == i;
    if (!used) return i;
  }
  return std::nullopt;
}

// The front FIN op's payload, written where its CTS said; false if the queue pair is full.
bool post_rendezvous_write(TxLink& link) {
  SendOp& op = *link.fins.front();
  if (op.cts_bytes > 0) {
    if (auto bad = gather(*link.ep->domain, op, op.cts_bytes, nullptr)) {
      fail_link(link, "cannot register a message's buffer: " + *bad);
      return false;
    }
    if (!post_write_of(link, op, /*signaled=*/false)) return false;
  }
  op.written = true;
  return true;
}

// A read's answer: its bytes are in place (written before the answer on the same queue pair).
void finish_read(TxLink& link, std::unique_ptr<SendOp> op, const CtsRecord& r) {
  Endpoint& ep = *link.ep;
  if (r.status != 0) {
    fail_send(ep, *op, static_cast<int>(r.status),
              "fi_read from " + to_string(link.peer) + ": the target has no registration of key " +
                  std::to_string(op->rkey) + " that peers may read covering " +
                  std::to_string(op->buffer.bytes) + " bytes at " +
                  std::to_string(op->remote_address));
    return;
  }
  if (r.length != op->buffer.bytes) {
    fail_send(ep, *op, FI_EIO, to_string(link.peer) + " answered a read with another length");
    fail_link(link, to_string(link.peer) + " answered a read with another length");
    return;
  }
  if (!op->bounce.empty()) op->buffer.write(0, op->bounce.data(), op->bounce.size());
  complete_send(ep, *op);
}

// The receiver's CTS for the message at `index`: it moves to the FIN queue. Or a read's answer.
void on_cts(TxLink& link, uint32_t index) {
  if (index >= kMaxRendezvous || !link.awaiting_cts[index]) {
    fail_link(link, to_string(link.peer) + " answered a rendezvous message that was not announced");
    return;
  }
  CtsRecord r;
  std::memcpy(&r,
              link.staging.bytes + size_t{link.slots} * link.slot_bytes + size_t{index} * kCtsBytes,
              sizeof r);
  auto op = std::move(link.awaiting_cts[index]);
  if (op->read) {
    finish_read(link, std::move(op), r);
    return;
  }
  op->cts = true;
  op->remote_address = r.address;
  op->rkey = r.rkey;
  op->cts_bytes = std::min<uint64_t>(r.length, op->buffer.bytes);
  link.fins.push_back(std::move(op));
}

}  // namespace

void pump(TxLink& link) {
  while (link.state == TxLink::State::kReady) {
    auto& from = !link.fins.empty() ? link.fins : link.queue;  // finishing comes first
    if (from.empty()) return;
    SendOp& op = *from.front();
    if (op.rma && !op.written) {
      if (!post_rma_write(link)) return;
      continue;
    }
    if (op.rendezvous && op.cts && !op.written) {
      if (!post_rendezvous_write(link)) return;
      continue;
    }
    if ((op.rendezvous || op.read) && !op.started) {
      const auto index = free_index(link);
      if (!index) return;
      op.rendezvous_index = *index;
    }
    if (link.credits == 0 || link.staging_busy[link.next_slot] != 0) return;
    const uint32_t slot = link.next_slot;
    if (!post_fragment(link, slot, from)) return;
    link.staging_busy[slot] = 1;
    --link.credits;
    link.next_slot = (slot + 1) % link.slots;
  }
}

void fail_link(TxLink& link, const std::string& why) {
  if (link.state == TxLink::State::kFailed) return;
  link.state = TxLink::State::kFailed;
  link.failure = why;
  warn(why);
  Endpoint& ep = *link.ep;
  for (auto* list : {&link.rma_in_flight, &link.in_flight, &link.fins, &link.queue})
    for (auto& op : *list)
      if (op) fail_send(ep, *op, FI_EIO, why);
  for (auto& op : link.awaiting_cts)
    if (op) fail_send(ep, *op, FI_EIO, why);
  for (auto& op : link.awaiting_cts) op.reset();
  link.fins.clear();
  link.rma_in_flight.clear();
  link.in_flight.clear();
  link.queue.clear();
  if (link.control.fd >= 0) {
    ep.domain->unwatch(link.control.fd);
    ::close(link.control.fd);
    link.control.fd = -1;
  }
}

void on_tx_completion(TxLink& link, const Completion& c) {
  if (link.state == TxLink::State::kFailed) return;
  if (c.status != WcStatus::kSuccess) {
    const bool access = c.status == WcStatus::kRemoteAccessError;
    fail_link(
        link,
        "the link to " + to_string(link.peer) + " failed: " + to_string(c.status) +
            (access ? " (an RMA write to a key or address range the target has not registered)"
                    : ""));
    return;
  }
  if (c.opcode == WcOpcode::kRdmaWrite) {
    if (c.wr_id < link.slots) link.staging_busy[c.wr_id] = 0;
    if (c.wr_id == kRmaWr && !link.rma_in_flight.empty()) {  // send completions come in post order
      complete_send(*link.ep, *link.rma_in_flight.front());
      link.rma_in_flight.pop_front();
    }
    pump(link);
    return;
  }
  (void)link.qp->post_recv(0);
  if ((c.immediate & kCtsFlag) != 0) {
    on_cts(link, c.immediate & ~kCtsFlag);
    pump(link);
    return;
  }
  const uint32_t n = c.immediate & ~kCreditFlag;
  if ((c.immediate & kCreditFlag) == 0 || n > link.in_flight.size()) {
    fail_link(link, to_string(link.peer) + " returned credits for slots it was not sent");
    return;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (link.in_flight.front()) complete_send(*link.ep, *link.in_flight.front());
    link.in_flight.pop_front();
  }
  link.credits += n;
  pump(link);
}

// What the link had begun and can no longer finish fails with the reason (abandon): a receive
// its message was landing in, a rendezvous message answered, the unexpected store's part of its
// message. The sender learns of it through its own queue pair, which the dropped link's stops
// answering.
void drop_link(RxLink& link, const std::string& why) {
  if (link.broken) return;
  link.broken = true;
  ++link.ep->domain->links_dropped;
  const std::string what = "the link from " + to_string(link.peer) + " is dropped: " + why;
  warn(what);
  abandon(link, what);
}

void on_rx_completion(RxLink& link, const Completion& c) {
  if (link.broken) return;
  if (c.status != WcStatus::kSuccess) {
    drop_link(link, std::string("it failed: ") + to_string(c.status));
    return;
  }
  if (c.opcode != WcOpcode::kRecvRdmaWithImm) {  // a credit's write
    --link.credit_writes;
    return;
  }
  (void)link.qp->post_recv(0);
  if (c.immediate != (link.next_slot + link.arrived) % link.slots || link.arrived >= link.slots) {
    drop_link(link, "it wrote slot " + std::to_string(c.immediate) + " out of order");
    return;
  }
  if (link.arrived++ == 0) link.ep->domain->arrivals.push_back(&link);
}

namespace {

// Routes a message's first fragment; false if it must wait (no receive, store full).
bool start_message(RxLink& link, const SlotHeader& h) {
  Endpoint& ep = *link.ep;
  if (link.known_source == kAnySource && ep.av != nullptr)
    link.known_source = ep.av->find(link.peer);
  const Arrival a{(h.flags & kTagged) != 0, link.known_source, h.tag};
  if (auto r = ep.matcher.take_posted(a, h.message_bytes)) {
    link.target = *r;
  } else {
    link.stored = ep.matcher.add_unexpected(a, h.message_bytes);
    if (link.stored == nullptr) return false;
    link.stored->origin = &link;
    link.stored->data = h.data;
    link.stored->has_data = (h.flags & kHasData) != 0;
  }
  link.in_message = true;
  link.message =
      MessageInfo{a.tagged, h.message_bytes, h.tag, h.data, (h.flags & kHasData) != 0, a.source};
  return true;
}

void finish_message(RxLink& link) {
  Endpoint& ep = *link.ep;
  if (link.target) {
    complete_recv(ep, *link.target, link.message);
  } else if (link.stored != nullptr) {
    link.stored->complete = true;
    if (link.stored->waiting) deliver_unexpected(ep, *link.stored->waiting, link.stored);
  }
  link.in_message = false;
  link.target.reset();
  link.stored = nullptr;
}

// A remote write's notice: its CQ data for the target's receive CQ and remote-write counter.
void remote_write_done(RxLink& link, const SlotHeader& h) {
  Endpoint& ep = *link.ep;
  if (ep.remote_write_cntr != nullptr) ep.remote_write_cntr->add(1, false);
  if (ep.rx_cq == nullptr) return;
  if (link.known_source == kAnySource && ep.av != nullptr)
    link.known_source = ep.av->find(link.peer);
  CqEntry e;
  e.entry.flags = FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA;
  e.entry.data = h.data;
  e.source = link.known_source;
  ep.rx_cq->push(e);
}

// A rendezvous message's RTS: to the receive that takes it (the CTS goes out), or announced in
// the unexpected store until one does.
void take_rts(RxLink& link, const SlotHeader& h) {
  Endpoint& ep = *link.ep;
  const auto index = static_cast<uint32_t>(h.offset);
  if (link.pending[index]) {
    drop_link(link, "it reused a rendezvous index in use");
    return;
  }
  if (link.known_source == kAnySource && ep.av != nullptr)
    link.known_source = ep.av->find(link.peer);
  const Arrival a{(h.flags & kTagged) != 0, link.known_source, h.tag};
  const MessageInfo m{a.tagged, h.message_bytes,           h.tag,
                      h.data,   (h.flags & kHasData) != 0, a.source};
  if (auto r = ep.matcher.take_posted(a, h.message_bytes)) {
    begin_rendezvous(link, index, *r, m);
    return;
  }
  Unexpected* u = ep.matcher.add_rendezvous(a, h.message_bytes, &link, index);
  u->origin = &link;
  u->data = h.data;
  u->has_data = m.has_data;
}

// A rendezvous message's FIN: its payload is in place (RC ordering), its receive completes.
void take_fin(RxLink& link, uint32_t index) {
  if (!link.pending[index]) {
    drop_link(link, "it finished a rendezvous message never answered");
    return;
  }
  RxLink::Pending& p = *link.pending[index];
  if (p.lkey != 0) (void)link.ep->domain->context->deregister_memory(p.lkey);
  if (!p.bounce.empty()) p.recv.buffer.write(0, p.bounce.data(), p.bounce.size());
  if (!p.recv.silent) complete_recv(*link.ep, p.recv, p.message);
  link.pending[index].reset();
}

// Writes `record` into the sender's CTS area at `index`, with an immediate that names it (a
// rendezvous message's CTS, a read's answer); false if the link was dropped.
bool answer(RxLink& link, uint32_t index, const CtsRecord& record) {
  uint8_t* at = link.ring.bytes + size_t{link.slots} * link.slot_bytes + size_t{index} * kCtsBytes;
  std::memcpy(at, &record, sizeof record);
  const Sge sge{reinterpret_cast<uint64_t>(at), sizeof record, link.ring.mr.lkey};
  const uint64_t cts_area = link.staging_address + uint64_t{link.slots} * link.slot_bytes;
  auto sent = link.qp->post_write_imm(~2ull, {&sge, 1}, cts_area + uint64_t{index} * kCtsBytes,
                                      link.staging_rkey, kCtsFlag | index);
  if (!sent.ok()) {
    drop_link(link, "cannot answer it: " + sent.error().message);
    return false;
  }
  ++link.credit_writes;
  return true;
}

// A read request: the bytes, if a registration of this domain lets peers read them, written
// into the reader's buffer; then the answer, with FI_EACCES if not.
void serve_read(RxLink& link, const SlotHeader& h, const uint8_t* payload) {
  Endpoint& ep = *link.ep;
  CtsRecord destination;
  std::memcpy(&destination, payload, sizeof destination);
  if (destination.length != h.message_bytes) {
    drop_link(link, "it sent a read request whose lengths differ");
    return;
  }
  CtsRecord reply;
  const Mr* mr = h.data > 0xFFFFFFFFull
                     ? nullptr
                     : readable(*ep.domain, static_cast<uint32_t>(h.data), h.tag, h.message_bytes);
  if (h.message_bytes > 0 && mr == nullptr) {
    reply.status = FI_EACCES;
  } else if (h.message_bytes > 0) {
    const Sge sge{h.tag, static_cast<uint32_t>(h.message_bytes), mr->info.lkey};
    auto written = link.qp->post_write(~3ull, {&sge, 1}, destination.address, destination.rkey,
                                       /*signaled=*/false);
    if (!written.ok()) {
      drop_link(link, "cannot answer its read: " + written.error().message);
      return;
    }
    reply.length = h.message_bytes;
  }
  if (!answer(link, static_cast<uint32_t>(h.offset), reply)) return;
  if (ep.remote_read_cntr != nullptr) ep.remote_read_cntr->add(1, reply.status != 0);
}

// Takes the slot at next_slot; false if the link must wait or broke.
bool take_slot(RxLink& link) {
  const uint8_t* at = link.ring.bytes + size_t{link.next_slot} * link.slot_bytes;
  SlotHeader h;
  std::memcpy(&h, at, sizeof h);
  if (auto bad = check_header(h, link.slot_bytes, kMaxMessageBytes, !link.in_message)) {
    drop_link(link, "it sent " + *bad);
    return false;
  }
  if ((h.flags & kRmaData) != 0) {
    remote_write_done(link, h);
    return true;
  }
  if ((h.flags & kRead) != 0) {
    serve_read(link, h, at + sizeof h);
    return !link.broken;
  }
  if ((h.flags & (kRts | kFin)) != 0) {
    if ((h.flags & kRts) != 0)
      take_rts(link, h);
    else
      take_fin(link, static_cast<uint32_t>(h.offset));
    return !link.broken;
  }
  if ((h.flags & kFirst) != 0 && !start_message(link, h)) return false;
  if (link.target)
    link.target->buffer.write(h.offset, at + sizeof h, h.fragment_bytes);
  else if (h.fragment_bytes > 0)  // (an empty message's store has no bytes to point at)
    std::memcpy(link.stored->payload.data() + h.offset, at + sizeof h, h.fragment_bytes);
  if ((h.flags & kLast) != 0) finish_message(link);
  return true;
}

}  // namespace

void drain(RxLink& link) {
  while (link.arrived > 0 && !link.broken && take_slot(link)) {
    link.next_slot = (link.next_slot + 1) % link.slots;
    --link.arrived;
    ++link.freed;
  }
  if (link.freed == 0 || link.broken) return;
  auto sent = link.qp->post_write_imm(~0ull, {}, link.staging_address, link.staging_rkey,
                                      kCreditFlag | link.freed);
  if (!sent.ok()) {  // the queue is full: the next round of progress tries again
    auto& owing = link.ep->domain->owing;
    if (std::find(owing.begin(), owing.end(), &link) == owing.end()) owing.push_back(&link);
    return;
  }
  link.freed = 0;
  ++link.credit_writes;
}

std::optional<std::string> gather(Domain& d, SendOp& op, uint64_t bytes, void* const* desc) {
  op.local.clear();
  for (size_t i = 0; i < op.buffer.count && bytes > 0; ++i) {
    const iovec& v = op.buffer.v[i];
    const uint64_t take = std::min<uint64_t>(v.iov_len, bytes);
    if (take == 0) continue;
    bytes -= take;
    const Mr* mr = desc != nullptr ? static_cast<const Mr*>(desc[i]) : nullptr;
    uint32_t lkey = mr != nullptr ? mr->info.lkey : 0;
    if (lkey == 0) {
      auto reg = d.context->register_memory(d.pd, v.iov_base, take, kAccessLocalWrite);
      if (!reg.ok()) return reg.error().message;
      lkey = reg.value().lkey;
      op.temporary_lkeys.push_back(lkey);
    }
    op.local.push_back(
        Sge{reinterpret_cast<uint64_t>(v.iov_base), static_cast<uint32_t>(take), lkey});
  }
  return std::nullopt;
}

void begin_rendezvous(RxLink& link, uint32_t index, const PostedRecv& r, const MessageInfo& m) {
  Domain& d = *link.ep->domain;
  RxLink::Pending p{r, m, 0, {}};
  const bool discard = r.silent || (r.flags & FI_DISCARD) != 0;
  const uint64_t capacity = discard ? 0 : std::min<uint64_t>(m.bytes, r.buffer.bytes);
  CtsRecord record;
  if (capacity > 0) {
    void* target = r.buffer.v[0].iov_base;
    if (r.buffer.count > 1) {  // several buffers: one region to write into, copied out at the FIN
      p.bounce.resize(capacity);
      target = p.bounce.data();
    }
    auto reg =
        d.context->register_memory(d.pd, target, capacity, kAccessLocalWrite | kAccessRemoteWrite);
    if (reg.ok()) {
      p.lkey = reg.value().lkey;
      record = CtsRecord{reinterpret_cast<uint64_t>(target), capacity, reg.value().rkey, 0};
    } else {
      warn("cannot register a receive buffer (" + reg.error().message +
           "): the message is truncated to 0 bytes");
    }
  }
  if (answer(link, index, record)) {
    link.pending[index] = std::move(p);
    return;
  }
  if (p.lkey != 0) (void)d.context->deregister_memory(p.lkey);
  fail_recv(*link.ep, r, m, "the link from " + to_string(link.peer) + " was dropped");
}

void resolve_sources(Endpoint& ep) {
  if (ep.av == nullptr) return;
  for (Unexpected& u : ep.matcher.unexpected()) {
    if (u.arrival.source != kAnySource || u.origin == nullptr) continue;
    RxLink& link = *static_cast<RxLink*>(const_cast<void*>(u.origin));
    link.known_source = ep.av->find(link.peer);
    u.arrival.source = link.known_source;
  }
}

void abandon(RxLink& link, const std::string& why) {
  Endpoint& ep = *link.ep;
  if (link.in_message && link.target) fail_recv(ep, *link.target, link.message, why);
  if (link.in_message && link.stored != nullptr) {
    if (link.stored->waiting) fail_recv(ep, *link.stored->waiting, link.message, why);
    ep.matcher.remove(link.stored);
  }
  link.in_message = false;
  link.target.reset();
  link.stored = nullptr;
  for (auto& p : link.pending) {
    if (!p) continue;
    if (p->lkey != 0) (void)ep.domain->context->deregister_memory(p->lkey);
    fail_recv(ep, p->recv, p->message, why);
    p.reset();
  }
  // Announced rendezvous messages in the store can never be written now.
  std::erase_if(ep.matcher.unexpected(),
                [&](const Unexpected& u) { return u.rendezvous && u.origin == &link; });
}

void retry_stalled(Endpoint& ep) {
  for (auto& link : ep.rx_links)
    if (link->arrived > 0) drain(*link);
}

}  // namespace mrc::fabric
