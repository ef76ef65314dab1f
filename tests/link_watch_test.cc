// LinkWatch (io/link_watch.h): the first question is always answered yes, a quiet host says no,
// and an interface that comes and goes in the watcher's network namespace is seen through
// rtnetlink's events without waiting for the fallback poll. The last needs a network namespace
// of its own (root or CAP_SYS_ADMIN), made in a child process so no other test moves.
#include "io/link_watch.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace mrc::io {
namespace {

TEST(LinkWatch, FirstQuestionIsYesThenOnlyEventsSayYes) {
  LinkWatch watch;
  const Instant t0{1'000'000};
  EXPECT_TRUE(watch.changed(t0, false));
  if (watch.fd() < 0) GTEST_SKIP() << "no rtnetlink socket here: the watch polls every 20 ms";
  // Nothing readable and the poll not due: no question to the kernel, and no.
  EXPECT_FALSE(watch.changed(t0 + Duration::from_ms(1), false));
}

// In the child: a namespace of its own, the watch, then a veth pair added and one end set up.
// Exit 0 if the watch said yes for the change while it was not due to poll, 1 if it stayed
// quiet before the change as it should not, 3 if it missed the change, 4 if set-up failed.
int child_sees_a_new_interface() {
  if (unshare(CLONE_NEWNET) != 0) return 4;
  LinkWatch watch;
  if (watch.fd() < 0) return 4;
  const Instant t0{1'000'000};
  (void)watch.changed(t0, false);
  if (watch.changed(t0 + Duration::from_ms(1), true)) return 1;  // nothing happened yet
  if (std::system("ip link add mrcw0 type veth peer name mrcw1 && ip link set mrcw0 up") != 0)
    return 4;
  // Readable now (as epoll would say); the poll is not due until t0 + 20 ms.
  return watch.changed(t0 + Duration::from_ms(2), true) ? 0 : 3;
}

TEST(LinkWatch, SeesAnInterfaceComeUpInItsNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace of its own";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(child_sees_a_new_interface());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 4) GTEST_SKIP() << "no namespace or veth here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: said yes before any change; 3: missed the change";
}

}  // namespace
}  // namespace mrc::io
