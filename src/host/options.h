// A host's options, in one table: the planes, ports, datapath, threads, secure mode and
// metrics endpoint of the host a process's queue pairs run on.
//
// mrc has several front doors: the native API (ContextOptions), `mrc perf` and the collectives'
// tools (flags), the OCP verbs devices (key=value entries), the libfabric provider (FI_MRC_*
// variables) and the torch backend (MRC_* variables). Each spells a setting its own way, but
// what a setting means, which values it takes and what is said of a bad one is written once,
// here: a front door hands set() the setting's key and text, and finish() the whole, and
// messages name the setting as that front door spells it (Spelling). The typed result is a
// ContextOptions, the native API's own struct, which device_config() turns into the
// datapath's configuration, the one place that conversion is made.
//
// Adding a host option: a field in ContextOptions (include/mrc/mrc.hpp), a row in the table
// (options.cc, with its parser and the front doors that take it), its use in device_config()
// or the host (host.cc), its line in docs/ARCHITECTURE.md's option list, and a case in
// tests/host_options_test.cc. Every front door then takes it under its own spelling.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/device.h"
#include "mrc/mrc.hpp"

namespace mrc::host {

struct Options {
  ContextOptions context;
  std::string key_file;  // key-file: read into context.preshared_key by finish()
};

// The front doors, as a mask of who takes a setting.
enum Door : uint8_t {
  kDoorNative = 1,    // ContextOptions fields (typed; no text)
  kDoorFlag = 2,      // command-line tools: --key VALUE
  kDoorEntry = 4,     // OCP device entries: key=VALUE
  kDoorProvider = 8,  // the libfabric provider: FI_MRC_KEY
  kDoorTorch = 16,    // the torch backend: MRC_KEY
  kDoorAll = 31,
};

// How a front door spells a setting, for its messages: "--busy-poll-us", "busy-poll-us=",
// "FI_MRC_BUSY_POLL_US", "MRC_BUSY_POLL_US".
struct Spelling {
  Door door = kDoorFlag;
  std::string prefix;  // kDoorProvider, kDoorTorch: "FI_MRC_", "MRC_"; kDoorEntry: context
  std::string name(std::string_view key) const;
};

struct Setting {
  std::string_view key;    // "busy-poll-us"
  std::string_view value;  // what the value is, for help texts: "US"
  std::string_view help;   // one line: what it does, its range and default
  uint8_t doors;           // Door mask
  // Parses `text` into `o`; returns what is wrong with it ("" when it is right). The caller
  // names the setting.
  std::string (*parse)(const std::string& text, Options& o);
  std::string_view alias = {};  // an older name that front doors still take ("ev-ports")
};

// Every host setting, in the order help texts list them.
std::span<const Setting> settings();
// The setting named `key` (or, failing that, whose alias it is), or null.
const Setting* find_setting(std::string_view key);
// The keys a front door takes, spelled as it spells them: "--planes, --port, ...".
std::string setting_names(const Spelling& spelling);
// The environment variable of a setting for a variable-spelled front door ("MRC_" +
// "BUSY_POLL_US").
std::string env_name(std::string_view prefix, std::string_view key);

// Sets one setting from its text. Refused, with a message naming it as `spelling` spells it:
// an unknown key or one this front door does not take (the message lists those it takes), or
// a bad value (the message says the range).
Result<Ok, Error> set(Options& o, std::string_view key, const std::string& text,
                      const Spelling& spelling);
// Every setting the front door takes whose variable is set in the environment (prefix +
// upper-case key); the first refused one is the error.
Result<Ok, Error> set_from_environment(Options& o, const Spelling& spelling);

// What holds between settings, checked once they are all set: secure mode has its key (read
// from key-file now), the planes' address families suit the backend and SRv6 paths, and every
// thread's ports fit below 65536. Messages name the settings as `spelling` spells them.
Result<Ok, Error> finish(Options& o, const Spelling& spelling);
// The same without reading the key file (only that secure mode names one): for a front door
// that reads the key when its host opens (the OCP devices read one configuration for every
// device, opened or not).
Result<Ok, Error> check(Options& o, const Spelling& spelling);

// The pre-shared key secure mode `mode` needs, read from `key_file` (empty when the mode is
// off). `mode_setting` and `file_setting` are how the user set them ("--secure ", "--key-file";
// "MRC_SECURE=", "MRC_KEY_FILE"), for the message when no file was given; `holders` says who
// must hold the same key ("both sides", "every rank").
Result<std::vector<uint8_t>, Error> preshared_key_for(SecureMode mode, const std::string& key_file,
                                                      const std::string& mode_setting,
                                                      const std::string& file_setting,
                                                      const std::string& holders);

// The datapath configuration (a shard's, before host.h gives each shard its ports) of a
// context opened with `o`; the one conversion from options to io::DeviceConfig.
// Messages name the settings as `spelling` spells them (by default, ContextOptions' fields).
Result<io::DeviceConfig, Error> device_config(const ContextOptions& o,
                                              const Spelling& spelling = {kDoorNative, ""});

// A plane named by an address (IPv4[:port], IPv6, [IPv6]:port), an interface (its first IPv4
// address), or an IPv4 prefix holding one of this host's addresses ("198.18.0.0/24"), so that
// one setting serves every host of a job; the result is an address text. Error: names the
// entry.
Result<std::string, Error> resolve_plane(const std::string& entry);

}  // namespace mrc::host
