//! A run gives back the memory of its tasks: a joined task's allocation is freed, so memory
//! left over after a run does not grow with the number of tasks it spawned.
//!
//! Its own test binary, because it counts every allocation of the process through a global
//! allocator; its tests take turns (`ONE_AT_A_TIME`), so no other test allocates while one
//! measures.

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
        if RECORDING.load(Ordering::Relaxed) {
            let index = RECORDED_LEN.fetch_add(1, Ordering::Relaxed);
            if let Some(slot) = RECORDED.get(index) {
                slot.store(layout.size(), Ordering::Relaxed);
            }
        }
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

/// Held by each test for its whole run.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    bytes_left_after(10); // the thread-locals' first allocations
    let small = bytes_left_after(100);
    let large = bytes_left_after(10_000);
    assert!(
        large - small < 16 * 1024,
        "a run of 10,000 joined tasks left {large} bytes, one of 100 left {small}"
    );
}

/// Sizes of the allocations made while `RECORDING` is set, in order (at most 16).
static RECORDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static RECORDED: [std::sync::atomic::AtomicUsize; 16] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; 16];
static RECORDED_LEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Returns the sizes of the allocations one spawn makes, from inside a run whose task and
/// queue vectors have room to spare (so none of them grows during the spawn).
fn spawn_allocations() -> Vec<usize> {
    let sizes = Sim::builder()
        .build()
        .unwrap()
        .run(|_host| async {
            // Grow the executor's vectors well past what one more task needs, then free
            // those tasks, so that the measured spawn allocates only the task itself.
            let warm: Vec<_> = (0..64).map(|_| simtape::spawn("warm", async {})).collect();
            for handle in warm {
                handle.await.unwrap();
            }
            RECORDED_LEN.store(0, Ordering::Relaxed);
            RECORDING.store(true, Ordering::Relaxed);
            let handle = simtape::spawn("measured", async {
                simtape::time::sleep(Duration::from_micros(5)).await;
            });
            RECORDING.store(false, Ordering::Relaxed);
            let len = RECORDED_LEN.load(Ordering::Relaxed).min(RECORDED.len());
            let sizes: Vec<usize> = RECORDED[..len]
                .iter()
                .map(|size| size.load(Ordering::Relaxed))
                .collect();
            handle.await.unwrap();
            sizes
        })
        .unwrap()
        .output;
    sizes
}

#[test]
fn a_spawn_allocates_its_task_once_and_small() {
    // Goal: spawning a task makes one allocation (async-task's, holding the future), and the
    // future is held once: an `async` wrapper around it held it twice (the captured future
    // and the awaited copy), which made this sleeping task's allocation 160 bytes.
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let sizes = spawn_allocations();
    eprintln!("spawn allocations: {sizes:?}");
    assert_eq!(sizes.len(), 1, "one allocation per spawn: {sizes:?}");
    assert!(sizes[0] <= 128, "a sleeping task takes {} bytes", sizes[0]);
}
