// netdev_sample: received bytes per interface at a fixed interval, for bench/compare.sh.
//
//   netdev_sample --interval-us 1000 --seconds 12 h0p0 h0p1 h0p2 h0p3 > samples.txt
//
// Reads /proc/net/dev of the network namespace it runs in every --interval-us (absolute
// CLOCK_MONOTONIC deadlines, so late wake-ups do not accumulate) until --seconds have passed or
// SIGTERM/SIGINT arrives, then prints one
// line per sample: CLOCK_REALTIME in nanoseconds, then the rx_bytes counter of each named
// interface. Rates are computed by the reader from consecutive lines and their real
// timestamps. The same counters serve every transport (mrc, TCP, MPTCP), which is what makes
// their time series comparable at millisecond resolution. Not linked into the engine.
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;  // SIGTERM/SIGINT: stop sampling, print what was taken

void on_signal(int) {
  g_stop = 1;
}

int64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// rx_bytes of each interface in `names` from the text of /proc/net/dev (-1 if absent).
void parse(const char* text, const std::vector<std::string>& names, int64_t* out) {
  for (size_t i = 0; i < names.size(); ++i) out[i] = -1;
  for (const char* line = text; line != nullptr && *line != '\0';) {
    const char* end = std::strchr(line, '\n');
    const char* colon = std::strchr(line, ':');
    if (colon != nullptr && (end == nullptr || colon < end)) {
      const char* name = line;
      while (*name == ' ') ++name;
      const std::string ifname(name, static_cast<size_t>(colon - name));
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == ifname) out[i] = std::strtoll(colon + 1, nullptr, 10);
    }
    line = end == nullptr ? nullptr : end + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  long interval_us = 1000;
  double seconds = 10;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--interval-us" && i + 1 < argc)
      interval_us = std::atol(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!a.empty() && a[0] != '-')
      names.push_back(a);
    else {
      std::fprintf(stderr, "usage: netdev_sample [--interval-us US] [--seconds S] IFNAME...\n");
      return 2;
    }
  }
  if (names.empty() || interval_us < 100) {
    std::fprintf(stderr,
                 "netdev_sample: name at least one interface; --interval-us at least 100\n");
    return 2;
  }
  const int fd = open("/proc/net/dev", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::perror("netdev_sample: /proc/net/dev"), 2;
  const size_t samples = static_cast<size_t>(seconds * 1e6 / static_cast<double>(interval_us)) + 1;
  const size_t width = names.size() + 1;
  std::vector<int64_t> table(samples * width, 0);
  std::vector<char> text(1 << 16);
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  size_t taken = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: the sleep returns early
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  for (; taken < samples && g_stop == 0; ++taken) {
    const ssize_t n = pread(fd, text.data(), text.size() - 1, 0);
    int64_t* row = &table[taken * width];
    row[0] = now_ns(CLOCK_REALTIME);
    text[n > 0 ? static_cast<size_t>(n) : 0] = '\0';
    parse(text.data(), names, row + 1);
    next.tv_nsec += interval_us * 1000;
    while (next.tv_nsec >= 1'000'000'000) {
      next.tv_nsec -= 1'000'000'000;
      ++next.tv_sec;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
  }
  std::printf("# realtime_ns");
  for (const std::string& n : names) std::printf(" %s", n.c_str());
  std::printf("\n");
  for (size_t s = 0; s < taken; ++s) {
    for (size_t c = 0; c < width; ++c)
      std::printf(c == 0 ? "%lld" : " %lld", static_cast<long long>(table[s * width + c]));
    std::printf("\n");
  }
  close(fd);
  return 0;
}
