#pragma once
// The caller window W of skiplist_map's batches, adapted while a batch runs
// (seed 004, Section 2: "each application process continuously measures the
// reply latency for operations and adjusts W accordingly", growing W as latency
// grows but not past its share of the service).
//
// What is measured.  With W keys in flight, answers arrive at rate W / latency
// (Little's law), so the time one window of answers takes is the reply latency
// as the caller sees it.  The controller times every window of answers (an
// epoch) and climbs the answer rate:
//   the rate rose by more than `tolerance`  -> keep moving W the same way;
//   it fell by more than `tolerance`        -> turn around;
//   it stayed within `tolerance`            -> move down: a smaller W with the
//                                              same rate is the same throughput
//                                              with less latency and less of the
//                                              service taken from other callers.
// Up doubles W, down takes a quarter off; W stays within [minimum, maximum]
// (maximum: config.caller_window).
//
// A rule on round trips alone (grow while the latest round trip is near the
// smallest one, as TCP Vegas does) collapsed W to its minimum here: keys whose
// node is on the caller's own rank come back through loopback in a fraction of
// a remote round trip, and that fraction became the "unloaded" latency that no
// remote answer ever reached.
//
// Pure arithmetic, no clock: the caller passes the time (seconds).

#include <algorithm>
#include <cstddef>

namespace mpidict::detail {

class window_control {
public:
    static constexpr double tolerance = 0.05;

    window_control(std::size_t minimum, std::size_t maximum, std::size_t initial)
        : m_minimum(std::max<std::size_t>(1, std::min(minimum, maximum))),
          m_maximum(std::max<std::size_t>(1, maximum)),
          m_window(std::clamp(initial, m_minimum, m_maximum)) {}

    std::size_t window() const { return m_window; }
    std::size_t maximum() const { return m_maximum; }
    // The answer rate of the last complete epoch (answers per second; 0: none yet).
    double rate() const { return m_last_rate; }
    // Reply latency implied by that rate and the window it was measured at.
    double latency() const { return m_last_rate > 0 ? static_cast<double>(m_last_window) / m_last_rate : 0; }

    // A new batch starts at `now`; W and the direction carry over, the rate to
    // beat is measured afresh (the list or the other callers may have changed).
    void start_batch(double now) {
        m_epoch_start = now;
        m_answers = 0;
        m_last_rate = 0;
    }
    // One answer arrived; true when an epoch is complete (call end_epoch).
    bool answered() { return ++m_answers >= m_window; }
    void end_epoch(double now) {
        const double elapsed = now - m_epoch_start;
        if (!(elapsed > 0))
            return;  // a clock that stood still: keep counting
        const double rate = static_cast<double>(m_answers) / elapsed;
        if (m_last_rate > 0) {
            if (rate < m_last_rate * (1 - tolerance))
                m_up = !m_up;
            else if (rate <= m_last_rate * (1 + tolerance))
                m_up = false;
        }
        m_last_rate = rate;
        m_last_window = m_window;
        m_window = m_up ? std::min(m_maximum, m_window * 2) : std::max(m_minimum, m_window - std::max<std::size_t>(1, m_window / 4));
        m_epoch_start = now;
        m_answers = 0;
    }

private:
    std::size_t m_minimum;
    std::size_t m_maximum;
    std::size_t m_window;
    std::size_t m_last_window = 0;
    bool m_up = true;
    double m_epoch_start = 0;
    double m_last_rate = 0;
    std::size_t m_answers = 0;
};

}  // namespace mpidict::detail
