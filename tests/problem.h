// What a configuration check says is wrong, as text: "" when it passed (for tests that look
// for a field's name in the message).
#pragma once

#include <string>

#include "mrc/error.hpp"
#include "mrc/result.hpp"

namespace mrc {

inline std::string problem(const Result<Ok, Error>& checked) {
  return checked.ok() ? std::string() : checked.error().message;
}

}  // namespace mrc
