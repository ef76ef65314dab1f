// The operations of the control socket (ctl_socket.h), as JSON: each takes a request object and
// returns the response object. They act through the same controller calls an application makes
// (mrc_ctl_*), on a context of the serving process, so their rules and errno values are those
// of mrc_ctl.h. Malformed requests get {"ok": false, ...}; nothing a client sends can crash the
// server (parsing never throws out of ctl_handle).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ocp/ctl_remote.h"
#include "ocp/objects.h"

namespace mrc::ocp {

// Handles one request line of a client's session (session.watch is set when the client asks to
// watch EV events; forwarded calls keep their EV event CQs there).
nlohmann::json ctl_handle(Nic& nic, mrc_context& ctx, const std::string& line, CtlSession& session);
// A watch line for one logged EV state change.
nlohmann::json ctl_watch_line(const WatchEvent& event);
const char* ctl_state_name(mrc_ctl_ev_state state);

}  // namespace mrc::ocp
