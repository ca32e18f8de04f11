#pragma once
// runtime::register_handler<&C::on_x>(engine, name, object): registers a member
// function of `object` as a handler, so a container needs no static trampoline
// of its own (engine::register_handler takes a function and a context pointer):
//
//     m_find = runtime::register_handler<&my_core::on_find>(*m_engine, "my_core.find", this);
//
// `Member` takes either a whole group,
//     void C::on_x(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count)
// or one record at a time, called for each record of the group in order,
//     void C::on_x(int source, std::span<const std::byte> record)
//     void C::on_x(int source, std::string_view record)      (the same, as chars)
// It may be private (taking its address inside C is enough).  `object` must
// outlive the engine's use of it, as a context pointer must.  Registration
// order and names are what they would be with engine::register_handler.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

// The handler_function register_handler<Member> registers: calls Member on the
// object passed as context, once per group or once per record.
template <auto Member, class C>
void member_handler(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                    std::uint32_t count) {
    C& object = *static_cast<C*>(context);
    if constexpr (std::is_invocable_v<decltype(Member), C&, int, const std::byte*, std::uint32_t, std::uint32_t>) {
        (object.*Member)(source, records, record_bytes, count);
    } else if constexpr (std::is_invocable_v<decltype(Member), C&, int, std::string_view>) {
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
            (object.*Member)(source, std::string_view(reinterpret_cast<const char*>(records), record_bytes));
    } else {
        static_assert(std::is_invocable_v<decltype(Member), C&, int, std::span<const std::byte>>,
                      "register_handler<Member>: Member takes (int source, const std::byte* records, "
                      "std::uint32_t record_bytes, std::uint32_t count), (int source, "
                      "std::span<const std::byte> record) or (int source, std::string_view record)");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
            (object.*Member)(source, std::span<const std::byte>(records, record_bytes));
    }
}

}  // namespace mpidict::detail

namespace mpidict::runtime {

// Local.  engine::register_handler for a member function of `object`.
template <auto Member, class C>
handler_id register_handler(engine& owner, std::string_view name, C* object) {
    static_assert(std::is_member_function_pointer_v<decltype(Member)>,
                  "register_handler<Member>: Member must be a pointer to a member function");
    return owner.register_handler(name, &mpidict::detail::member_handler<Member, C>, static_cast<void*>(object));
}

}  // namespace mpidict::runtime
