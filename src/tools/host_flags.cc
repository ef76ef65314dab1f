// The host settings as a tool's flags (see host_flags.h): each flag's callback hands its text to
// host::set; CLI11 reports a refusal as the flag's validation error.
#include "tools/host_flags.h"

namespace mrc::tools {

void add_host_flags(CLI::App& app, host::Options& options,
                    std::initializer_list<std::string_view> keys, const std::string& note) {
  for (std::string_view key : keys) {
    const host::Setting* setting = host::find_setting(key);
    if (setting == nullptr || (setting->doors & host::kDoorFlag) == 0) continue;  // not a flag
    const std::string name(setting->key);
    app.add_option_function<std::string>(
           "--" + name,
           [&options, name](const std::string& text) {
             auto set = host::set(options, name, text, kFlagSpelling);
             if (!set.ok()) throw CLI::ValidationError(set.error().message);
           },
           std::string(setting->help) + (note.empty() ? "" : "; " + note))
        ->type_name(std::string(setting->value));
  }
}

}  // namespace mrc::tools
