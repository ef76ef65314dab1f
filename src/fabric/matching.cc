// Posted receives and unexpected messages (matching.h).
#include "fabric/matching.h"

#include <algorithm>
#include <cstring>

namespace mrc::fabric {

IoList IoList::of(const iovec* iov, size_t count) {
  IoList l;
  l.count = std::min(count, kMaxIov);
  for (size_t i = 0; i < l.count; ++i) {
    l.v[i] = iov[i];
    l.bytes += iov[i].iov_len;
  }
  return l;
}

IoList IoList::of(const void* buffer, size_t length) {
  const iovec one{const_cast<void*>(buffer), length};
  return of(&one, buffer == nullptr && length == 0 ? 0 : 1);
}

namespace {

// Calls copy(iov_byte, list_offset_done, bytes) for each piece of [at, at + n) of `l` that lies
// in one buffer, in order; returns the bytes the list holds of that range.
template <typename Copy>
size_t walk(const IoList& l, size_t at, size_t n, Copy copy) {
  size_t done = 0;
  for (size_t i = 0; i < l.count && done < n; ++i) {
    const size_t len = l.v[i].iov_len;
    if (at >= len) {
      at -= len;
      continue;
    }
    const size_t take = std::min(len - at, n - done);
    copy(static_cast<uint8_t*>(l.v[i].iov_base) + at, done, take);
    done += take;
    at = 0;
  }
  return done;
}

}  // namespace

size_t IoList::write(size_t at, const void* source, size_t n) const {
  const auto* from = static_cast<const uint8_t*>(source);
  return walk(*this, at, n,
              [&](uint8_t* to, size_t done, size_t take) { std::memcpy(to, from + done, take); });
}

void IoList::read(size_t at, void* target, size_t n) const {
  auto* to = static_cast<uint8_t*>(target);
  walk(*this, at, n,
       [&](const uint8_t* from, size_t done, size_t take) { std::memcpy(to + done, from, take); });
}

IoList IoList::slice(size_t at, size_t n) const {
  IoList l;
  walk(*this, at, n, [&](uint8_t* from, size_t, size_t take) {
    l.v[l.count++] = {from, take};
    l.bytes += take;
  });
  if (n == 0)  // an empty part still has a place: where its first byte would be
    walk(*this, at, 1, [&](uint8_t* from, size_t, size_t) { l.v[l.count++] = {from, 0}; });
  return l;
}

bool matches(bool tagged, uint64_t source, uint64_t tag, uint64_t ignore, const Arrival& a) {
  if (tagged != a.tagged) return false;
  if (source != kAnySource && source != a.source) return false;
  return !tagged || ((tag | ignore) == (a.tag | ignore));
}

std::optional<PostedRecv> Matcher::take_posted(const Arrival& a, uint64_t bytes) {
  auto& queue = a.tagged ? tagged_ : untagged_;
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if (!matches(*it, a)) continue;
    PostedRecv r = *it;
    if (!r.multi) {
      queue.erase(it);
      return r;
    }
    // The next part: the message's bytes (as many as are left: more is a truncation), and the
    // buffer is released once what is left falls under the minimum.
    PostedRecv& whole = *it;
    const uint64_t left = whole.buffer.bytes - whole.used;
    r.multi = false;
    r.part = true;
    r.buffer = whole.buffer.slice(whole.used, std::min(bytes, left));
    whole.used += std::min(left, (bytes + 7) & ~uint64_t{7});
    r.releases = whole.buffer.bytes - whole.used < min_multi_recv_bytes_;
    if (r.releases) queue.erase(it);
    return r;
  }
  return std::nullopt;
}

std::optional<PostedRecv> Matcher::cancel(void* context) {
  for (auto* queue : {&tagged_, &untagged_}) {
    for (auto it = queue->begin(); it != queue->end(); ++it) {
      if (it->context != context) continue;
      PostedRecv r = *it;
      queue->erase(it);
      return r;
    }
  }
  return std::nullopt;
}

Unexpected* Matcher::find_unexpected(bool tagged, uint64_t source, uint64_t tag, uint64_t ignore) {
  for (Unexpected& u : unexpected_)
    if (!u.claimed && !u.waiting && matches(tagged, source, tag, ignore, u.arrival)) return &u;
  return nullptr;
}

Unexpected* Matcher::find_claimed(void* claim_context) {
  for (Unexpected& u : unexpected_)
    if (u.claimed && !u.waiting && u.claim_context == claim_context) return &u;
  return nullptr;
}

Unexpected* Matcher::add_unexpected(const Arrival& a, uint64_t bytes) {
  // One message may always be buffered, however large (within max_msg_size), so a message
  // over the budget cannot wedge its link forever once the store is empty.
  if (used_bytes_ != 0 && used_bytes_ + bytes > budget_bytes_) return nullptr;
  Unexpected& u = unexpected_.emplace_back();
  u.arrival = a;
  u.payload.resize(bytes);
  used_bytes_ += bytes;
  return &u;
}

Unexpected* Matcher::add_rendezvous(const Arrival& a, uint64_t bytes, void* link, uint32_t index) {
  Unexpected& u = unexpected_.emplace_back();
  u.arrival = a;
  u.complete = true;
  u.rendezvous = true;
  u.rendezvous_link = link;
  u.rendezvous_index = index;
  u.rendezvous_bytes = bytes;
  return &u;
}

void Matcher::remove(Unexpected* u) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (&*it != u) continue;
    used_bytes_ -= it->payload.size();
    unexpected_.erase(it);
    return;
  }
}

}  // namespace mrc::fabric
