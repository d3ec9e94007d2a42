//! Work spread over OS threads, its results in the order of its items: how many threads ran
//! it never shows in what it returns. Each item is one single-threaded simulation (a run of
//! `simtape explore`), so the threads share nothing but the item list.
//!
//! ```
//! let squares = simtape_serve::parallel::map_ordered(&[1u64, 2, 3, 4, 5], 3, |n| n * n);
//! assert_eq!(squares, [1, 4, 9, 16, 25]);
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

/// Applies `work` to every item on at most `jobs` threads; returns the results in item order.
pub fn map_ordered<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let jobs = jobs.clamp(1, items.len().max(1));
    if jobs == 1 {
        return items.iter().map(&work).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let (next, work) = (&next, &work);
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else {
                            break done;
                        };
                        done.push((index, work(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| match worker.join() {
                Ok(done) => done,
                // A panic in `work` is the caller's bug: raise it here, not lose its items.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}
