// What the libfabric provider puts on an mrc queue pair (docs/LIBFABRIC.md, "How it works").
//
// A message from one endpoint to another travels over a one-way link: a queue pair whose
// receiver registered a ring of `slots` slots of `slot_bytes` each. The sender copies each
// fragment, with a SlotHeader in front, into a registered staging slot and writes it, with
// immediate data, into the receiver's slot of the same index; the immediate names the slot.
// Write-with-immediate completions arrive in send order (MRC's RQ-MSN ordering), so the
// receiver walks the ring in order. A slot is the sender's again when the receiver returns a
// credit: a zero-length write-with-immediate back over the same queue pair, its immediate the
// number of slots freed with kCreditFlag set. The receiver returns credits once it has copied
// a fragment out (into the application's buffer or the unexpected store), so a send is
// complete only when its data is at the receiver's endpoint (FI_DELIVERY_COMPLETE).
//
// An RMA read (fi_read) is a request fragment from the reader, naming the target's registered
// range and the reader's registered buffer (a CtsRecord as its payload); the target writes the
// bytes into the reader's buffer by RDMA WRITE and then answers in the reader's CTS area at the
// request's index, as a CTS does, with the bytes read or why not (a key or range the target has
// not registered for remote reads). The target checks every request against its registrations
// before it reads a byte.
//
// An endpoint's name (fi_getname) is an EndpointName: the IPv4 or IPv6 address and TCP port
// of its connection listener, where a link's two ends exchange their queue pairs'
// ConnectionInfo and ring keys, and a random nonce that tells endpoints at one address apart
// over time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace mrc::fabric {

inline constexpr uint32_t kCreditFlag = 0x80000000u;
inline constexpr uint32_t kCtsFlag = 0x40000000u;
inline constexpr uint32_t kMaxRendezvous = 64;  // rendezvous messages in flight per link
inline constexpr uint32_t kCtsBytes = 32;       // one CtsRecord's room
inline constexpr uint32_t kMaxSlots = 128;
inline constexpr uint32_t kMinSlotBytes = 1024;
inline constexpr uint32_t kMaxSlotBytes = 1u << 20;

enum FragmentFlags : uint32_t {
  kTagged = 1u << 0,   // FI_TAGGED (else FI_MSG)
  kFirst = 1u << 1,    // the message's first fragment
  kLast = 1u << 2,     // its last
  kHasData = 1u << 3,  // `data` is remote CQ data (FI_REMOTE_CQ_DATA)
  kRmaData = 1u << 4,  // no message: an RMA write before it carried `data` (fi_writedata)
  kRts = 1u << 5,      // a rendezvous message's announcement (offset: its index)
  kFin = 1u << 6,      // a rendezvous message's payload is written (offset: its index)
  kRead = 1u << 7,     // an RMA read request (offset: its index; tag: the target address; data:
                       // the target key; message_bytes: the length; payload: a CtsRecord)
};
inline constexpr uint32_t kKnownFlags =
    kTagged | kFirst | kLast | kHasData | kRmaData | kRts | kFin | kRead;

// In front of every fragment in a slot, in the host's byte order (both ends are mrc hosts of
// one architecture; the name's magic says so).
struct SlotHeader {
  uint32_t flags = 0;
  uint32_t fragment_bytes = 0;  // payload bytes after this header in the slot
  uint64_t message_bytes = 0;
  uint64_t offset = 0;  // of this fragment in the message
  uint64_t tag = 0;
  uint64_t data = 0;
};
static_assert(sizeof(SlotHeader) == 40);

// A receiver's answer to an RTS, written into the sender's CTS area (after its staging slots) at
// the message's index: where to write the payload. length 0: write nothing (a discarded message).
// The same record names a read's destination in its request, and answers the read (length: the
// bytes written; status: 0, or the libfabric errno the read fails with).
struct CtsRecord {
  uint64_t address = 0;
  uint64_t length = 0;
  uint32_t rkey = 0;
  uint32_t status = 0;
};
static_assert(sizeof(CtsRecord) <= kCtsBytes);

// Why a slot's header is not one this link can take, or nullopt if it is: the fragment fits
// its slot and its message, the flags are known, a message over `max_message_bytes` never
// starts. Anything else is a broken or hostile peer, and the link is dropped.
std::optional<std::string> check_header(const SlotHeader& h, uint32_t slot_bytes,
                                        uint64_t max_message_bytes, bool expect_first);

struct EndpointName {
  char magic[4] = {'m', 'r', 'c', 'F'};
  uint8_t version = 1;
  uint8_t family = 0;     // 4 or 6
  uint16_t port = 0;      // the connection listener's TCP port, network order
  uint8_t address[16]{};  // IPv4 in the first 4 bytes
  uint64_t nonce = 0;
  bool operator==(const EndpointName& o) const { return std::memcmp(this, &o, sizeof o) == 0; }
};
static_assert(sizeof(EndpointName) == 32);

// A name from bytes given by the application (fi_av_insert), nullopt if they are not one. Port 0
// is refused unless `any_port` (a source address, fi_info's src_addr: the system picks the port).
std::optional<EndpointName> parse_name(const void* bytes, size_t length, bool any_port = false);
// "fi_mrc://198.18.0.1:40311/1a2b3c4d5e6f7081"
std::string to_string(const EndpointName& name);
std::string to_hex(const EndpointName& name);
std::optional<EndpointName> name_from_hex(const std::string& hex);

}  // namespace mrc::fabric
