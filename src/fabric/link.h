// The two ends of a link (wire.h): one sending endpoint's messages to one receiving endpoint,
// over one mrc queue pair. The sender holds a TxLink per destination it sent to, the receiver
// an RxLink per sender that connected. A link is created by its sender's first message, set up
// over TCP by the connection manager (connect.h), and lives as long as its endpoints; its TCP
// connection stays open, so a peer that dies is noticed (EOF) even when no data is in flight.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabric/matching.h"
#include "fabric/wire.h"
#include "mrc/mrc.hpp"

namespace mrc::fabric {

struct Endpoint;

// A message as its receive completion reports it.
struct MessageInfo {
  bool tagged = false;
  uint64_t bytes = 0;
  uint64_t tag = 0;
  uint64_t data = 0;
  bool has_data = false;
  uint64_t source = kAnySource;
};

// Tags of the domain's epoll set: what became readable.
enum class WatchKind : uint8_t { kCq, kWake, kListener, kTxControl, kRxControl };
struct WatchTag {
  WatchKind kind;
  void* object;
};

// A page-aligned buffer registered with the domain's context.
struct Registered {
  Context* context = nullptr;  // where it is registered (deregistered before it is freed)
  uint8_t* bytes = nullptr;
  size_t length = 0;
  MemoryRegionInfo mr{};
  Registered() = default;
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;
  ~Registered();
};

// One fi_send/fi_tsend (and their v/msg/inject/data forms) from post to completion.
struct SendOp {
  void* context = nullptr;
  uint64_t cq_flags = 0;  // FI_SEND | FI_MSG or FI_TAGGED, as its completion reports it
  bool completion =
      true;  // a CQ entry when done (FI_SELECTIVE_COMPLETION without FI_COMPLETION: none)
  bool tagged = false;
  uint64_t tag = 0;
  uint64_t data = 0;
  bool has_data = false;
  IoList buffer;               // the application's buffers, read as slots open
  std::vector<uint8_t> owned;  // an inject's copy (buffer then points here)
  uint64_t posted_bytes = 0;
  bool started = false;  // its first fragment is posted
  // FI_RMA writes: the payload goes straight to (remote_address, rkey) by an RDMA WRITE; with
  // remote CQ data, a header-only fragment (kRmaData) follows it to tell the target, and the
  // write completes with that fragment's credit, else with its own local completion.
  bool rma = false;
  uint64_t remote_address = 0;
  uint32_t rkey = 0;
  std::vector<Sge> local;  // the gather list
  std::vector<uint32_t>
      temporary_lkeys;   // registered for this write (no desc given), until it ends
  bool written = false;  // the RDMA WRITE is posted
  // Rendezvous (wire.h): announced by an RTS at `rendezvous_index`, then, once the CTS names
  // where, written (remote_address, rkey, cts_bytes) and finished by a FIN fragment.
  bool rendezvous = false;
  uint32_t rendezvous_index = 0;
  bool cts = false;  // the CTS came: the write and the FIN are next
  uint64_t cts_bytes = 0;
  // FI_RMA reads: a request (wire.h) at `rendezvous_index` for (remote_address, rkey), answered
  // by the target's write into `destination` (the buffer, or `bounce` when it has several
  // pieces, registered for the peer to write until the read ends) and its answer in the CTS area.
  bool read = false;
  uint64_t destination = 0;
  uint32_t destination_rkey = 0;
  std::vector<uint8_t> bounce;
};

// Connection-manager state of either end: the TCP socket and its unframed bytes.
struct Control {
  int fd = -1;
  std::string inbox;   // bytes read, not yet a whole line
  std::string outbox;  // bytes to write
  bool connected = false;
};

struct TxLink {
  enum class State { kConnecting, kReady, kFailed };
  Endpoint* ep = nullptr;
  WatchTag tag{WatchKind::kTxControl, this};
  int64_t deadline_ms = 0;   // kConnecting: when set-up has taken too long (steady clock)
  int64_t closed_at_ms = 0;  // when the peer closed the TCP connection (0: it has not)
  EndpointName peer;
  State state = State::kConnecting;
  Control control;
  Qp* qp = nullptr;
  Registered staging;         // slots x slot_bytes: fragments are built here
  uint64_t ring_address = 0;  // the receiver's ring
  uint32_t ring_rkey = 0;
  uint32_t slots = 0;
  uint32_t slot_bytes = 0;
  uint32_t credits = 0;  // receiver slots free
  uint32_t next_slot = 0;
  std::vector<uint8_t> staging_busy;          // written, the write not yet complete locally
  std::deque<std::unique_ptr<SendOp>> queue;  // not yet wholly posted (front: being posted)
  // One entry per posted fragment, in slot order, until its credit returns: the op whose last
  // fragment it is, or null.
  std::deque<std::unique_ptr<SendOp>> in_flight;
  // RMA writes without remote CQ data, posted, until their local completions (in post order).
  std::deque<std::unique_ptr<SendOp>> rma_in_flight;
  // Rendezvous messages announced, waiting for their CTS, by index; and those whose CTS came,
  // to be written and finished ahead of the queue.
  std::array<std::unique_ptr<SendOp>, kMaxRendezvous> awaiting_cts;
  std::deque<std::unique_ptr<SendOp>> fins;
  std::string failure;  // kFailed: why
};

struct RxLink {
  Endpoint* ep = nullptr;
  WatchTag tag{WatchKind::kRxControl, this};
  bool linked = false;       // the hello was answered: a link, no longer an accepted connection
  int64_t closed_at_ms = 0;  // when the sender closed the TCP connection (0: it has not)
  EndpointName peer;
  Control control;
  Qp* qp = nullptr;
  Registered ring;
  uint64_t staging_address = 0;  // the sender's staging region: credits are written there
  uint32_t staging_rkey = 0;
  uint32_t slots = 0;
  uint32_t slot_bytes = 0;
  uint32_t next_slot = 0;
  uint32_t arrived = 0;        // slots written from next_slot on, not yet taken
  uint32_t freed = 0;          // slots taken, not yet credited back
  uint32_t credit_writes = 0;  // credit writes posted, not yet complete
  bool in_message = false;
  // Where the current message goes: a posted receive, or the unexpected store.
  std::optional<PostedRecv> target;
  uint64_t known_source = kAnySource;  // the sender's fi_addr, once the AV has it
  Unexpected* stored = nullptr;
  MessageInfo message;  // the current message
  // Rendezvous receives whose CTS is sent, by index: the receive, its message, and the
  // registration (of its buffer, or of a bounce buffer when it has several) until the FIN.
  struct Pending {
    PostedRecv recv;
    MessageInfo message;
    uint32_t lkey = 0;
    std::vector<uint8_t> bounce;
  };
  std::vector<std::optional<Pending>> pending = std::vector<std::optional<Pending>>(kMaxRendezvous);
  bool broken = false;
};

}  // namespace mrc::fabric
