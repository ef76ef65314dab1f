// Loading a scenario from text in a test: the text goes to a file under the test's temporary
// directory and through load_scenario, as `mrc sim` reads a file.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "sim/scenario.h"

namespace mrc::sim::test {

// Loads `text` as a scenario file named `name`; "" if it loaded, else the loader's message.
inline std::string load_text(const std::string& text, Scenario& s, const std::string& name = "scenario.toml") {
  const std::string path = testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  std::string error;
  return load_scenario(path, s, error) ? "" : error;
}

}  // namespace mrc::sim::test
