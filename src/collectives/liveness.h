// How every rank of a communicator learns, within seconds, that some rank failed, and what a
// long wait says while it lasts.
//
// A rank that fails (a peer stopped answering, a protocol error, a timeout) publishes one line
// under the communicator's failure key in the store. Every rank polls that key while it waits,
// at most every kPollInterval, so a failure seen by one rank fails them all, naming the rank
// that saw it and what it saw. This covers ranks that had no traffic outstanding to the rank
// that died: its neighbours notice (their queue pairs run out of retries, helped by the
// transport's heartbeat writes) and the rest hear it from the store.
//
// A wait that makes no progress is reported on stderr (or to a sink) after `first_report`, then
// after twice as long each time, saying what it waits for, so a stall is never silent.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "collectives/store.h"

namespace mrc::coll {

using SteadyClock = std::chrono::steady_clock;

// Where wait reports go: a line without a trailing newline. Empty: stderr.
using ReportSink = std::function<void(const std::string&)>;

struct WaitReports {
  std::chrono::milliseconds first_report{5000};  // 0: never report
  ReportSink sink;
  void emit(const std::string& line) const;
};

// When a wait that started at `since` is next reported: first_report, then doubling.
class WaitReporter {
 public:
  WaitReporter(const WaitReports& reports, SteadyClock::time_point since);
  // True (once per step) when the wait has lasted long enough to be reported again.
  bool due(SteadyClock::time_point now);
  void restart(SteadyClock::time_point since);
  std::chrono::milliseconds waited(SteadyClock::time_point now) const;

 private:
  std::chrono::milliseconds first_;
  SteadyClock::time_point since_;
  std::chrono::milliseconds next_;
};

class FailureBoard {
 public:
  static constexpr std::chrono::milliseconds kPollInterval{250};

  FailureBoard(Store& store, std::string key, int rank, WaitReports reports)
      : store_(store), key_(std::move(key)), rank_(rank), reports_(std::move(reports)) {}

  // Tells every rank (best effort: a store that is gone cannot be told).
  void publish(const std::string& message);
  // A failure another rank published, as this rank's error message; checks the store at most
  // every kPollInterval (`now` decides).
  std::optional<std::string> poll(SteadyClock::time_point now);
  // Store::get that returns early with the failure another rank published (or the error
  // `check` finds, if given: it runs between tries), and reports a long wait as "waiting for
  // <what>".
  using Check = std::function<std::optional<Error>()>;
  Result<std::string, Error> wait_for(const std::string& key, std::chrono::milliseconds timeout,
                                      const std::string& what, const Check& check = nullptr);
  const WaitReports& reports() const { return reports_; }
  int rank() const { return rank_; }

 private:
  Store& store_;
  std::string key_;
  int rank_;
  WaitReports reports_;
  SteadyClock::time_point next_poll_{};
  bool published_ = false;
};

}  // namespace mrc::coll
