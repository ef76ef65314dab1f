// Helpers shared by the lib_mrc.so sources: handle validation, limits, the completion
// translation and the controller hooks the progress thread calls.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ocp/objects.h"

namespace mrc::ocp {

inline constexpr uint32_t kMaxQpHints = 1024;
inline constexpr int kMaxCqe = 1 << 20;
inline constexpr int kHintMask = MRC_QP_HINT_NUM_QPS_PER_PEER | MRC_QP_HINT_NUM_SEND_PEERS |
                                 MRC_QP_HINT_NUM_REMOTE_RECV_PEERS | MRC_QP_HINT_VENDOR_CFG;

bool valid(const mrc_context* c);
bool valid(const mrc_cq* c);
bool valid(const mrc_comp_channel* c);
bool valid(const mrc_qp_hint* h);
bool valid(const mrc_qp* q);

ibv_wc to_ibv_wc(const Completion& c);
// Takes up to num_entries completions of an engine CQ (mrc_poll_cq's part after progress).
int poll_completions(mrc_cq& cq, int num_entries, ibv_wc* wc);

// lib_mrc.so exports libibverbs's names: the next definition of `name` (libibverbs's own, for
// devices that are not mrc's), by `version` where it has one, or null. NEXT(fn, "IBVERBS_1.1")
// is it as a pointer of fn's type.
void* next_symbol(const char* name, const char* version);
#define NEXT(name, version) \
  (reinterpret_cast<decltype(&(name))>(::mrc::ocp::next_symbol(#name, version)))

// The integer an enum member of a caller's structure holds. A C caller may put any value there;
// loading it as the enum type would be undefined for values outside the enum's range, so it is
// read as its underlying integer and compared with the enumerators.
template <typename E>
int64_t raw(const E& e) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof v);
  return static_cast<int64_t>(v);
}

}  // namespace mrc::ocp
