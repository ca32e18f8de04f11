#pragma once
// An allocator for the large arrays of a table that is read at random.
//
// A lookup in a table of a few hundred MB touches two random cache lines (a
// tag and a slot), and with 4 KiB pages each also misses the TLB, so the
// processor walks the page tables for every lookup.  Arrays of at least 2 MiB
// are therefore aligned to 2 MiB and marked MADV_HUGEPAGE on Linux, so that the
// kernel backs them with transparent huge pages where it is configured to
// ("madvise" or "always" in /sys/kernel/mm/transparent_hugepage/enabled; with
// "never" the advice is ignored).  The advice covers the array only, and a
// huge page is used only for 2 MiB ranges wholly inside it, so no memory
// beyond the array is committed.  bench/local_table at 4M keys: inserts into a
// fresh table about 1.8x as fast (a 2 MiB page faults once where 512 small ones
// did), lookups a few percent faster (docs/benchmarks-hash_map.md).
//
// Smaller arrays, and other systems, use plain operator new.

#include <cstddef>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mpidict::detail {

template <class T>
struct huge_page_allocator {
    using value_type = T;
    static constexpr std::size_t huge_page = std::size_t{2} << 20;

    huge_page_allocator() = default;
    template <class U>
    huge_page_allocator(const huge_page_allocator<U>&) {}

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T))
            throw std::bad_array_new_length();
        const std::size_t bytes = n * sizeof(T);
        if (bytes < huge_page)
            return static_cast<T*>(::operator new(bytes));
        void* memory = ::operator new(bytes, std::align_val_t(huge_page));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        ::madvise(memory, bytes, MADV_HUGEPAGE);  // advice only: a failure changes nothing
#endif
        return static_cast<T*>(memory);
    }
    void deallocate(T* memory, std::size_t n) {
        if (n * sizeof(T) < huge_page)
            ::operator delete(memory);
        else
            ::operator delete(memory, std::align_val_t(huge_page));
    }
    template <class U>
    bool operator==(const huge_page_allocator<U>&) const {
        return true;
    }
};

}  // namespace mpidict::detail
