//! A cache hint: ask the CPU to bring a line in before the code that reads it gets there.
//!
//! Why: when timers fire, each wakes a task whose state lies at a random place in memory
//! (W3 in bench/README.md: 100,000 tasks, about 20 MB of task state, woken in deadline
//! order, not in the order they were allocated). Each of those reads used to miss the cache
//! in turn. The timer queue knows which tasks it will wake next, so it asks for their lines
//! a few timers ahead and the misses overlap with the work on the timers before them.
//!
//! A prefetch has no effect on what the program computes: it never faults, never reads
//! into a register, and a wrong address only wastes a line of cache. So it cannot reach
//! behaviour, and the run stays deterministic.

/// Hints that the cache line at `address` (any address, valid or not) is read soon.
#[inline(always)]
pub(crate) fn read_soon<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it is in the target's
    // baseline features). A prefetch does not access memory as far as the program is
    // concerned: it cannot fault, on any address, and changes no program state.
    #[allow(unsafe_code)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
