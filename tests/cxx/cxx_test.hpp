// Helpers of the C++ tests: unique channel names that the shm_clean
// fixture recognises ("nt-<pid>-..."), removed when the test ends, and a
// watchdog so that a hang fails the test instead of stalling the run.
#ifndef NERVE_TESTS_CXX_TEST_HPP
#define NERVE_TESTS_CXX_TEST_HPP

#include <nerve/nerve.hpp>

#include <gtest/gtest.h>

#include <string>
#include <unistd.h>
#include <vector>

namespace nt {

/// A fixture whose name() hands out channel names "nt-<pid>-cxx<n>-<tag>"
/// and unlinks them all in TearDown (errors ignored: a test may have
/// removed one itself). SetUp arms alarm(60): the default SIGALRM action
/// ends a hung test.
class ChannelTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        alarm(60);
    }
    void TearDown() override
    {
        for (const auto &n : names_) {
            (void)nerve::Channel::unlink(n);
        }
        alarm(0);
    }
    std::string name(const char *tag)
    {
        std::string n = "nt-" + std::to_string(getpid()) + "-cxx" +
                        std::to_string(names_.size()) + "-" + tag;
        names_.push_back(n);
        return n;
    }

private:
    std::vector<std::string> names_;
};

} // namespace nt

#endif
