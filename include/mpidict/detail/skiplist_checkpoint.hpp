#pragma once
// skiplist_map's checkpoint column codecs: tuple and pair keys are not
// trivially copyable, so a checkpoint stores them in their fixed-width ordered
// encoding (ordered_key.hpp), named "ordered".  Included by skiplist_map.hpp.

#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpidict/checkpoint.hpp"
#include "mpidict/ordered_key.hpp"

namespace mpidict {

namespace detail::checkpoint {
// Tuple and pair keys are not trivially copyable: a checkpoint stores them in
// their fixed-width ordered encoding (ordered_key.hpp), named "ordered".
template <class T>
    requires(!std::is_trivially_copyable_v<T> && !std::is_same_v<T, std::string> &&
             !std::is_same_v<T, std::vector<std::byte>> && requires { ordered_codec<T>::fixed_width; })
struct column_codec<T, void> {
    static_assert(ordered_codec<T>::fixed_width > 0, "skiplist_map checkpoints: a composite key needs fixed-width fields.");
    static constexpr bool variable = false;
    static constexpr std::size_t width = ordered_codec<T>::fixed_width;
    static void write(std::byte* out, const T& value) {
        std::string encoded;
        ordered_codec<T>::encode(value, encoded);
        std::memcpy(out, encoded.data(), width);
    }
    static T read(const std::byte* in) {
        return ordered_codec<T>::decode(std::string_view(reinterpret_cast<const char*>(in), width));
    }
};
}  // namespace detail::checkpoint

template <class T>
    requires(!std::is_trivially_copyable_v<T> && !std::is_same_v<T, std::string> &&
             !std::is_same_v<T, std::vector<std::byte>> && requires { ordered_codec<T>::fixed_width; })
struct checkpoint_type<T, void> {
    static constexpr std::string_view name = "ordered";
};

}  // namespace mpidict
