// runtime::register_handler<&C::member>(engine, name, object): a handler registered from a
// member function, no static trampoline.  Both forms: a member taking a whole
// group (private, as containers keep them) and one taking one record at a time
// (called for every record of a group, in order).  Every rank sends each rank a
// run of numbered records of both kinds, then flushes; every receiver checks
// that it saw each sender's records exactly once and in order, and that the
// group member saw whole groups.

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/member_handler.hpp"

namespace {

using mpidict::runtime::engine;
using mpidict::runtime::handler_id;

constexpr std::uint64_t records_per_peer = 3000;  // several messages of 64 KiB at 16 bytes a record

class receiver {
public:
    explicit receiver(engine& owner)
        : m_engine(owner),
          m_next_group(static_cast<std::size_t>(owner.size()), 0),
          m_next_record(static_cast<std::size_t>(owner.size()), 0) {
        m_group = mpidict::runtime::register_handler<&receiver::on_group>(owner, "test.member_group", this);
        m_record = mpidict::runtime::register_handler<&receiver::on_record>(owner, "test.member_record", this);
        owner.verify_handlers();
    }

    // Records first..first+run-1 of both kinds: a group of each.
    void send(int destination, std::uint64_t first, std::uint64_t run) {
        for (std::uint64_t number = first; number < first + run; ++number)
            write(m_engine.reserve(destination, m_group, 16), number);
        for (std::uint64_t number = first; number < first + run; ++number)
            write(m_engine.reserve(destination, m_record, 16), number);
    }

    bool all_seen() const {
        for (std::size_t source = 0; source < m_next_group.size(); ++source)
            if (m_next_group[source] != records_per_peer || m_next_record[source] != records_per_peer)
                return false;
        return true;
    }
    std::uint64_t groups() const { return m_groups; }
    std::uint64_t errors() const { return m_errors; }

private:
    static void write(std::byte* out, std::uint64_t number) {
        const std::uint64_t check = ~number;
        std::memcpy(out, &number, 8);
        std::memcpy(out + 8, &check, 8);
    }
    bool read(int source, std::span<const std::byte> record, std::vector<std::uint64_t>& next) {
        std::uint64_t number = 0;
        std::uint64_t check = 0;
        if (record.size() != 16 || source < 0 || source >= m_engine.size())
            return false;
        std::memcpy(&number, record.data(), 8);
        std::memcpy(&check, record.data() + 8, 8);
        auto& expected = next[static_cast<std::size_t>(source)];
        if (check != ~number || number != expected)
            return false;
        ++expected;
        return true;
    }
    void on_group(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        ++m_groups;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
            if (!read(source, std::span<const std::byte>(records, record_bytes), m_next_group))
                ++m_errors;
    }
    void on_record(int source, std::span<const std::byte> record) {
        if (!read(source, record, m_next_record))
            ++m_errors;
    }

    engine& m_engine;
    handler_id m_group = 0;
    handler_id m_record = 0;
    std::vector<std::uint64_t> m_next_group;
    std::vector<std::uint64_t> m_next_record;
    std::uint64_t m_groups = 0;
    std::uint64_t m_errors = 0;
};

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "mpi_engine_member_handler");
        engine owner(MPI_COMM_WORLD);
        receiver side(owner);
        // Runs of 10 of each kind in turn: many groups of several records,
        // which the per-record form must walk.
        for (std::uint64_t first = 0; first < records_per_peer; first += 10)
            for (int destination = 0; destination < size; ++destination)
                side.send((destination + rank) % size, first, 10);
        owner.flush();
        MPIDICT_CHECK(side.errors() == 0);
        MPIDICT_CHECK(side.all_seen());
        MPIDICT_CHECK(side.groups() >= static_cast<std::uint64_t>(size) * (records_per_peer / 10));
        owner.destroy();
    });
}
