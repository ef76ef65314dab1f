// The collectives' transport: one rank's reliable, flow-controlled message streams to and from
// every peer, built only on the public mrc API (include/mrc/mrc.hpp).
//
// Per peer there is one connected queue pair and two staging areas of `slots` x `chunk_bytes`
// registered memory: a send area (local) and a receive area (the peer writes into it). Message
// m to a peer is written with RDMA WRITE-with-immediate into the peer's receive slot m % slots,
// either from the local send slot m % slots or, where the bytes already lie in the caller's
// memory, straight from there (memory lent for one collective: see LentMemory); the immediate
// carries m (31 bits), so the receiver checks the stream is in order (mrc delivers
// WRITE-with-immediate completions in send order). The receiver returns slots by a 0-byte
// WRITE-with-immediate "credit" (top bit set, low 16 bits = how many slots it frees, so credits
// coalesce), once half the slots are owed (drain() returns the rest). A sender may write message m
// only when the peer has freed slot m % slots (m < credits + slots) and its own send slot's
// previous write has completed. Nothing is ever written outside the registered staging areas,
// and the memory is fixed at creation: peers x 2 x slots x chunk_bytes.
//
// Waiting: every blocking wait polls the completion queue with a deadline that moves forward
// whenever something completes; with no progress for `timeout` the operation fails with a
// message that names the operation and the state of every peer stream. A failed queue pair
// (e.g. a peer that vanished: retry exceeded) fails the transport for good, with the peer named.
// While a wait lasts, the transport also
//   - writes 0 bytes (a heartbeat) to every peer it has nothing outstanding to and has not heard
//     from for `heartbeat`, so a dead peer is found by the queue pair's retries even when this
//     rank only waits to receive from it;
//   - polls the communicator's FailureBoard (liveness.h), so another rank's failure fails this
//     one too, and publishes its own failure there;
//   - reports a wait without progress (WaitReports), naming the peers it waits for.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectives/liveness.h"
#include "collectives/store.h"
#include "mrc/mrc.hpp"

