// mrc::Error: the one error type that mrc's interfaces outside the engine return (the native API,
// the datapath, the collectives and the tools' libraries). It carries a code a program can
// branch on and a message a person can act on: what failed, and what to change. The engine
// reports its own small enums (QpError, MrError, PostError), which the API turns into an
// Error; errno values appear only at the OCP boundary (lib_mrc.so), which maps the codes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "mrc/result.hpp"

namespace mrc {

enum class Errc : uint8_t {
  kInvalidArgument,    // bad input or configuration: the message names what to change
  kInvalidState,       // the object is not in a state that allows the call
  kNotFound,           // an address, interface, key, file or object that does not exist
  kAddressInUse,       // a local port another socket holds
  kPermission,         // needs root or a capability
  kUnsupported,        // this build, kernel or interface does not offer it
  kResourceExhausted,  // a queue, table, range or memory limit is full
  kTimedOut,           // a deadline passed
  kPeerFailed,         // a peer died, stopped answering, or reported a failure
  kIo,                 // a system call or file operation failed for another reason
};

struct Error {
  Errc code = Errc::kIo;
  std::string message;
};

// The code's name, for messages and JSON ("invalid argument", "address in use", ...).
const char* to_string(Errc code);

// `return fail(Errc::kNotFound, "no interface holds " + address);`
inline Err<Error> fail(Errc code, std::string message) {
  return Err<Error>{Error{code, std::move(message)}};
}

// The same error with `context` put in front of its message ("connect: " + ...).
inline Err<Error> fail(const Error& cause, const std::string& context) {
  return Err<Error>{Error{cause.code, context + cause.message}};
}

}  // namespace mrc
