// Flow-controlled message streams between ranks over mrc queue pairs (see transport.h for the
// protocol). Work-request ids say what completed: kind (top byte) | peer (bits 32-55) | slot.
#include "collectives/transport.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <sstream>

namespace mrc::coll {

namespace {

constexpr uint32_t kCreditBit = 0x80000000u;
constexpr uint32_t kSequenceMask = 0x7FFFFFFFu;
constexpr uint32_t kMaxCreditsPerMessage = 0xFFFF;
constexpr uint32_t kMaxCreditWrites = 2;  // credit messages in flight per peer
constexpr uint64_t kKindData = 1, kKindCredit = 2, kKindReceive = 3, kKindHeartbeat = 4;
constexpr size_t kAlignment = 4096;

uint64_t make_wr_id(uint64_t kind, int peer, uint32_t slot) {
  return (kind << 56) | (static_cast<uint64_t>(peer) << 32) | slot;
}
uint64_t kind_of(uint64_t wr_id) {
  return wr_id >> 56;
}
uint32_t slot_of(uint64_t wr_id) {
  return static_cast<uint32_t>(wr_id);
}

uint32_t receives_per_peer(uint32_t slots) {
  return slots + kMaxCreditWrites + 4;
}

}  // namespace

Result<std::unique_ptr<Transport>, Error> Transport::create(Context& context, int rank, int ranks,
                                                            const TransportOptions& options) {
  if (options.slots < 4 || options.slots > 1024)
    return fail(Errc::kInvalidArgument,
                "slots = " + std::to_string(options.slots) + " must be in [4, 1024]");
  if (options.chunk_bytes < 64 || options.chunk_bytes > (64u << 20) || options.chunk_bytes % 64)
    return fail(Errc::kInvalidArgument, "chunk_bytes = " + std::to_string(options.chunk_bytes) +
                                            " must be a multiple of 64 in [64, 64 MiB]");
  std::unique_ptr<Transport> t(new Transport());
  t->context_ = &context;
  t->rank_ = rank;
  t->ranks_ = ranks;
  t->options_ = options;
  t->pd_ = context.alloc_pd();
  const uint32_t per_peer = receives_per_peer(options.slots) + 2 * options.slots + kMaxCreditWrites;
  t->cq_ = context.create_cq(static_cast<uint32_t>(std::max(ranks - 1, 1)) * per_peer * 2 + 64);
  const size_t area = static_cast<size_t>(options.slots) * options.chunk_bytes;
  t->memory_bytes_ = std::max<size_t>(area * 2 * static_cast<size_t>(ranks), kAlignment);
  t->memory_ =
      static_cast<uint8_t*>(::operator new(t->memory_bytes_, std::align_val_t(kAlignment)));
  std::memset(t->memory_, 0, t->memory_bytes_);
  auto send_mr = context.register_memory(t->pd_, t->memory_, t->memory_bytes_, kAccessLocalWrite);
  if (!send_mr.ok()) return Err{send_mr.error()};
  t->send_mr_ = send_mr.value();
  QpConfig qc = options.qp;
  qc.max_send_wr = std::max<uint32_t>(qc.max_send_wr, options.slots + kMaxCreditWrites + 8);
  qc.max_recv_wr = std::max<uint32_t>(qc.max_recv_wr, receives_per_peer(options.slots) + 8);
  qc.max_wimm = std::max<uint16_t>(qc.max_wimm, static_cast<uint16_t>(options.slots + 8));
  qc.max_wimm_dest = std::max<uint16_t>(
      qc.max_wimm_dest, static_cast<uint16_t>(receives_per_peer(options.slots) + 8));
  t->peers_.resize(static_cast<size_t>(ranks));
  for (int p = 0; p < ranks; ++p) {
    if (p == rank) continue;
    Peer& peer = t->peers_[p];
    peer.send_area = t->memory_ + area * 2 * static_cast<size_t>(p);
    peer.receive_area = peer.send_area + area;
    auto mr = context.register_memory(t->pd_, peer.receive_area, area,
                                      kAccessLocalWrite | kAccessRemoteWrite);
    if (!mr.ok()) return Err{mr.error()};
    peer.receive_mr = mr.value();
    auto qp = context.create_qp(t->pd_, t->cq_, t->cq_, qc);
    if (!qp.ok()) return Err{qp.error()};
    peer.qp = qp.value();
    peer.send_busy.assign(options.slots, 0);
    peer.arrived_bytes.assign(options.slots, 0);
    t->qpn_to_peer_.emplace_back(peer.qp->qpn(), p);
  }
  std::sort(t->qpn_to_peer_.begin(), t->qpn_to_peer_.end());
  t->reporter_ = WaitReporter(options.reports, SteadyClock::now());
  t->begin("setup");
  return t;
}

Transport::~Transport() {
  // The context (owned by the caller) outlives us; it stops using the memory when it closes.
  // Deregister so that a late packet can never land in freed memory.
  if (context_ != nullptr) {
    // The keys are this transport's own: a deregistration that fails is a bug, and freeing
    // the memory regardless could let the engine write into it.
    for (const Peer& p : peers_)
      if (p.receive_mr.lkey != 0) MRC_ASSERT(context_->deregister_memory(p.receive_mr.lkey).ok());
    if (memory_ != nullptr) MRC_ASSERT(context_->deregister_memory(send_mr_.lkey).ok());
  }
  ::operator delete(memory_, std::align_val_t(kAlignment));
}

std::string Transport::local_info(int peer) const {
  const Peer& p = peers_[peer];
  std::ostringstream out;
  out << p.qp->local_info().to_string() << "|addr=" << p.receive_mr.address
      << "|rkey=" << p.receive_mr.rkey << "|chunk=" << options_.chunk_bytes
      << "|slots=" << options_.slots << "|mtu=" << options_.qp.mtu_bytes;
  return out.str();
}

Result<Ok, Error> Transport::connect(int peer, const std::string& remote_info) {
  std::vector<std::string> fields;
  std::istringstream in(remote_info);
  for (std::string field; std::getline(in, field, '|');) fields.push_back(field);
  const std::string expected = "|chunk=" + std::to_string(options_.chunk_bytes) +
                               "|slots=" + std::to_string(options_.slots) +
                               "|mtu=" + std::to_string(options_.qp.mtu_bytes);
  if (fields.size() != 6 || fields[1].rfind("addr=", 0) != 0 || fields[2].rfind("rkey=", 0) != 0)
    return fail(Errc::kPeerFailed, "rank " + std::to_string(peer) +
                                       " published unreadable connection info '" + remote_info +
                                       "'");
  if (remote_info.find(expected) == std::string::npos)
    return fail(Errc::kInvalidArgument,
                "rank " + std::to_string(peer) + " uses different staging ('" + fields[3] + "', '" +
                    fields[4] + "', '" + fields[5] + "', here" + expected +
                    "): every rank needs the same chunk size, slot count and payload per packet "
                    "(mtu)");
  auto info = ConnectionInfo::parse(fields[0]);
  if (!info.ok()) return Err{info.error()};
  Peer& p = peers_[peer];
  p.remote_address = std::stoull(fields[1].substr(5));
  p.remote_rkey = static_cast<uint32_t>(std::stoul(fields[2].substr(5)));
  auto r = p.qp->connect(info.value());
  if (!r.ok()) return fail(r.error(), "connecting to rank " + std::to_string(peer) + ": ");
  for (uint32_t i = 0; i < receives_per_peer(options_.slots); ++i) {
    auto posted = p.qp->post_recv(make_wr_id(kKindReceive, peer, i));
    if (!posted.ok()) return Err{posted.error()};
  }
  p.connected = true;
  p.last_heard = SteadyClock::now();
  return Ok{};
}

void Transport::begin(const char* operation) {
  operation_ = operation;
  made_progress(SteadyClock::now());
}

void Transport::made_progress(SteadyClock::time_point now) {
  last_progress_ = now;
  reporter_.restart(now);
  for (const Peer& p : peers_) p.waited_on = 0;
}

uint8_t* Transport::send_slot(int peer) {
  Peer& p = peers_[peer];
  const uint32_t slot = static_cast<uint32_t>(p.sent % options_.slots);
  if (p.sent >= p.credits + options_.slots || p.send_busy[slot]) {
    p.waited_on |= kWaitRoom;
    return nullptr;
  }
  return p.send_area + static_cast<size_t>(slot) * options_.chunk_bytes;
}

Result<Ok, Error> Transport::post(int peer, uint32_t bytes) {
  MRC_ASSERT(bytes <= options_.chunk_bytes);
  const size_t offset = (peers_[peer].sent % options_.slots) * size_t{options_.chunk_bytes};
  return post_sge(
      peer, Sge{reinterpret_cast<uint64_t>(peers_[peer].send_area + offset), bytes, send_mr_.lkey});
}

Result<Ok, Error> Transport::post_from(int peer, const uint8_t* data, uint32_t bytes,
                                       uint32_t lkey) {
  MRC_ASSERT(bytes <= options_.chunk_bytes);
  return post_sge(peer, Sge{reinterpret_cast<uint64_t>(data), bytes, lkey});
}

// Writes message `sent` into the peer's receive slot of the same number.
Result<Ok, Error> Transport::post_sge(int peer, const Sge& sge) {
  if (failure_) return Err{*failure_};
  Peer& p = peers_[peer];
  const uint32_t slot = static_cast<uint32_t>(p.sent % options_.slots);
  MRC_ASSERT(p.sent < p.credits + options_.slots && !p.send_busy[slot]);
  const size_t offset = static_cast<size_t>(slot) * options_.chunk_bytes;
  const uint32_t immediate = static_cast<uint32_t>(p.sent) & kSequenceMask;
  auto r = p.qp->post_write_imm(make_wr_id(kKindData, peer, slot),
                                std::span(&sge, sge.length > 0 ? 1 : 0), p.remote_address + offset,
                                p.remote_rkey, immediate);
  if (!r.ok()) {
    record_failure(r.error().code, std::string(operation_) + ": writing to rank " +
                                       std::to_string(peer) + ": " + r.error().message);
    return Err{*failure_};
  }
  p.send_busy[slot] = 1;
  ++p.data_writes;
  ++p.sent;
  return Ok{};
}

// Message m's slot is busy from its post to its completion, and message m + slots can only be
// posted into a free slot: so m is done once a later message holds its slot or the slot is free.
bool Transport::write_done(int peer, uint64_t message) const {
  const Peer& p = peers_[peer];
  return p.sent > message &&
         (p.sent > message + options_.slots || !p.send_busy[message % options_.slots]);
}

Result<uint32_t, Error> Transport::lend(const void* address, size_t bytes) {
  // Local reads need no access flag; no peer can write into lent memory.
  auto mr = context_->register_memory(pd_, const_cast<void*>(address), bytes, 0);
  if (!mr.ok()) return Err{mr.error()};
  return mr.value().lkey;
}

void Transport::unlend(uint32_t lkey) {
  MRC_ASSERT(context_->deregister_memory(lkey).ok());  // lent by lend(): a failure is a bug
}

void Transport::abandon_queue_pairs() {
  MRC_ASSERT(failure_.has_value());  // every later call returns before it reaches a queue pair
  for (Peer& p : peers_) {
    if (p.qp == nullptr) continue;
    (void)context_->destroy_qp(p.qp);  // fails only for a queue pair it does not know
    p.qp = nullptr;
  }
}

Result<Ok, Error> LentMemory::finish(const Result<Ok, Error>& result) {
  if (result.ok()) return transport_.settle_data();
  if (transport_.failed()) transport_.abandon_queue_pairs();
  return result;
}

Result<uint32_t, Error> LentMemory::lend(const void* address, size_t bytes) {
  auto lkey = transport_.lend(address, bytes);
  if (lkey.ok()) lkeys_.push_back(lkey.value());
  return lkey;
}

std::optional<std::span<const uint8_t>> Transport::front(int peer) const {
  const Peer& p = peers_[peer];
  if (p.consumed == p.arrived) {
    p.waited_on |= kWaitData;
    return std::nullopt;
  }
  const uint32_t slot = static_cast<uint32_t>(p.consumed % options_.slots);
  return std::span<const uint8_t>(p.receive_area + static_cast<size_t>(slot) * options_.chunk_bytes,
                                  p.arrived_bytes[slot]);
}

void Transport::release(int peer) {
  Peer& p = peers_[peer];
  MRC_ASSERT(p.consumed < p.arrived);
  ++p.consumed;
  ++p.credits_owed;
  flush_credits(peer);
}

// Slots go back in batches of half the slots (drain() returns the rest): a credit per message
// would double the messages, and their acknowledgements, of a latency-bound exchange. It cannot
// stall the sender: while this end keeps consuming, the sender's room is at least the slots
// less those owed here (fewer than half).
void Transport::flush_credits(int peer, bool all) {
  Peer& p = peers_[peer];
  if (p.credits_owed == 0 || p.credit_writes >= kMaxCreditWrites || failure_) return;
  if (!all && p.credits_owed < options_.slots / 2) return;
  const uint32_t count = std::min(p.credits_owed, kMaxCreditsPerMessage);
  auto r = p.qp->post_write_imm(make_wr_id(kKindCredit, peer, 0), {}, p.remote_address,
                                p.remote_rkey, kCreditBit | count);
  if (!r.ok())
    return record_failure(r.error().code, std::string(operation_) + ": returning slots to rank " +
                                              std::to_string(peer) + ": " + r.error().message);
  p.credits_owed -= count;
  ++p.credit_writes;
}

void Transport::record_failure(Errc code, std::string message, bool publish) {
  if (failure_) return;
  failure_ = Error{code, std::move(message)};
  if (publish && board_ != nullptr) board_->publish(failure_->message);
}

void Transport::on_receive(int peer, const Completion& c) {
  Peer& p = peers_[peer];
  auto reposted = p.qp->post_recv(c.wr_id);
  if (!reposted.ok())
    return record_failure(reposted.error().code,
                          "rank " + std::to_string(peer) + ": " + reposted.error().message);
  if (c.immediate & kCreditBit) {
    p.credits += c.immediate & kMaxCreditsPerMessage;
    return;
  }
  const uint32_t expected = static_cast<uint32_t>(p.arrived) & kSequenceMask;
  if (c.immediate != expected || p.arrived - p.consumed >= options_.slots ||
      c.byte_len > options_.chunk_bytes)
    return record_failure(Errc::kPeerFailed,
                          "protocol error: rank " + std::to_string(peer) + " sent message " +
                              std::to_string(c.immediate) + " (" + std::to_string(c.byte_len) +
                              " bytes) where " + std::to_string(expected) + " was expected");
  p.arrived_bytes[p.arrived % options_.slots] = c.byte_len;
  ++p.arrived;
}

// What this end's queue pair saw of the peer, for a failure message: whether the peer was
// silent, or answered with what.
std::string Transport::qp_summary(const Qp& qp) {
  const QpStats st = qp.stats();
  uint64_t nacks = 0, drops = 0;
  for (uint64_t n : st.nacks_received) nacks += n;
  for (uint64_t n : st.drops) drops += n;
  return "this end's queue pair: " + std::to_string(st.data_packets_sent) + " data packets sent, " +
         std::to_string(st.sacks_received) + " SACKs and " + std::to_string(nacks) +
         " NACKs received, " + std::to_string(st.timeouts) + " timeouts, " + std::to_string(drops) +
         " packets dropped";
}

void Transport::on_completion(const Completion& c, SteadyClock::time_point now, bool& progressed) {
  auto it =
      std::lower_bound(qpn_to_peer_.begin(), qpn_to_peer_.end(), std::make_pair(c.qpn.value, 0));
  if (it == qpn_to_peer_.end() || it->first != c.qpn.value) return;
  const int peer = it->second;
  Peer& p = peers_[peer];
  p.last_heard = now;
  progressed = progressed || kind_of(c.wr_id) != kKindHeartbeat;
  if (c.status != WcStatus::kSuccess) {
    std::string why = to_string(c.status);
    if (c.status == WcStatus::kRetryExceeded)
      why += ": rank " + std::to_string(peer) +
             " stopped answering (it exited, crashed or is unreachable; " + qp_summary(*p.qp) + ")";
    return record_failure(Errc::kPeerFailed, std::string(operation_) + ": the connection to rank " +
                                                 std::to_string(peer) + " failed: " + why);
  }
  switch (kind_of(c.wr_id)) {
    case kKindReceive:
      return on_receive(peer, c);
    case kKindData:
      p.send_busy[slot_of(c.wr_id) % options_.slots] = 0;
      --p.data_writes;
      return;
    case kKindCredit:
      --p.credit_writes;
      return flush_credits(peer);
    case kKindHeartbeat:
      --p.heartbeats;
      return;
    default:
      return;
  }
}

Result<Ok, Error> Transport::progress(bool block) {
  if (failure_) return Err{*failure_};
  Completion wc[64];
  size_t n = cq_->poll(wc);
  if (n == 0 && block) {
    auto r = while_idle(SteadyClock::now());
    if (!r.ok()) return r;
    n = cq_->wait(wc, 5);
  }
  bool progressed = false;  // a completion other than a heartbeat's: once per batch
  // A poll that returns less than it could has emptied the queue: polling again would only run
  // another datapath round (caller-driven progress) that finds nothing.
  for (size_t batch = n; batch > 0;) {
    const auto now = SteadyClock::now();
    for (size_t i = 0; i < batch; ++i) on_completion(wc[i], now, progressed);
    batch = batch == std::size(wc) ? cq_->poll(wc) : 0;
  }
  if (progressed) made_progress(SteadyClock::now());
  if (failure_) return Err{*failure_};
  return Ok{};
}

Result<Ok, Error> Transport::while_idle(SteadyClock::time_point now) {
  if (board_ != nullptr) {
    if (auto elsewhere = board_->poll(now)) {
      record_failure(
          Errc::kPeerFailed,
          std::string(operation_) + " on rank " + std::to_string(rank_) + ": " + *elsewhere, false);
      return Err{*failure_};
    }
  }
  if (now - last_progress_ > options_.timeout) {
    record_failure(Errc::kTimedOut,
                   std::string(operation_) + ": no progress for " +
                       std::to_string(options_.timeout.count()) + " ms on rank " +
                       std::to_string(rank_) + " (" + describe_streams() +
                       "); a peer may be stuck, gone, or calling a different collective");
    return Err{*failure_};
  }
  send_heartbeats(now);
  if (reporter_.due(now)) report_wait(now);
  return Ok{};
}

void Transport::send_heartbeats(SteadyClock::time_point now) {
  for (int peer = 0; peer < ranks_; ++peer) {
    Peer& p = peers_[peer];
    if (!p.connected || p.data_writes + p.credit_writes + p.heartbeats > 0) continue;
    if (now - p.last_heard < options_.heartbeat) continue;
    auto r =
        p.qp->post_write(make_wr_id(kKindHeartbeat, peer, 0), {}, p.remote_address, p.remote_rkey);
    if (!r.ok())
      return record_failure(r.error().code, std::string(operation_) + ": heartbeat to rank " +
                                                std::to_string(peer) + ": " + r.error().message);
    ++p.heartbeats;
  }
}

void Transport::report_wait(SteadyClock::time_point now) const {
  std::string waits;
  for (int peer = 0; peer < ranks_; ++peer) {
    const uint8_t why = peers_[peer].waited_on;
    if (why == 0) continue;
    waits += waits.empty() ? "" : ", ";
    if (why & kWaitData) waits += "data from rank " + std::to_string(peer);
    if (why == (kWaitData | kWaitRoom)) waits += " and ";
    if (why & kWaitRoom) waits += "room at rank " + std::to_string(peer);
  }
  options_.reports.emit(
      "mrc: rank " + std::to_string(rank_) + ": " + operation_ + " has made no progress for " +
      std::to_string(reporter_.waited(now).count() / 1000) + " s, waiting for " +
      (waits.empty() ? std::string("its own writes") : waits) + " (" + describe_streams() + ")");
}

Result<Ok, Error> Transport::drain() {
  begin("drain");
  for (;;) {
    bool idle = true;
    for (int p = 0; p < ranks_; ++p) {
      if (p == rank_) continue;
      flush_credits(p, true);
      const Peer& peer = peers_[p];
      idle = idle && peer.data_writes == 0 && peer.credit_writes == 0 && peer.credits_owed == 0 &&
             peer.heartbeats == 0;
    }
    if (idle) return Ok{};
    auto r = progress(true);
    if (!r.ok()) return r;
  }
}

Result<Ok, Error> Transport::settle_data() {
  for (;;) {
    bool idle = true;
    for (int p = 0; p < ranks_; ++p) idle = idle && (p == rank_ || peers_[p].data_writes == 0);
    if (idle) return Ok{};
    auto r = progress(true);
    if (!r.ok()) return r;
  }
}

std::string Transport::describe_streams() const {
  std::ostringstream out;
  bool first = true;
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    const Peer& peer = peers_[p];
    out << (first ? "" : "; ") << "rank " << p << ": sent " << peer.sent << " (room for "
        << (peer.credits + options_.slots - peer.sent) << "), received " << peer.arrived
        << " (used " << peer.consumed << ")";
    first = false;
  }
  return out.str();
}

Error Transport::mismatch(int peer, size_t got_bytes, size_t expected_bytes) {
  record_failure(
      Errc::kInvalidArgument,
      std::string(operation_) + ": rank " + std::to_string(peer) + " sent " +
          std::to_string(got_bytes) + " bytes where rank " + std::to_string(rank_) + " expected " +
          std::to_string(expected_bytes) +
          ": every rank must call the same collectives, with the same counts, types and roots");
  return *failure_;
}

}  // namespace mrc::coll
