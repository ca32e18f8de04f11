#include "mpidict/support/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <unistd.h>

#include "mpidict/support/text.hpp"

namespace mpidict::support {

progress_meter::progress_meter(bool enabled) : m_enabled(enabled), m_terminal(stderr_is_terminal()) {}

bool progress_meter::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void progress_meter::start(std::string phase, std::uint64_t total, double scale) {
    m_phase = std::move(phase);
    m_total = total;
    m_scale = scale;
    m_done = 0;
    m_calls = 0;
    m_start = std::chrono::steady_clock::now();
    m_last_draw = m_start;
    m_drawn = false;
}

void progress_meter::maybe_draw() {
    const auto now = std::chrono::steady_clock::now();
    const auto interval = m_terminal ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000);
    // Nothing for the first half second: short phases stay silent.
    if (now - m_start < std::chrono::milliseconds(500) || now - m_last_draw < interval)
        return;
    m_last_draw = now;
    draw(false);
}

void progress_meter::draw(bool final_line) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    const double estimate = std::min(static_cast<double>(m_total), static_cast<double>(m_done) * m_scale);
    const double fraction = m_total == 0 ? 1.0 : estimate / static_cast<double>(m_total);
    constexpr int width = 30;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, ' ');
    const double rate = elapsed > 0 ? estimate / elapsed : 0;
    std::string eta = "-";
    if (rate > 0 && !final_line)
        eta = format_fixed((static_cast<double>(m_total) - estimate) / rate, 0) + " s";
    std::fprintf(stderr, "%s%-8s [%s] %5.1f%%  ~%s/%s  %s  eta %s%s", m_terminal ? "\r" : "", m_phase.c_str(),
                 bar.c_str(), 100.0 * fraction, format_count(static_cast<std::uint64_t>(estimate)).c_str(),
                 format_count(m_total).c_str(), format_rate(rate).c_str(), eta.c_str(),
                 m_terminal ? "\033[K" : "\n");
    std::fflush(stderr);
    m_drawn = true;
}

void progress_meter::finish() {
    if (!m_enabled || !m_drawn)
        return;
    if (m_terminal) {
        std::fputs("\r\033[K", stderr);  // clear the bar; the report follows
        std::fflush(stderr);
    } else {
        m_done = static_cast<std::uint64_t>(static_cast<double>(m_total) / m_scale + 1);
        draw(true);
    }
    m_drawn = false;
}

}  // namespace mpidict::support
