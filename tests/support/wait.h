// Deadlines for tests that wait on another thread or process: poll a probe until it says yes
// or the time is up, and on giving up say what was awaited and the last value seen, so that a
// hang fails one test with a message instead of stalling the whole run. Any thread may call.
//
//   ASSERT_TRUE(picket::testing::wait_until([&] { return engine.collect_stats().get("x"); },
//                                           [](uint64_t v) { return v > 0; }, 10s,
//                                           "the first packet to be decoded"));
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

namespace picket::testing {

// Long enough for a loaded 2-core CI machine under ThreadSanitizer; a test that needs less
// should pass its own.
inline constexpr std::chrono::milliseconds kDefaultWait{30000};
inline constexpr std::chrono::milliseconds kPollEvery{5};

// Reads read() until done(value) holds or timeout passes. read() runs at least once, and once
// more after the deadline, so a slow scheduler cannot fail a wait whose condition became true
// during the last sleep. The failure names `what` and prints the last value read.
template <typename Read, typename Done>
::testing::AssertionResult wait_until(Read&& read, Done&& done, std::chrono::milliseconds timeout,
                                      const std::string& what,
                                      std::chrono::milliseconds every = kPollEvery) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const bool last_try = std::chrono::steady_clock::now() >= deadline;
        auto value = read();
        if (done(value)) {
            return ::testing::AssertionSuccess();
        }
        if (last_try) {
            return ::testing::AssertionFailure()
                   << "gave up after " << timeout.count() << " ms waiting for " << what
                   << "; last value seen: " << ::testing::PrintToString(value);
        }
        std::this_thread::sleep_for(every);
    }
}

// The same for a plain condition: the last value seen is the condition itself (false), so
// `what` should say which state was expected.
template <typename Pred>
::testing::AssertionResult wait_until(Pred&& pred, std::chrono::milliseconds timeout,
                                      const std::string& what,
                                      std::chrono::milliseconds every = kPollEvery) {
    return wait_until([&] { return static_cast<bool>(pred()); }, [](bool v) { return v; }, timeout,
                      what, every);
}

}  // namespace picket::testing
