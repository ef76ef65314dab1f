// The control server of a device: lets other processes (mrcctl, or mrc_ctl_* calls in a process
// that does not own the device) reach this process's controller. See ctl_socket.h for the
// socket and ctl_server.cc for the operations.
#pragma once

#include <memory>

#include "ocp/objects.h"

namespace mrc::ocp {

class CtlServer {
 public:
  // Serves `nic` on its control socket from a thread of its own; nullptr (and a message on
  // stderr) if the socket cannot be served: the device still works, only not from outside.
  static std::unique_ptr<CtlServer> start(Nic& nic);
  ~CtlServer();  // stops the thread, closes every connection and removes the socket
  CtlServer(const CtlServer&) = delete;
  CtlServer& operator=(const CtlServer&) = delete;

  struct Impl;

 private:
  explicit CtlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mrc::ocp
