// Controller calls from a process that does not own the device. One process owns an mrc device
// (its UDP sockets and engine); another that opens the same device gets a controller-only
// context: ibv_open_device connects to the owner's control socket (ctl_socket.h) instead, the
// data path (PDs, CQs, QPs) is refused with EBUSY, and every mrc_ctl_* call is forwarded as a
// {"op": "call"} request that the owner runs on its own controller context — so the rules and
// errno values are exactly those of a local call. Attribute structures travel as their bytes
// (both ends are the same library on the same machine); the arrays they point to (EV op
// entries, EV fields, format fields, probe requests and answers, an NSCC config) travel beside
// them, and the pointers are re-aimed on each side. EV event CQs of a remote controller live in
// the owner, one set per connection, destroyed when it closes; they are polled, not notified
// (a completion channel is refused with EOPNOTSUPP).
#pragma once

#include <nlohmann/json.hpp>

#include "mrc_ctl.h"
#include "ocp/objects.h"

namespace mrc::ocp {

// Per-connection state of the control server.
struct CtlSession {
  bool watch = false;                  // the client asked to watch EV events
  std::map<uint64_t, mrc_cq*> ev_cqs;  // EV event CQs created for the client, by id
  uint64_t next_cq_id = 1;
};

// ---- client side (errno value returned, 0 = success) ----
int remote_port(Nic& nic, bool modify, uint8_t port, mrc_ctl_port_attr* attr, int mask);
int remote_port_up(Nic& nic, int plane, bool& up);
int remote_ev_fmt_profile(Nic& nic, bool modify, uint64_t id, mrc_ctl_ev_fmt_profile_attr* attr,
                          int mask);
int remote_ev_profile(Nic& nic, bool modify, uint64_t id, mrc_ctl_ev_profile_attr* attr, int mask);
int remote_cc_profile(Nic& nic, bool modify, uint64_t id, mrc_ctl_cc_profile_attr* attr, int mask);
int remote_create_ev_cq(Nic& nic, int cqe, uint64_t& id);
int remote_poll_ev_cq(Nic& nic, uint64_t id, int n, mrc_ctl_ev_event* out, int& got);
int remote_destroy_ev_cq(Nic& nic, uint64_t id);
int remote_ep_batch(Nic& nic, mrc_ctl_ep_op_type op, const mrc_ctl_ep_req* req, int n,
                    uint32_t timeout_ns, mrc_ctl_ep_rsp* rsp, int& got);

// ---- server side ----
// Runs one forwarded call on `ctx` (the owner's controller context).
nlohmann::json serve_call(Nic& nic, mrc_context& ctx, CtlSession& session,
                          const nlohmann::json& req);
// Destroys what a closed connection left behind.
void end_session(CtlSession& session);

}  // namespace mrc::ocp
