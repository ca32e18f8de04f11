// The stuck-wait detector (include/mpidict/runtime/stuck_wait.hpp,
// docs/runtime.md "Stuck waits").

#include "mpidict/runtime/stuck_wait.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "mpidict/error.hpp"

namespace mpidict::runtime {

double resolve_stuck_wait_seconds(double configured) {
    if (configured >= 0)
        return configured;
    const char* text = std::getenv("MPIDICT_STUCK_WAIT_SECONDS");
    if (text == nullptr || *text == '\0')
        return default_stuck_wait_seconds;
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds < 0)
        throw invalid_argument_error("mpidict: MPIDICT_STUCK_WAIT_SECONDS='" + std::string(text) +
                                     "' is not a number of seconds (0 or more; 0 turns the stuck-wait "
                                     "message off)");
    return seconds;
}

void stuck_wait_detector::start(int rank, int size, double seconds) {
    m_rank = rank;
    m_size = size;
    m_seconds = seconds;
    m_on = seconds > 0 && size > 1;
    if (!m_on)
        return;
    const auto peers = static_cast<std::size_t>(size);
    m_heard.assign(peers, 0);
    m_owed.assign(peers, 0);
    m_heard_then.assign(peers, 0);
    m_owed_then.assign(peers, 0);
}

stuck_wait_detector::scope::scope(stuck_wait_detector& detector, wait_kind kind, std::string_view what) {
    if (!detector.m_on || detector.m_waiting)
        return;
    m_detector = &detector;
    detector.m_waiting = true;
    detector.m_reported = false;
    detector.m_kind = kind;
    detector.m_what.assign(what);
    detector.m_ticks = 0;
    detector.m_started = clock::now();
    detector.m_quiet_since = detector.m_started;
    detector.m_last_check = detector.m_started;
    detector.m_heard_then = detector.m_heard;
    detector.m_owed_then = detector.m_owed;
}

stuck_wait_detector::scope::~scope() {
    if (m_detector != nullptr)
        m_detector->m_waiting = false;
}

namespace {

bool waits_for_every_rank(wait_kind kind) { return kind == wait_kind::flush || kind == wait_kind::collective; }

// "rank 3", "ranks 0, 2", "ranks 0-5, 9" (at most 12 pieces, then "and N more").
std::string ranks_text(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    std::size_t pieces = 0;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
            ++j;
        if (pieces == 12) {
            out += ", and " + std::to_string(ranks.size() - i) + " more";
            break;
        }
        if (pieces > 0)
            out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i)
            out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
        ++pieces;
        i = j + 1;
    }
    return out;
}

}  // namespace

void stuck_wait_detector::check() {
    const clock::time_point now = clock::now();
    if (now - m_last_check < std::chrono::milliseconds(200))
        return;
    m_last_check = now;
    // Progress: a message from a rank this wait depends on since the last check.
    const bool every_rank = waits_for_every_rank(m_kind);
    bool any_owed = false;
    for (std::size_t d = 0; d < m_owed_then.size(); ++d)
        any_owed |= m_owed_then[d] != 0 && static_cast<int>(d) != m_rank;
    bool progress = false;
    for (std::size_t d = 0; d < m_heard.size(); ++d)
        if (m_heard[d] != m_heard_then[d] && (every_rank || !any_owed || m_owed_then[d] != 0))
            progress = true;
    m_heard_then = m_heard;
    m_owed_then = m_owed;
    if (progress) {
        m_quiet_since = now;
        return;
    }
    const double quiet = std::chrono::duration<double>(now - m_quiet_since).count();
    if (m_reported || quiet < m_seconds)
        return;
    m_reported = true;
    // The ranks it waits for: every other one for a collective; otherwise those
    // it sent to and has not heard from since (all others if there are none).
    std::vector<int> silent;
    for (int d = 0; d < m_size; ++d)
        if (d != m_rank && (every_rank || m_owed[static_cast<std::size_t>(d)] != 0))
            silent.push_back(d);
    if (silent.empty())
        for (int d = 0; d < m_size; ++d)
            if (d != m_rank)
                silent.push_back(d);
    report(std::chrono::duration<double>(now - m_started).count(), silent);
}

void stuck_wait_detector::report(double waited, const std::vector<int>& silent) {
    ++m_reports;
    const std::string who = ranks_text(silent);
    const bool plural = silent.size() > 1;
    std::string what;
    switch (m_kind) {
    case wait_kind::request:
        what = "the answer to a request (" + m_what + ": a request's get() or wait())";
        break;
    case wait_kind::batch:
        what = "the answers of a batch (find_many, take_many, a range, or the container's own operations)";
        break;
    case wait_kind::request_window:
        what = "answers to its outstanding requests before it may start another (blocking_factor reached)";
        break;
    case wait_kind::flush:
        what = "flush(), which returns only when every rank has called it and every message is handled";
        break;
    case wait_kind::collective:
        what = "the container's collective '" + m_what + "', which every rank must call";
        break;
    case wait_kind::send_queue:
        what = "its sent messages to be received (release_queue full)";
        break;
    }
    std::string cause = who + (plural ? " are" : " is") +
                        " probably inside an MPI call of " + (plural ? "their" : "its") +
                        " own: a collective (MPI_Allreduce, MPI_Barrier, mpi4py's comm.allreduce, ...) "
                        "entered on some ranks only, or entered while this container still had work in "
                        "flight. A rank answers only from inside mpidict calls: call flush() on every rank "
                        "before an MPI collective of your own";
    if (waits_for_every_rank(m_kind))
        cause += "; and every rank must make the same container collectives in the same order (a rank that "
                 "skips flush(), or flushes another container first, leaves the others waiting)";
    cause += ". Or " + who + (plural ? " are" : " is") + " still busy, blocked elsewhere or gone";
    std::fprintf(stderr,
                 "mpidict: rank %d has waited %.0f s for %s, and no message came from %s for %.0f s. Likely "
                 "cause: %s. This rank keeps waiting. (MPIDICT_STUCK_WAIT_SECONDS or "
                 "config::stuck_wait_seconds sets the %g s; 0 turns this message off.)\n",
                 m_rank, waited, what.c_str(), who.c_str(), m_seconds, cause.c_str(), m_seconds);
    std::fflush(stderr);
}

}  // namespace mpidict::runtime
