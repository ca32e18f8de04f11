#pragma once
// request<T>: the handle an operation returns.  It names a slot in the engine's
// request table; the owner's reply fills the slot, and get() decodes it into T.
// A request is move-only; destroying an unfinished one abandons it (its reply
// is discarded when it arrives).  count() says how many values the operation
// processed (stored, found or taken), as in CSE_Hash's request size.
//
// request<T>::completed(value) is a request that is complete when it is made:
// what an operation returns that finishes before it returns (rma_hash_set's
// one-sided insert_if_absent), so that code written against one container's
// request works against another's.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "mpidict/local/codec.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

template <class T>
class request {
public:
    using decoder = T (*)(std::uint32_t count, byte_reader& reader, const void* context);

    request() = default;
    request(runtime::engine& owner, std::uint32_t slot, decoder decode, const void* context = nullptr)
        : m_engine(&owner), m_life(owner.lifetime()), m_slot(slot), m_decode(decode), m_context(context) {}
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    request(request&& other) noexcept { steal(other); }
    request& operator=(request&& other) noexcept {
        if (this != &other) {
            release();
            steal(other);
        }
        return *this;
    }
    ~request() { release(); }

    // A request that is already complete: get() returns `value`, count() `count`.
    static request completed(T value, std::uint32_t count = 1) {
        request done;
        done.m_ready.emplace(std::move(value));
        done.m_ready_count = count;
        return done;
    }

    bool valid() const { return m_engine != nullptr || m_ready.has_value(); }

    // Makes progress; true once the result has arrived.
    bool test() {
        check_valid();
        if (m_ready)
            return true;
        runtime::engine_lock lock(*m_engine);
        return m_engine->test_request(m_slot);
    }

    void wait() {
        check_valid();
        if (m_ready)
            return;
        runtime::engine_lock lock(*m_engine);
        m_engine->wait_request(m_slot);
    }

    // How many values the operation processed; waits if needed.  Throws the
    // owner's error if the operation failed there.
    std::uint32_t count() {
        wait();
        if (m_ready)
            return m_ready_count;
        throw_if_failed();
        return m_engine->request_count(m_slot);
    }

    // Waits, decodes the result and releases the request.  Throws the owner's
    // error (invalid_argument_error) if the operation failed there.
    T get() {
        wait();
        if (m_ready) {
            T result = std::move(*m_ready);
            m_ready.reset();
            return result;
        }
        throw_if_failed();
        T result = [&] {
            runtime::engine_lock lock(*m_engine);
            byte_reader reader(m_engine->request_result(m_slot));
            return m_decode(m_engine->request_count(m_slot), reader, m_context);
        }();
        release();
        return result;
    }

private:
    void throw_if_failed() {
        if (!m_engine->request_failed(m_slot))
            return;
        const auto bytes = m_engine->request_result(m_slot);
        std::string message(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        release();
        throw invalid_argument_error(message);
    }
    void check_valid() const {
        if (!valid())
            throw error("mpidict: wait/test/get on an empty request (moved from, or already consumed by get())");
        if (m_engine && m_life.expired())
            throw use_after_destroy_error("mpidict: wait/test/get on a request whose container no longer exists "
                                          "(a request must not outlive the container that made it)");
    }
    void steal(request& other) {
        m_engine = std::exchange(other.m_engine, nullptr);
        m_life = std::move(other.m_life);
        m_slot = other.m_slot;
        m_decode = other.m_decode;
        m_context = other.m_context;
        m_ready = std::exchange(other.m_ready, std::nullopt);
        m_ready_count = other.m_ready_count;
    }
    void release() {
        m_ready.reset();
        if (m_engine) {
            // Its container gone: nothing to close (the engine's memory is freed).
            if (!m_life.expired() && !m_engine->destroyed()) {
                runtime::engine_lock lock(*m_engine);
                m_engine->close_request(m_slot);
            }
            m_engine = nullptr;
        }
    }

    runtime::engine* m_engine = nullptr;
    std::weak_ptr<const bool> m_life;  // expired: the engine no longer exists
    std::uint32_t m_slot = 0;
    decoder m_decode = nullptr;
    const void* m_context = nullptr;
    std::optional<T> m_ready;  // set: complete at creation (completed())
    std::uint32_t m_ready_count = 0;
};

// Waits for every request in `requests`.
template <class T>
void wait_all(std::span<request<T>> requests) {
    for (auto& r : requests)
        if (r.valid())
            r.wait();
}

template <class... Requests>
void wait_all(Requests&... requests) {
    (requests.wait(), ...);
}

}  // namespace mpidict
