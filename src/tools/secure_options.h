// Secure mode on a tool's command line (`mrc perf`, `mrc allreduce-perf`): the two options, and
// the pre-shared key they name (io::preshared_key_for).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mrc::tools {

// --secure MODE (off, auth, encrypt) and --key-file FILE; `who` says which ends must agree
// ("both sides", "every rank").
void add_secure_options(CLI::App& app, std::string& secure, std::string& key_file,
                        const std::string& who);

}  // namespace mrc::tools
