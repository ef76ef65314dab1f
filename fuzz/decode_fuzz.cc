// Fuzz target for wire::decode: any byte string, decoded with the ICRC checked, unchecked, and as
// a trimmed packet, must not crash or read out of bounds (ASan), and every packet it accepts
// must survive encode -> decode unchanged: the decoder never yields a packet the encoder cannot
// reproduce, and a data payload always points inside the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/wire/packet.h"
#include "wire_fuzz_util.h"

namespace {

using mrc::wire::DataPacket;
using mrc::wire::DecodeOptions;

void check_accepted(const mrc::wire::Packet& packet, std::span<const uint8_t> input) {
  if (const auto* data = std::get_if<DataPacket>(&packet)) {
    WIRE_FUZZ_CHECK(data->payload.size() <= mrc::wire::kMaxPayloadBytes);
    WIRE_FUZZ_CHECK(data->payload.empty() ||
                    (data->payload.data() >= input.data() &&
                     data->payload.data() + data->payload.size() <= input.data() + input.size()));
  }
  std::vector<uint8_t> wire(mrc::wire::kMaxDatagramBytes);
  const size_t n = mrc::wire::encode(packet, wire);
  WIRE_FUZZ_CHECK(n > 0);
  wire.resize(n);
  auto again = mrc::wire::decode(wire);
  WIRE_FUZZ_CHECK(again.ok());
  WIRE_FUZZ_CHECK(mrc::wire::fuzz::same_packet(packet, again.value()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy, so ASan sees a read even one byte past the end.
  const std::vector<uint8_t> input(data, data + size);
  const DecodeOptions all_options[] = {
      {.trimmed = false, .verify_icrc = true},
      {.trimmed = false, .verify_icrc = false},
      {.trimmed = true, .verify_icrc = true},
  };
  for (const DecodeOptions& options : all_options) {
    auto result = mrc::wire::decode(input, options);
    if (result.ok()) check_accepted(result.value(), input);
  }
  return 0;
}
