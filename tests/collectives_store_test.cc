// Rendezvous stores (memory, file, TCP): values cross between clients, a get waits for a key
// set later, a missing key times out naming it, bad specs are rejected; a communicator meets
// through the file and TCP stores. And the element-type kernels: 16-bit float conversions and
// the integer wrap-around of sums.
//
// Ports: UDP 5860-5869, EV source ports 14800-15380 (see collectives_test.cc); TCP: free ports.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "collectives_harness.h"

namespace mrc::coll {
namespace {

using std::chrono::milliseconds;

void expect_store_basics(Store& a, Store& b) {
  ASSERT_TRUE(a.set("x/0/1", "hello world|with=fields").ok());
  auto v = b.get("x/0/1", milliseconds(1000));
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v.value(), "hello world|with=fields");
  const std::string big(100000, 'z');
  ASSERT_TRUE(b.set("big", big).ok());
  EXPECT_EQ(a.get("big", milliseconds(1000)).value(), big);
  // A get waits for a key that another client sets later.
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_TRUE(a.set("late", "1").ok());
  });
  auto late = b.get("late", milliseconds(5000));
  later.join();
  ASSERT_TRUE(late.ok()) << late.error().message;
  auto missing = b.get("never/set", milliseconds(30));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Errc::kTimedOut);
  EXPECT_NE(missing.error().message.find("'never/set' did not appear within 30 ms"),
            std::string::npos)
      << missing.error().message;
}

TEST(CollectiveStores, MemoryStore) {
  MemoryStore s;
  expect_store_basics(s, s);
}

TEST(CollectiveStores, FileStoreSharedByTwoClients) {
  const std::string dir = "/tmp/mrc-store-test-" + std::to_string(getpid());
  auto a = FileStore::open(dir);
  auto b = open_store("file:" + dir, milliseconds(100));
  ASSERT_TRUE(a.ok() && b.ok());
  expect_store_basics(*a.value(), *b.value());
  std::filesystem::remove_all(dir);
}

TEST(CollectiveStores, TcpStoreServedByOneClientsConnectToIt) {
  auto server = TcpStoreServer::start(0);
  ASSERT_TRUE(server.ok()) << server.error().message;
  const std::string spec = "tcp:127.0.0.1:" + std::to_string(server.value()->port());
  auto a = open_store(spec, milliseconds(1000));
  auto b = TcpStore::connect("127.0.0.1", server.value()->port(), milliseconds(1000));
  ASSERT_TRUE(a.ok() && b.ok());
  expect_store_basics(*a.value(), *b.value());
}

TEST(CollectiveStores, BadSpecsAndUnreachableServers) {
  auto bogus = open_store("redis:x", milliseconds(10));
  ASSERT_FALSE(bogus.ok());
  EXPECT_NE(bogus.error().message.find("file:DIRECTORY or tcp:HOST:PORT"), std::string::npos);
  EXPECT_FALSE(open_store("tcp:127.0.0.1", milliseconds(10)).ok());
  // A port bound but never listened on: connecting is refused, and the bound socket keeps a
  // test running alongside from taking the port (freeing it would let one listen there).
  const int reserved = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(reserved, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(reserved, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(reserved, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const uint16_t port = ntohs(addr.sin_port);
  auto gone = TcpStore::connect("127.0.0.1", port, milliseconds(100));
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("is rank 0 running"), std::string::npos)
      << gone.error().message;
  ::close(reserved);
}

// Two ranks meet through a real store and all-reduce.
void all_reduce_through(const std::function<std::unique_ptr<Store>()>& open_client,
                        const std::string& prefix) {
  GroupConfig g{.ranks = 2, .port = 5860, .ev_port_base = 14800};
  Group::run_ranks(2, [&](int rank) {
    auto store = open_client();
    auto c = Communicator::create(*store, comm_options(g, rank, prefix));
    ASSERT_TRUE(c.ok()) << c.error().message;
    int64_t value[3] = {rank + 1, int64_t{10} * (rank + 1), -rank};
    ASSERT_TRUE(c.value()->all_reduce(value, value, 3, DataType::kInt64, ReduceOp::kSum).ok());
    EXPECT_EQ(value[0], 3);
    EXPECT_EQ(value[1], 30);
    EXPECT_EQ(value[2], -1);
    EXPECT_TRUE(c.value()->close().ok());
  });
}

TEST(CollectiveStores, CommunicatorsMeetThroughFileAndTcpStores) {
  const std::string dir = "/tmp/mrc-store-comm-" + std::to_string(getpid());
  all_reduce_through(
      [&] { return std::move(open_store("file:" + dir, milliseconds(1000)).value()); }, "f");
  std::filesystem::remove_all(dir);
  auto server = TcpStoreServer::start(0);
  ASSERT_TRUE(server.ok());
  const std::string spec = "tcp:127.0.0.1:" + std::to_string(server.value()->port());
  all_reduce_through([&] { return std::move(open_store(spec, milliseconds(1000)).value()); }, "t");
}

TEST(CollectiveTypes, HalfPrecisionRoundTripsAndRounds) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
    } else {
      EXPECT_EQ(float_to_half(f), bits) << bits;
    }
  }
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);                // overflow: infinity
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);  // halfway: to even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3C02);  // halfway: to even (up)
  EXPECT_EQ(float_to_half(5.96046448e-8f), 0x0001);      // smallest subnormal
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + 1.0f / 256), 0x3F80);  // halfway: to even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3.0f / 256), 0x3F82);
  EXPECT_EQ(bfloat16_to_float(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

TEST(CollectiveTypes, KernelsWrapIntegersAndAverageOnce) {
  int32_t a[2] = {INT32_MAX, 7}, b[2] = {1, -9};
  reduce_into(DataType::kInt32, ReduceOp::kSum, a, b, 2);
  EXPECT_EQ(a[0], INT32_MIN);
  EXPECT_EQ(a[1], -2);
  uint8_t x[1] = {200}, y[1] = {100};
  reduce_into(DataType::kUint8, ReduceOp::kSum, x, y, 1);
  EXPECT_EQ(x[0], 44);
  int64_t s[1] = {7};
  finalize_average(DataType::kInt64, ReduceOp::kAvg, s, 1, 2);
  EXPECT_EQ(s[0], 3);
  double m[2] = {1.5, -2}, n[2] = {-4, 8};
  reduce_into(DataType::kFloat64, ReduceOp::kMin, m, n, 2);
  EXPECT_EQ(m[0], -4);
  EXPECT_EQ(m[1], -2);
  EXPECT_EQ(parse_data_type("bf16"), DataType::kBFloat16);
  EXPECT_EQ(parse_data_type("half"), DataType::kFloat16);
  EXPECT_FALSE(parse_data_type("complex").has_value());
  EXPECT_EQ(parse_reduce_op("avg"), ReduceOp::kAvg);
}

}  // namespace
}  // namespace mrc::coll
