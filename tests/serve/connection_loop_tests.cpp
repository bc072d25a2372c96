// A request's deadlines (serve/connection_loop.h): the head within head_seconds of its first
// byte, the body at body_min_rate after as long again, none between requests. The live server's
// 408s are in check_server.sh (slow_clients.py).
#include "tools/loom/serve/connection_loop.h"

#include <gtest/gtest.h>

namespace loom::serve {
namespace {

using Clock = RequestClock::Clock;
using std::chrono::milliseconds;

const ConnectionLimits kLimits{.head_seconds = 2, .body_min_rate = 100};

TEST(RequestClock, NoDeadlineBetweenRequests) {
    RequestClock clock(kLimits);
    EXPECT_EQ(clock.part(), RequestClock::Part::none);
    EXPECT_EQ(clock.deadline(), Clock::time_point::max());
    clock.head_started(Clock::now());
    clock.request_ended();
    EXPECT_EQ(clock.deadline(), Clock::time_point::max());
}

TEST(RequestClock, TheHeadHasItsSecondsFromItsFirstByte) {
    RequestClock clock(kLimits);
    const Clock::time_point t0 = Clock::now();
    clock.head_started(t0);
    EXPECT_EQ(clock.part(), RequestClock::Part::head);
    EXPECT_EQ(clock.deadline(), t0 + milliseconds(2000));
    EXPECT_NE(clock.missed_deadline().find("head did not arrive within 2 s"), std::string::npos)
        << clock.missed_deadline();
}

TEST(RequestClock, EachBodyMinRateBytesBuyASecond) {
    RequestClock clock(kLimits);
    const Clock::time_point t0 = Clock::now();
    clock.head_started(t0 - milliseconds(1500));
    clock.body_started(t0);  // the body gets the head's 2 s again, whatever the head took
    EXPECT_EQ(clock.deadline(), t0 + milliseconds(2000));
    clock.body_arrived(50);
    EXPECT_EQ(clock.deadline(), t0 + milliseconds(2500));
    clock.body_arrived(250);
    EXPECT_EQ(clock.deadline(), t0 + milliseconds(5000));
    EXPECT_NE(clock.missed_deadline().find("slower than 100 bytes a second"), std::string::npos)
        << clock.missed_deadline();
    // A new body counts from nothing.
    clock.body_started(t0 + milliseconds(10000));
    EXPECT_EQ(clock.deadline(), t0 + milliseconds(12000));
}

TEST(RequestClock, NoRateNoBodyDeadline) {
    RequestClock clock(ConnectionLimits{.head_seconds = 2, .body_min_rate = 0});
    clock.body_started(Clock::now());
    EXPECT_EQ(clock.deadline(), Clock::time_point::max());
}

TEST(ConnectionLoopServer, ARequestNotReadByItHasNoSocket) {
    ConnectionLoopServer server(kLimits);
    httplib::Request request;
    request.remote_addr = "127.0.0.1";
    request.remote_port = 5000;
    EXPECT_EQ(server.client_socket(request), -1);
}

}  // namespace
}  // namespace loom::serve