namespace mrc::coll {

struct TransportOptions {
  uint32_t chunk_bytes = 256 << 10;          // one staging slot: the pipelining unit
  uint32_t slots = 8;                        // staging slots per peer and direction (at least 4)
  std::chrono::milliseconds timeout{30000};  // a wait with no progress for this long fails
  std::chrono::milliseconds heartbeat{250};  // see above
  WaitReports reports;
  QpConfig qp;  // queue-pair settings (queue sizes are raised as needed)
};

class Transport {
 public:
  // Allocates and registers the staging memory and one queue pair per peer.
  static Result<std::unique_ptr<Transport>, Error> create(Context& context, int rank, int ranks,
                                                          const TransportOptions& options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // What `peer` needs to connect to us (one line), and connecting with the peer's line.
  std::string local_info(int peer) const;
  Result<Ok, Error> connect(int peer, const std::string& remote_info);

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  uint32_t chunk_bytes() const { return options_.chunk_bytes; }

  // Where failures are published and watched for (not owned; may be null).
  void watch(FailureBoard* board) { board_ = board; }
  // Names the operation in progress (for timeout messages) and restarts the no-progress clock.
  void begin(const char* operation);
  // The next send slot to `peer` (chunk_bytes long) if the peer has room and the slot is free;
  // nullptr otherwise. Fill it, then post(peer, bytes).
  uint8_t* send_slot(int peer);
  Result<Ok, Error> post(int peer, uint32_t bytes);
  // Posts the next message from lent memory instead of the send slot (which send_slot() must
  // have offered: the slot's turn, the peer's room and the completion tracking are the same).
  // The bytes must stay unchanged until write_done() says so.
  Result<Ok, Error> post_from(int peer, const uint8_t* data, uint32_t bytes, uint32_t lkey);
  // Whether message `message` to `peer` (its index: sent() before it was posted) has completed.
  bool write_done(int peer, uint64_t message) const;
  // The next message from `peer` in stream order, if it has arrived; release() frees it.
  std::optional<std::span<const uint8_t>> front(int peer) const;
  void release(int peer);
  // Messages posted to / released from a peer since creation.
  uint64_t sent(int peer) const { return peers_[peer].sent; }
  uint64_t consumed(int peer) const { return peers_[peer].consumed; }
  // Processes completions. With `block`, first waits (up to a few ms) for one to arrive, and
  // fails if there has been no progress for the timeout.
  Result<Ok, Error> progress(bool block);
  // Waits until every write this rank posted has completed (before the context goes away).
  Result<Ok, Error> drain();
  // Waits until every data write this rank posted has been acknowledged, under the current
  // operation's name. Credits are left: a peer that exits right after the operation could never
  // acknowledge the credit for its own last message.
  Result<Ok, Error> settle_data();
  // Whether the transport has failed; every later operation fails with failure().
  bool failed() const { return failure_.has_value(); }
  const Error& failure() const { return *failure_; }
  // Fails the transport for a peer that sent what this rank did not expect (the streams are out
  // of step for good) and returns the error, naming the operation.
  Error mismatch(int peer, size_t got_bytes, size_t expected_bytes);
  // Registers caller memory for local reads by this transport's queue pairs (post_from), and
  // deregisters it (new posts naming the key are refused; see abandon_queue_pairs for those
  // already posted).
  Result<uint32_t, Error> lend(const void* address, size_t bytes);
  void unlend(uint32_t lkey);
  // Destroys the queue pairs of a failed transport. Deregistering lent memory does not stop a
  // posted write from reading it (the engine resolved its address at the post), so a
  // collective that fails with writes outstanding ends them this way before it returns and its
  // caller may free the memory. The transport stays failed.
  void abandon_queue_pairs();

 private:
  // Why this rank waits on a peer (Peer::waited_on), for wait reports.
  static constexpr uint8_t kWaitData = 1, kWaitRoom = 2;
  struct Peer {
    Qp* qp = nullptr;
    bool connected = false;
    uint8_t* send_area = nullptr;
    uint8_t* receive_area = nullptr;
    MemoryRegionInfo receive_mr{};
    uint64_t remote_address = 0;  // the peer's receive area for us
    uint32_t remote_rkey = 0;
    uint64_t sent = 0;                     // data messages posted
    uint64_t credits = 0;                  // slots the peer has freed
    uint64_t arrived = 0;                  // data messages arrived
    uint64_t consumed = 0;                 // data messages released
    uint32_t credits_owed = 0;             // released but not yet returned
    uint32_t credit_writes = 0;            // credit messages not yet completed
    uint32_t data_writes = 0;              // data messages not yet completed
    uint32_t heartbeats = 0;               // heartbeat writes not yet completed (0 or 1)
    SteadyClock::time_point last_heard{};  // last completion on this queue pair
    mutable uint8_t waited_on = 0;         // kWait* since the last progress
    std::vector<uint8_t> send_busy;
    std::vector<uint32_t> arrived_bytes;
  };
  Transport() = default;
  // `progressed` is set by a completion that is progress (any but a heartbeat's).
  void on_completion(const Completion& c, SteadyClock::time_point now, bool& progressed);
  static std::string qp_summary(const Qp& qp);
  void on_receive(int peer, const Completion& c);
  Result<Ok, Error> post_sge(int peer, const Sge& sge);
  void flush_credits(int peer, bool all = false);
  // Checks made while a wait finds nothing to do: another rank's failure, the no-progress
  // timeout, heartbeats, the wait report.
  Result<Ok, Error> while_idle(SteadyClock::time_point now);
  void send_heartbeats(SteadyClock::time_point now);
  void report_wait(SteadyClock::time_point now) const;
  void made_progress(SteadyClock::time_point now);
  // Fails the transport; a failure of this rank (not one heard from another) is published.
  void record_failure(Errc code, std::string message, bool publish = true);
  std::string describe_streams() const;

  Context* context_ = nullptr;
  int rank_ = 0;
  int ranks_ = 1;
  TransportOptions options_;
  uint32_t pd_ = 0;
  Cq* cq_ = nullptr;
  uint8_t* memory_ = nullptr;  // all staging areas, 4 KiB aligned
  size_t memory_bytes_ = 0;
  MemoryRegionInfo send_mr_{};
  std::vector<Peer> peers_;
  std::vector<std::pair<uint32_t, int>> qpn_to_peer_;
  std::string operation_ = "setup";
  SteadyClock::time_point last_progress_;
  WaitReporter reporter_{WaitReports{}, SteadyClock::time_point{}};
  FailureBoard* board_ = nullptr;
  std::optional<Error> failure_;
};

// Caller memory lent to the transport for one collective, so that rings and chains can send
// from it without a copy into a staging slot. No write may read it once the collective returns
// (the caller may change or free it then): finish() waits until every data write has
// completed, or, after a failure, destroys the failed transport's queue pairs; the destructor
// deregisters it.
class LentMemory {
 public:
  explicit LentMemory(Transport& transport) : transport_(transport) {}
  ~LentMemory() {
    for (uint32_t lkey : lkeys_) transport_.unlend(lkey);
  }
  LentMemory(const LentMemory&) = delete;
  LentMemory& operator=(const LentMemory&) = delete;
  // The key of [address, address + bytes) for post_from().
  Result<uint32_t, Error> lend(const void* address, size_t bytes);
  // The wait for the writes' completion, or, if `result` failed, `result` once no write can
  // read the memory any more.
  Result<Ok, Error> finish(const Result<Ok, Error>& result);

 private:
  Transport& transport_;
  std::vector<uint32_t> lkeys_;
};

}  // namespace mrc::coll
