#pragma once
// The stuck-wait detector (docs/runtime.md, "Stuck waits").
//
// A rank that waits on a container (a request's get(), a batch, flush(), a
// container collective, a full send queue) depends on other ranks to answer,
// and they answer only from inside mpidict calls of their own. When one of
// them sits in an MPI call of its own instead (a collective entered on some
// ranks only, or without flush() first), the wait never ends. The detector
// watches every such wait: if no message arrives from the ranks the wait
// depends on for N seconds, it prints once, on that rank, to stderr, what it
// waits for, which ranks have been silent, and the likely cause; the rank
// keeps waiting. N is config::stuck_wait_seconds when 0 or more, else the
// environment variable MPIDICT_STUCK_WAIT_SECONDS, else 10; 0 turns it off.
// Only engines over MPI watch (a simulated transport's time is not the
// program's).
//
// Cost: the engine counts, per peer, the messages it received and whether it
// sent something since (two stores per message); a wait reads the clock every
// 64 of its rounds.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpidict::runtime {

inline constexpr double default_stuck_wait_seconds = 10;

// The threshold an engine uses: `configured` when it is 0 or more, else
// MPIDICT_STUCK_WAIT_SECONDS when set, else default_stuck_wait_seconds.
// Throws invalid_argument_error naming the text when the variable is not a
// number of seconds (0 or more).
double resolve_stuck_wait_seconds(double configured);

// What a rank waits for; decides which ranks the wait depends on and the
// wording of the report.
enum class wait_kind : std::uint8_t {
    request,          // a request's answer (get(), wait())
    batch,            // the answers of a batch (find_many, take_many, ranges, LH*LH and skip-list waits)
    request_window,   // answers to the outstanding requests (blocking_factor reached)
    flush,            // flush(): every rank must call it
    collective,       // a container collective (global_size(), ...): every rank must call it
    send_queue,       // its sends to be received (release_queue full)
};

class stuck_wait_detector {
public:
    // Off until started; seconds <= 0 keeps it off (and so does one rank).
    void start(int rank, int size, double seconds);
    bool on() const { return m_on; }
    double seconds() const { return m_seconds; }

    // The engine's message bookkeeping.
    void heard_from(int source) {
        if (m_on) {
            ++m_heard[static_cast<std::size_t>(source)];
            m_owed[static_cast<std::size_t>(source)] = 0;
        }
    }
    void sent_to(int destination) {
        if (m_on)
            m_owed[static_cast<std::size_t>(destination)] = 1;
    }

    // A wait. The outermost scope is the one watched (a flush's reductions
    // belong to the flush).
    class scope {
    public:
        scope(stuck_wait_detector& detector, wait_kind kind, std::string_view what);
        ~scope();
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;

    private:
        stuck_wait_detector* m_detector = nullptr;  // null: off, or nested
    };

    // Every round of a waiting loop (engine::backoff).
    void tick() {
        if (m_waiting && (++m_ticks & 63) == 0)
            check();
    }

    // How many reports this detector printed (tests).
    std::uint64_t reports() const { return m_reports; }

private:
    using clock = std::chrono::steady_clock;
    void check();
    void report(double waited, const std::vector<int>& silent);

    bool m_on = false;
    int m_rank = 0;
    int m_size = 1;
    double m_seconds = 0;
    std::vector<std::uint64_t> m_heard;  // messages received from each rank
    std::vector<std::uint8_t> m_owed;    // sent to that rank since last hearing from it
    // The current wait.
    bool m_waiting = false;
    bool m_reported = false;
    wait_kind m_kind = wait_kind::request;
    std::string m_what;
    std::uint64_t m_ticks = 0;
    clock::time_point m_started;
    clock::time_point m_quiet_since;  // the last message from a rank the wait depends on
    clock::time_point m_last_check;
    std::vector<std::uint64_t> m_heard_then;  // m_heard at the last check
    std::vector<std::uint8_t> m_owed_then;    // m_owed at the last check
    std::uint64_t m_reports = 0;
};

}  // namespace mpidict::runtime
