// Loading a scenario from text in a test: the text goes to a file under the test's temporary
// directory and through load_scenario, as `mrc sim` reads a file, and is removed after.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "sim/scenario.h"

namespace mrc::sim::test {

// Loads `text` as a scenario file named `name`; "" if it loaded, else the loader's message.
// The file's path names the process and the test, since ctest runs tests side by side.
inline std::string load_text(const std::string& text, Scenario& s,
                             const std::string& name = "scenario.toml") {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string path = testing::TempDir() + "/" + std::to_string(getpid()) + "-" +
                           (info != nullptr ? info->name() : "none") + "-" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  std::string error;
  const bool loaded = load_scenario(path, s, error);
  std::remove(path.c_str());  // read once; a test leaves nothing behind
  return loaded ? "" : error;
}

}  // namespace mrc::sim::test
