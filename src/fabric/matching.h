// Message matching of the libfabric provider: the receives an endpoint's application posted,
// and the messages that arrived before a receive wanted them ("unexpected"), for FI_MSG and
// FI_TAGGED alike.
//
// libfabric's rules: a message takes the oldest posted receive of its kind whose source is
// FI_ADDR_UNSPEC or its sender and, for tagged ones, whose tag equals the message's in every
// bit the receive does not ignore; a receive posted later takes the oldest unexpected message
// it would have matched. FI_ORDER_SAS holds because each sender's messages reach the matcher
// in send order (one link per sender, walked in order). Unexpected messages are buffered whole,
// within a byte budget: a link whose next message does not fit waits (its sender runs out of
// credits) until receives drain the store, so memory stays bounded whatever the senders do.
//
// A multi-receive (FI_MULTI_RECV, untagged) is one posted buffer that takes message after
// message: each message that matches it gets the next part of the buffer (at 8-byte aligned
// offsets) as a receive of its own, and the buffer stays posted until less than the endpoint's
// FI_OPT_MIN_MULTI_RECV bytes are left; the part that leaves it so "releases" it (its
// completion carries FI_MULTI_RECV).
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

namespace mrc::fabric {

inline constexpr uint64_t kAnySource = ~0ull;  // FI_ADDR_UNSPEC
inline constexpr size_t kMaxIov = 4;

// An application's scatter list (a receive's buffers, or a send's, which are read when the
// link has room).
struct IoList {
  std::array<iovec, kMaxIov> v{};
  size_t count = 0;
  size_t bytes = 0;
  static IoList of(const iovec* iov, size_t count);
  static IoList of(const void* buffer, size_t length);
  // Copies `n` bytes from `source` to offset `at` of the list, as many as fit; returns them.
  size_t write(size_t at, const void* source, size_t n) const;
  // Copies `n` bytes from offset `at` of the list to `target`.
  void read(size_t at, void* target, size_t n) const;
  // The buffers of [at, at + n) of the list (as much of it as the list holds).
  IoList slice(size_t at, size_t n) const;
};

struct PostedRecv {
  void* context = nullptr;
  uint64_t flags = 0;  // the operation's flags (FI_COMPLETION, FI_MULTI_RECV, ...)
  bool tagged = false;
  uint64_t source = kAnySource;
  uint64_t tag = 0;
  uint64_t ignore = 0;
  IoList buffer;
  bool silent = false;    // no completion (a peek's FI_DISCARD of a rendezvous message)
  bool multi = false;     // a multi-receive's whole buffer (posted)
  uint64_t used = 0;      // multi: bytes of the buffer given to messages
  bool part = false;      // a part of a multi-receive, taken by one message
  bool releases = false;  // part: the last one; the buffer is the application's again
  // Whether its completion (or failure) ends an operation the application posted: not so for a
  // part of a multi-receive that stays posted.
  bool ends_posting() const { return !part || releases; }
};

// What a message offers to match on.
struct Arrival {
  bool tagged = false;
  uint64_t source = kAnySource;  // the sender's fi_addr, kAnySource if not in the AV
  uint64_t tag = 0;
};

bool matches(bool tagged, uint64_t source, uint64_t tag, uint64_t ignore, const Arrival& a);
inline bool matches(const PostedRecv& r, const Arrival& a) {
  return matches(r.tagged, r.source, r.tag, r.ignore, a);
}

struct Unexpected {
  Arrival arrival;
  uint64_t data = 0;
  bool has_data = false;
  std::vector<uint8_t> payload;  // the whole message, filled as fragments arrive
  bool complete = false;
  bool claimed = false;  // FI_PEEK|FI_CLAIM reserved it for a later FI_CLAIM receive
  void* claim_context = nullptr;
  std::optional<PostedRecv> waiting;  // a receive that matched it before its last fragment
  // A rendezvous message (wire.h) holds no payload here: only where its RTS came from, until a
  // receive takes it and the CTS goes out.
  const void* origin = nullptr;  // the link it came over (its sender, for a source found later)
  bool rendezvous = false;
  void* rendezvous_link = nullptr;  // the RxLink
  uint32_t rendezvous_index = 0;
  uint64_t rendezvous_bytes = 0;
  uint64_t bytes() const { return rendezvous ? rendezvous_bytes : payload.size(); }
};

class Matcher {
 public:
  explicit Matcher(uint64_t unexpected_budget_bytes) : budget_bytes_(unexpected_budget_bytes) {}
  void set_min_multi_recv(uint64_t bytes) { min_multi_recv_bytes_ = bytes; }
  uint64_t min_multi_recv() const { return min_multi_recv_bytes_; }

  void post(const PostedRecv& r) { (r.tagged ? tagged_ : untagged_).push_back(r); }
  size_t posted() const { return tagged_.size() + untagged_.size(); }
  // Every posted receive, tagged ones first, each kind oldest first.
  template <typename Fn>
  void for_each_posted(Fn&& fn) const {
    for (const PostedRecv& r : tagged_) fn(r);
    for (const PostedRecv& r : untagged_) fn(r);
  }
  // The oldest posted receive `a` (a message of `bytes`) matches, removed from the queue; for a
  // multi-receive, its next part.
  std::optional<PostedRecv> take_posted(const Arrival& a, uint64_t bytes);
  // A posted receive by its context (fi_cancel), removed.
  std::optional<PostedRecv> cancel(void* context);

  // The oldest unexpected message of the kind a receive (or a peek) asks for; claimed ones are
  // found only by their claim context (FI_CLAIM), and ones a receive already waits for never.
  Unexpected* find_unexpected(bool tagged, uint64_t source, uint64_t tag, uint64_t ignore);
  Unexpected* find_claimed(void* claim_context);
  // A new unexpected message of `bytes`, or nullptr when it does not fit the budget now.
  Unexpected* add_unexpected(const Arrival& a, uint64_t bytes);
  // A rendezvous message's announcement: no payload, so it always fits.
  Unexpected* add_rendezvous(const Arrival& a, uint64_t bytes, void* link, uint32_t index);
  void remove(Unexpected* u);
  std::list<Unexpected>& unexpected() { return unexpected_; }
  uint64_t unexpected_bytes() const { return used_bytes_; }

 private:
  std::list<PostedRecv> tagged_;
  std::list<PostedRecv> untagged_;
  std::list<Unexpected> unexpected_;
  uint64_t budget_bytes_;
  uint64_t used_bytes_ = 0;
  uint64_t min_multi_recv_bytes_ = 64;
};

}  // namespace mrc::fabric
