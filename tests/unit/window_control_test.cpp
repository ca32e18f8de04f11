// The adaptive caller window of skiplist_map's batches
// (detail/window_control.hpp), driven by simple models of the list service:
// each epoch of W answers takes W / rate(W) seconds of simulated time.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "mpidict/detail/window_control.hpp"

namespace {

using mpidict::detail::window_control;

// Runs `epochs` epochs; returns the windows the controller chose.
template <class Rate>
std::vector<std::size_t> drive(window_control& control, int epochs, Rate&& rate) {
    double now = 1.0;
    control.start_batch(now);
    std::vector<std::size_t> windows;
    for (int epoch = 0; epoch < epochs; ++epoch) {
        const std::size_t window = control.window();
        now += static_cast<double>(window) / rate(window);
        for (std::size_t answer = 0; answer < window; ++answer) {
            if (control.answered()) {
                control.end_epoch(now);
                break;
            }
        }
        windows.push_back(control.window());
    }
    return windows;
}

// A service with a fixed reply latency and a capacity: W keys in flight give
// W / latency answers per second until the capacity is reached (the knee at
// W = capacity x latency = 200 keys); past 8x the knee the service degrades
// (buffers overflow, the caller crowds out others).
double knee_service(std::size_t window) {
    const double latency = 100e-6, capacity = 2e6;
    const double w = static_cast<double>(window);
    double rate = std::min(w / latency, capacity);
    if (w > 1600)
        rate *= 1600 / w;
    return rate;
}

TEST(WindowControl, ClimbsToTheKneeAndStaysNearIt) {
    window_control control(8, 65536, 8);
    const auto windows = drive(control, 400, knee_service);
    // After settling, W stays between half the knee and the start of the decline.
    for (std::size_t epoch = 100; epoch < windows.size(); ++epoch) {
        EXPECT_GE(windows[epoch], 100u) << "epoch " << epoch;
        EXPECT_LE(windows[epoch], 3200u) << "epoch " << epoch;
    }
    EXPECT_GT(control.rate(), 1e6);
    EXPECT_GT(control.latency(), 0.0);
}

TEST(WindowControl, ComesDownFromATooLargeStart) {
    window_control control(8, 65536, 65536);
    const auto windows = drive(control, 400, knee_service);
    for (std::size_t epoch = 100; epoch < windows.size(); ++epoch)
        EXPECT_LE(windows[epoch], 3200u) << "epoch " << epoch;
}

TEST(WindowControl, GrowsWhileMoreKeysInFlightBringMoreAnswers) {
    // No capacity limit within the bounds: the rate keeps rising with W.
    window_control control(8, 1024, 8);
    drive(control, 20, [](std::size_t window) { return static_cast<double>(window) / 1e-4; });
    EXPECT_EQ(control.window(), 1024u);
}

TEST(WindowControl, StaysWithinItsBoundsAndIgnoresAStillClock) {
    window_control tiny(8, 1, 32);  // caller_window = 1: always 1
    EXPECT_EQ(tiny.window(), 1u);
    drive(tiny, 50, [](std::size_t window) { return static_cast<double>(window) / 1e-4; });
    EXPECT_EQ(tiny.window(), 1u);
    window_control zero(0, 0, 0);
    EXPECT_EQ(zero.window(), 1u);
    window_control small(2, 3, 3);  // a quarter of 3 is 0: W still moves
    drive(small, 10, [](std::size_t) { return 1e6; });
    EXPECT_EQ(small.window(), 2u);
    window_control still(8, 64, 32);
    still.start_batch(5.0);
    for (int i = 0; i < 100; ++i)
        if (still.answered())
            still.end_epoch(5.0);  // no time passed: no rate, no change
    EXPECT_EQ(still.window(), 32u);
    EXPECT_EQ(still.rate(), 0.0);
}

}  // namespace
