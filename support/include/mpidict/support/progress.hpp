#pragma once
// A progress bar on stderr for long runs, drawn by one rank (rank 0).
//
// The rank counts only its own work; `scale` turns that into an estimate of
// the global progress (p when every rank does an equal share, 1 when this rank
// does everything).  tick() is cheap: it reads the clock once every 1024 items
// and redraws at most 10 times a second on a terminal (one line a second, with
// newlines, when stderr is not a terminal but --progress was given).

#include <chrono>
#include <cstdint>
#include <string>

namespace mpidict::support {

class progress_meter {
public:
    // `enabled` false makes every call a no-op (other ranks, --json, no TTY).
    explicit progress_meter(bool enabled);

    // Starts a phase of `total` global items; this rank's items count `scale` times.
    void start(std::string phase, std::uint64_t total, double scale);
    void tick(std::uint64_t items = 1) {
        if (!m_enabled)
            return;
        m_done += items;
        if ((m_calls++ & 1023) == 0)
            maybe_draw();
    }
    // Ends the phase and clears the bar.
    void finish();

    bool enabled() const { return m_enabled; }
    static bool stderr_is_terminal();

private:
    void maybe_draw();
    void draw(bool final_line);

    bool m_enabled;
    bool m_terminal;
    std::string m_phase;
    std::uint64_t m_total = 0;
    double m_scale = 1;
    std::uint64_t m_done = 0;
    std::uint64_t m_calls = 0;
    std::chrono::steady_clock::time_point m_start{};
    std::chrono::steady_clock::time_point m_last_draw{};
    bool m_drawn = false;
};

}  // namespace mpidict::support
