// Benchmarks of the wire codec's per-packet path: encoding a 4 KiB data packet (write_data_header
// + payload memcpy + seal), decoding it, the ICRC on its own (each implementation), and a plain
// 4 KiB memcpy as the floor every sender pays anyway. Control packets are included for scale.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/wire/icrc.h"
#include "core/wire/packet.h"

namespace mrc::wire {
namespace {

constexpr size_t kPayload = 4096;

DataHeader typical_header() {
  DataHeader h;
  h.bth.opcode = Opcode::kWriteMiddle;
  h.bth.dest_qp = Qpn(0x1234);
  h.bth.timestamp_present = true;
  h.bth.psn = Psn(1000);
  h.meth = {3, 7};
  h.tseth = {0x1234, false, 1};
  h.reth = {0x7F0000001000ull, 0xABCD, 1u << 20};
  return h;
}

std::vector<uint8_t> filled(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
  return v;
}

// A payload and a datagram buffer placed so that the destination is 2 KiB away from the source
// modulo 4 KiB: with both at the same offset modulo 4 KiB, every load in the copy falsely aliases
// a recent store (4K aliasing) and the "floor" would be several times slower than a real send.
struct CopyBuffers {
  std::vector<uint8_t> source_storage = filled(kPayload);
  std::vector<uint8_t> dest_storage = std::vector<uint8_t>(kMaxDatagramBytes + 8192);
  const uint8_t* payload = source_storage.data();
  std::span<uint8_t> out;
  CopyBuffers() {
    const auto distance =
        reinterpret_cast<uintptr_t>(dest_storage.data()) - reinterpret_cast<uintptr_t>(payload);
    const size_t offset = (2048 + 4096 - distance % 4096) % 4096;
    out = std::span(dest_storage).subspan(offset, kMaxDatagramBytes);
  }
};

void BM_Memcpy4K(benchmark::State& state) {
  CopyBuffers buffers;
  for (auto _ : state) {
    std::memcpy(buffers.out.data() + 40, buffers.payload, kPayload);
    benchmark::DoNotOptimize(buffers.out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPayload));
}
BENCHMARK(BM_Memcpy4K);

void BM_EncodeData4K(benchmark::State& state) {
  CopyBuffers buffers;
  DataHeader h = typical_header();
  for (auto _ : state) {
    h.bth.psn += 1;
    const size_t header = write_data_header(h, buffers.out);
    std::memcpy(buffers.out.data() + header, buffers.payload, kPayload);
    const size_t length = seal(buffers.out, header + kPayload);
    benchmark::DoNotOptimize(length);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPayload));
}
BENCHMARK(BM_EncodeData4K);

std::vector<uint8_t> sealed_data_packet() {
  const std::vector<uint8_t> payload = filled(kPayload);
  std::vector<uint8_t> out(kMaxDatagramBytes);
  out.resize(encode(DataPacket{typical_header(), payload}, out));
  return out;
}

void BM_DecodeData4K(benchmark::State& state) {
  const std::vector<uint8_t> wire = sealed_data_packet();
  for (auto _ : state) {
    auto packet = decode(wire);
    benchmark::DoNotOptimize(packet);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPayload));
}
BENCHMARK(BM_DecodeData4K);

void BM_DecodeData4KNoIcrc(benchmark::State& state) {
  const std::vector<uint8_t> wire = sealed_data_packet();
  for (auto _ : state) {
    auto packet = decode(wire, {.trimmed = false, .verify_icrc = false});
    benchmark::DoNotOptimize(packet);
  }
}
BENCHMARK(BM_DecodeData4KNoIcrc);

template <uint32_t (*Crc)(std::span<const uint8_t>)>
void BM_Icrc(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const std::vector<uint8_t> data = filled(n);
  for (auto _ : state) {
    uint32_t crc = Crc(data);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

// Control packets are 16..48 bytes (ACK 16, probe 28, NACK 32, SACK 48); a 4 KiB data packet's
// ICRC covers 4132 bytes (36 bytes of headers); 9048 is about the largest (9000-byte payload).
void icrc_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {16, 28, 32, 48, 64, 128, 256, 512, 1024, 4096, 4132, 9048}) b->Arg(n);
}

BENCHMARK(BM_Icrc<icrc32>)->Name("BM_Icrc32/dispatch")->Apply(icrc_sizes);
BENCHMARK(BM_Icrc<detail::icrc32_portable>)->Name("BM_Icrc32/portable")->Apply(icrc_sizes);

void BM_IcrcClmul(benchmark::State& state) {
  if (!detail::clmul_available()) {
    state.SkipWithError("no PCLMULQDQ on this CPU");
    return;
  }
  BM_Icrc<detail::icrc32_clmul>(state);
}
BENCHMARK(BM_IcrcClmul)->Name("BM_Icrc32/pclmul")->Apply(icrc_sizes);

void BM_IcrcVclmul(benchmark::State& state) {
  if (!detail::vclmul_available()) {
    state.SkipWithError("no VPCLMULQDQ/AVX-512 on this CPU");
    return;
  }
  BM_Icrc<detail::icrc32_vclmul>(state);
}
BENCHMARK(BM_IcrcVclmul)->Name("BM_Icrc32/vpclmul")->Apply(icrc_sizes);

void BM_EncodeSack(benchmark::State& state) {
  ControlPacket c{Bth{}, Sack{}};
  c.bth.opcode = Opcode::kSack;
  Sack& s = std::get<Sack>(c.body);
  s.bitmap = 0xF0F0F0F0F0F0F0F0ull;
  const Packet packet = c;
  std::vector<uint8_t> out(128);
  for (auto _ : state) {
    const size_t n = encode(packet, out);
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EncodeSack);

void BM_DecodeSack(benchmark::State& state) {
  ControlPacket c{Bth{}, Sack{}};
  c.bth.opcode = Opcode::kSack;
  std::vector<uint8_t> wire(128);
  wire.resize(encode(c, wire));
  for (auto _ : state) {
    auto packet = decode(wire);
    benchmark::DoNotOptimize(packet);
  }
}
BENCHMARK(BM_DecodeSack);

}  // namespace
}  // namespace mrc::wire

BENCHMARK_MAIN();
