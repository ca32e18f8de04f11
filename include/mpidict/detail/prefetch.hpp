#pragma once
// A prefetch the compiler keeps.

namespace mpidict::detail {

// Asks the processor to start loading the cache line at `address`.  GCC
// counts __builtin_prefetch as free of side effects, so a function that only
// prefetches can be found pure and a call to it deleted: GCC 12 at -O2 and -O3
// kept none of skiplist_core.cpp's prefetches (-fno-tree-dce kept them), and
// none in hash_map's find_many handler, whose lambda only called
// multi_table::prefetch.  On x86 this is an instruction the compiler must keep.
inline void prefetch_line(const void* address) {
#if defined(__x86_64__) || defined(__i386__)
    asm volatile("prefetcht0 (%0)" : : "r"(address));
#else
    __builtin_prefetch(address);
#endif
}

}  // namespace mpidict::detail
