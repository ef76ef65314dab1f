// The host settings (host/options.h) on a tool's command line: --KEY for each setting the tool
// takes, with the table's help line and the table's check, so a tool parses none of them itself
// and a bad value is refused, before anything runs, with the message every front door gives
// ("--busy-poll-us=2.5 is not a whole number of microseconds in 0..1000000").
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <string>
#include <string_view>

#include "host/options.h"

namespace mrc::tools {

// Adds --KEY for each of `keys` (the table's keys), setting `options` when given. `note`, if
// not empty, is added to every help line (what the tool's defaults are, who must agree).
void add_host_flags(CLI::App& app, host::Options& options,
                    std::initializer_list<std::string_view> keys, const std::string& note = "");

// How the tools spell host settings in messages: --KEY.
inline const host::Spelling kFlagSpelling{host::kDoorFlag, ""};

}  // namespace mrc::tools
