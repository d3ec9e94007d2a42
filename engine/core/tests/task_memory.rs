//! A run gives back the memory of its tasks: a joined task's allocation is freed, so memory
//! left over after a run does not grow with the number of tasks it spawned.
//!
//! Its own test binary, because it counts every allocation of the process through a global
//! allocator (one test, so no other test allocates while it measures).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use simtape::limits::Limits;
use simtape::Sim;

/// Bytes allocated and not yet freed, process-wide.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, counting live bytes.
struct Counting;

// `GlobalAlloc` is an unsafe trait, and counting allocations needs it; both methods forward
// to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above, that is from `System.alloc`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `tasks` spawned tasks that each sleep once and are joined, and returns the bytes the
/// run left allocated once its report is dropped.
fn bytes_left_after(tasks: u64) -> isize {
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let mut builder = Sim::builder();
    builder.limits(Limits {
        events_max: u64::MAX,
        ..Limits::default()
    });
    builder.no_tape();
    let report = builder
        .build()
        .unwrap()
        .run(move |_host| async move {
            let handles: Vec<_> = (0..tasks)
                .map(|task| {
                    simtape::spawn("joined", async move {
                        simtape::time::sleep(Duration::from_micros(1 + task % 7)).await;
                        task
                    })
                })
                .collect();
            let mut sum = 0;
            for handle in handles {
                sum += handle.await.unwrap();
            }
            sum
        })
        .unwrap();
    assert_eq!(report.output, tasks * (tasks - 1) / 2);
    drop(report);
    LIVE_BYTES.load(Ordering::Relaxed) - before
}

#[test]
fn joined_tasks_are_freed() {
    // Goal: a joined task's allocation is returned (a handle that forgot its finished task
    // kept about 100 bytes per task for the life of the process).
    bytes_left_after(10); // the thread-locals' first allocations
    let small = bytes_left_after(100);
    let large = bytes_left_after(10_000);
    assert!(
        large - small < 16 * 1024,
        "a run of 10,000 joined tasks left {large} bytes, one of 100 left {small}"
    );
}
