#pragma once
// An allocator for the large arrays of a table that is read at random.
//
// A lookup in a table of a few hundred MB touches two random cache lines (a
// tag and a slot), and with 4 KiB pages each also misses the TLB, so the
// processor walks the page tables for every lookup.  Arrays of at least
// `advised_bytes` are therefore marked MADV_HUGEPAGE on Linux, so that the
// kernel backs them with transparent huge pages where it is configured to
// ("madvise" or "always" in /sys/kernel/mm/transparent_hugepage/enabled; with
// "never" the advice is ignored).  The block comes from plain operator new and
// is not aligned: the kernel uses a huge page for each 2 MiB range wholly
// inside the advised pages, so only the two ends of the array stay in small
// pages, and no memory beyond the array is reserved or committed (aligning
// the block instead cost up to 2 MiB of address space per array).
// bench/local_table at 4M keys: inserts into a fresh table about 1.8x as fast
// (a 2 MiB page faults once where 512 small ones did), lookups a few percent
// faster (docs/benchmarks-hash_map.md).
//
// Smaller arrays, and other systems, are plain operator new.

#include <cstddef>
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace mpidict::detail {

template <class T>
struct huge_page_allocator {
    using value_type = T;
    // Two huge pages: every block this large holds at least one aligned 2 MiB range.
    static constexpr std::size_t advised_bytes = std::size_t{4} << 20;

    huge_page_allocator() = default;
    template <class U>
    huge_page_allocator(const huge_page_allocator<U>&) {}

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T))
            throw std::bad_array_new_length();
        const std::size_t bytes = n * sizeof(T);
        void* memory = ::operator new(bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (bytes >= advised_bytes) {
            // madvise takes whole pages: the ones wholly inside the block.
            static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
            const auto first = (reinterpret_cast<std::uintptr_t>(memory) + page - 1) & ~(page - 1);
            const auto last = (reinterpret_cast<std::uintptr_t>(memory) + bytes) & ~(page - 1);
            ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // advice: a failure changes nothing
        }
#endif
        return static_cast<T*>(memory);
    }
    void deallocate(T* memory, std::size_t) { ::operator delete(memory); }
    template <class U>
    bool operator==(const huge_page_allocator<U>&) const {
        return true;
    }
};

}  // namespace mpidict::detail
