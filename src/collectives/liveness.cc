// Failure propagation through the store and reports of long waits (see liveness.h).
#include "collectives/liveness.h"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace mrc::coll {

void WaitReports::emit(const std::string& line) const {
  if (sink) return sink(line);
  std::fprintf(stderr, "%s\n", line.c_str());
}

WaitReporter::WaitReporter(const WaitReports& reports, SteadyClock::time_point since)
    : first_(reports.first_report), since_(since), next_(reports.first_report) {}

bool WaitReporter::due(SteadyClock::time_point now) {
  if (first_.count() <= 0 || now - since_ < next_) return false;
  next_ *= 2;
  return true;
}

void WaitReporter::restart(SteadyClock::time_point since) {
  since_ = since;
  next_ = first_;
}

std::chrono::milliseconds WaitReporter::waited(SteadyClock::time_point now) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - since_);
}

void FailureBoard::publish(const std::string& message) {
  if (published_) return;
  published_ = true;
  // Best effort: this rank fails either way, and peers that cannot read the board still see
  // it stop answering. A store that refuses the key is said, not dropped.
  auto set = store_.set(key_, "rank " + std::to_string(rank_) + ": " + message);
  if (!set.ok())
    reports_.emit("mrc: rank " + std::to_string(rank_) +
                  " could not publish its failure: " + set.error().message);
}

std::optional<std::string> FailureBoard::poll(SteadyClock::time_point now) {
  if (published_ || now < next_poll_) return std::nullopt;
  next_poll_ = now + kPollInterval;
  auto r = store_.try_get(key_);
  if (!r.ok() || !r.value().has_value()) return std::nullopt;
  return "failure reported by " + *r.value();
}

Result<std::string, Error> FailureBoard::wait_for(const std::string& key,
                                                  std::chrono::milliseconds timeout,
                                                  const std::string& what, const Check& check) {
  const auto start = SteadyClock::now();
  WaitReporter reporter(reports_, start);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    auto r = store_.try_get(key);
    if (!r.ok()) return Err{r.error()};
    if (r.value().has_value()) return std::move(*r.value());
    const auto now = SteadyClock::now();
    if (auto failure = poll(now)) return fail(Errc::kPeerFailed, *failure);
    if (check)
      if (auto error = check()) return Err{*error};
    if (now - start >= timeout) return Err{key_timeout(key, timeout, "waiting for " + what)};
    if (reporter.due(now))
      reports_.emit("mrc: rank " + std::to_string(rank_) + " has waited " +
                    std::to_string(reporter.waited(now).count() / 1000) + " s for " + what +
                    " (store key '" + key + "')");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace mrc::coll
