// mrc::Error: the codes, the errno table both ways, and the engine's enums as Errors.
#include "mrc/error.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

#include "mrc/verbs.hpp"
#include "util/errno_map.h"

namespace mrc {
namespace {

constexpr Errc kAll[] = {Errc::kInvalidArgument,   Errc::kInvalidState,
                         Errc::kNotFound,          Errc::kAddressInUse,
                         Errc::kPermission,        Errc::kUnsupported,
                         Errc::kResourceExhausted, Errc::kTimedOut,
                         Errc::kPeerFailed,        Errc::kIo};

TEST(Error, EveryCodeHasItsOwnName) {
  std::set<std::string> names;
  for (Errc code : kAll) names.insert(to_string(code));
  EXPECT_EQ(names.size(), std::size(kAll));
  EXPECT_EQ(names.count("unknown error"), 0u);
}

TEST(Error, ErrnoMapsToCodesAndBack) {
  EXPECT_EQ(errc_of_errno(EADDRINUSE), Errc::kAddressInUse);
  EXPECT_EQ(errc_of_errno(EPERM), Errc::kPermission);
  EXPECT_EQ(errc_of_errno(EADDRNOTAVAIL), Errc::kNotFound);
  EXPECT_EQ(errc_of_errno(ENOMEM), Errc::kResourceExhausted);
  EXPECT_EQ(errc_of_errno(ECONNREFUSED), Errc::kPeerFailed);
  EXPECT_EQ(errc_of_errno(EIO), Errc::kIo);
  EXPECT_EQ(errc_of_errno(12345), Errc::kIo);
  // The OCP API's errno for each code leads back to that code, except where verbs reports a
  // busy device (EBUSY) for a port in use.
  for (Errc code : kAll) {
    if (code == Errc::kAddressInUse || code == Errc::kInvalidState) continue;
    EXPECT_EQ(errc_of_errno(to_errno(code)), code) << to_string(code);
  }
  EXPECT_EQ(to_errno(Errc::kAddressInUse), EBUSY);
}

TEST(Error, SystemErrorNamesTheCallAndTheReason) {
  const Error e = system_error("cannot bind 127.0.0.1:1", EADDRINUSE);
  EXPECT_EQ(e.code, Errc::kAddressInUse);
  EXPECT_EQ(e.message, "cannot bind 127.0.0.1:1: Address already in use");
}

TEST(Error, FailKeepsTheCauseCodeAndPutsContextFirst) {
  Result<Ok, Error> r = fail(Error{Errc::kNotFound, "no interface holds 192.0.2.1"}, "plane 1: ");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::kNotFound);
  EXPECT_EQ(r.error().message, "plane 1: no interface holds 192.0.2.1");
}

TEST(Error, EngineErrorsKeepTheirNames) {
  EXPECT_EQ(to_error(PostError::kQueueFull).code, Errc::kResourceExhausted);
  EXPECT_EQ(to_error(PostError::kQueueFull).message, to_string(PostError::kQueueFull));
  EXPECT_EQ(to_error(PostError::kQpState).code, Errc::kInvalidState);
  EXPECT_EQ(to_error(MrError::kUnknownKey).code, Errc::kNotFound);
  EXPECT_EQ(to_error(MrError::kTableFull).code, Errc::kResourceExhausted);
  EXPECT_EQ(to_error(QpError::kBadTransition).code, Errc::kInvalidState);
  EXPECT_EQ(to_error(QpError::kBadConfig).code, Errc::kInvalidArgument);
}

}  // namespace
}  // namespace mrc
