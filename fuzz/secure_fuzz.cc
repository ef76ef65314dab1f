// Fuzz target for secure mode's receive path (core/packet_protection.h): any byte string given to
// PacketProtection::open, as it is and with the S flag and a key epoch the receiver holds forced
// (so it reaches the replay window and the tag), and to unprotected_view, must not crash or read
// out of bounds (ASan), and must never open: a tag made without the key does not verify. Then a
// packet sealed from the same bytes as a plain datagram must open to exactly those bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/packet_protection.h"
#include "core/wire/packet.h"
#include "wire_fuzz_util.h"

namespace {

using mrc::PacketProtection;
using mrc::SecureMode;
using mrc::SecurityConfig;

SecurityConfig config(SecureMode mode, bool receiver) {
  SecurityConfig c;
  c.mode = mode;
  c.send_secret.fill(0x11);
  c.receive_secret.fill(0x22);
  if (receiver) std::swap(c.send_secret, c.receive_secret);
  return c;
}

void never_opens(PacketProtection& receiver, const std::vector<uint8_t>& input) {
  std::vector<uint8_t> plain(input.size() + 64);
  WIRE_FUZZ_CHECK(!receiver.open(input, plain).ok());
  std::vector<uint8_t> view(input.size() + 64);
  const size_t n = mrc::unprotected_view(input, view);
  WIRE_FUZZ_CHECK(n == 0 || n + mrc::kSecureOverheadBytes == input.size());
}

// The input as a plain datagram (if it is one the decoder accepts), sealed and opened again.
void round_trip(SecureMode mode, const std::vector<uint8_t>& input) {
  mrc::wire::DecodeOptions options;
  options.verify_icrc = false;
  if (input.size() > mrc::wire::kMaxDatagramBytes - mrc::kSecureOverheadBytes ||
      (input.size() > 8 && (input[8] & mrc::wire::kBthSecureFlag) != 0) ||
      !mrc::wire::decode(input, options).ok())
    return;
  PacketProtection sender(config(mode, false));
  PacketProtection receiver(config(mode, true));
  std::vector<uint8_t> buffer(input.size() + mrc::kSecureOverheadBytes);
  std::memcpy(buffer.data() + mrc::wire::kSechBytes, input.data(), input.size());
  const size_t sealed = sender.seal(buffer, input.size());
  WIRE_FUZZ_CHECK(sealed == buffer.size());
  std::vector<uint8_t> plain(buffer.size());
  auto opened = receiver.open(buffer, plain);
  WIRE_FUZZ_CHECK(opened.ok() && opened.value() == input.size());
  // Everything but the ICRC field, which the plain datagram leaves zero.
  WIRE_FUZZ_CHECK(std::memcmp(plain.data(), input.data(), input.size() - 4) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> input(data, data + size);  // exact size: ASan sees any overread
  for (const SecureMode mode : {SecureMode::kAuthenticate, SecureMode::kEncrypt}) {
    PacketProtection receiver(config(mode, true));
    never_opens(receiver, input);
    if (input.size() >= mrc::wire::kBthBytes + mrc::wire::kSechBytes) {
      std::vector<uint8_t> forced = input;
      forced[8] |= mrc::wire::kBthSecureFlag;
      forced[12] = 0;  // epoch 0 or 1: held by a fresh receiver
      forced[13] &= 1;
      never_opens(receiver, forced);
    }
    round_trip(mode, input);
  }
  return 0;
}
