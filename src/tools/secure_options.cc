// The tools' secure-mode options (see secure_options.h).
#include "tools/secure_options.h"

namespace mrc::tools {

void add_secure_options(CLI::App& app, std::string& secure, std::string& key_file,
                        const std::string& who) {
  app.add_option("--secure", secure,
                 "secure mode (" + who +
                     " alike): off (default), auth (every packet carries an AES-GCM tag) or "
                     "encrypt (payloads encrypted too); needs --key-file")
      ->check(CLI::IsMember({"off", "auth", "encrypt"}));
  app.add_option("--key-file", key_file,
                 "secure mode's pre-shared key, the same file for " + who +
                     ": hex digits (openssl rand -hex 32 > FILE; chmod 600 FILE); each queue "
                     "pair's keys come from a key exchange it authenticates");
}

}  // namespace mrc::tools
