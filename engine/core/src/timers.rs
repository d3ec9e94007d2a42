//! The timer queue: timers bucketed by deadline, each bucket FIFO, over a slab of waker slots.
//!
//! Timers due at the same instant fire in the order they were set (insertion order is `seq`
//! order), earlier instants first: the `(t_ns, seq)` order. Each distinct deadline has one
//! bucket (a FIFO of slots), found through a hash index; a min-heap holds the distinct
//! deadlines. The earliest bucket is detached and drained in place, so the heap is touched once
//! per instant, not once per timer (agent runs and the benchmarks have many timers per
//! instant). A lone pending timer, the common case of a request/reply chain, skips the index
//! and the heap entirely. A dropped sleep cancels its slot in O(1); the stale entry is skipped
//! when it surfaces, without advancing time. So the front can run ahead of virtual time, and a
//! timer set between the two files the rest of the current instant back as a bucket first
//! (`refile_current`), to fire before it. Timers set while an instant fires wait in a list and
//! are filed in one batch when it runs out (`file_unfiled`).
//!
//! Why not a heap of timers: with 10,000 pending timers a heap pop walks ~14 levels and misses
//! the cache on most of them. Why not a `BTreeMap` of buckets: its search costs ~180
//! instructions an insert (measured with callgrind); the hash index costs a fraction. Why not
//! a timing wheel: wheels round deadlines to their tick, and simtape keeps nanosecond-exact
//! time. The index is never iterated, so its order cannot reach behaviour.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
#[allow(clippy::disallowed_types)] // lookup only: the index is never iterated (see above)
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::task::Waker;

use crate::prefetch::read_soon;

/// How many timers behind the front of the current instant the queue asks the cache for a
/// timer's slot (see [`TimerQueue::prefetch_ahead`]).
const SLOT_AHEAD: usize = 8;
/// How many timers behind the front it asks for the state of the task a timer wakes: fewer
/// than [`SLOT_AHEAD`], so that slot has arrived by then and names the task.
const TASK_AHEAD: usize = 4;

/// A fixed multiplicative hash for `u64` deadlines: deterministic, and a few instructions.
#[derive(Debug, Default, Clone, Copy)]
struct DeadlineHasher(u64);

impl Hasher for DeadlineHasher {
    fn finish(&self) -> u64 {
        // Fold the high half into the low half: the table picks buckets by the low bits, and
        // deadlines are often multiples of a power of two (1 ms = 2^6 * 15,625 ns), whose
        // products keep those low bits zero.
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, value: u64) {
        // Fibonacci hashing spreads the deadline into the high bits (the table's control
        // bytes); `finish` folds them back into the low bits (its bucket index).
        self.0 = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[allow(clippy::disallowed_types)] // lookup only: never iterated
type DeadlineIndex = HashMap<u64, u32, BuildHasherDefault<DeadlineHasher>>;

#[derive(Debug)]
struct Slot {
    seq: u64,
    waker: Option<Waker>,
    task: u32,
    actor: u16,
    recorded: bool,
}

/// Identifies one armed timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerKey {
    slot: u32,
    seq: u64,
}

/// A timer that reached the front of the queue.
#[derive(Debug)]
pub(crate) struct Fired {
    pub(crate) t_ns: u64,
    /// `None` when the timer was cancelled.
    pub(crate) waker: Option<Waker>,
    pub(crate) task: u32,
    pub(crate) actor: u16,
    pub(crate) recorded: bool,
}

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct TimerQueue {
    /// The detached earliest bucket, due at `current_t_ns`, drained from `current_next`.
    current: Vec<u32>,
    current_next: usize,
    current_t_ns: u64,
    /// The only pending timer outside `current`, when no bucket is pending.
    single: Option<(u64, u32)>,
    /// Pending deadlines, each once, earliest first.
    instants: BinaryHeap<Reverse<u64>>,
    /// Deadline → bucket id.
    index: DeadlineIndex,
    /// Buckets by id; a freed bucket keeps its (empty) vector for reuse.
    buckets: Vec<Vec<u32>>,
    free_buckets: Vec<u32>,
    /// Timers set while an instant is current and due after it, filed when it runs out
    /// ([`TimerQueue::file_unfiled`]).
    unfiled: Vec<(u64, u32)>,
    /// The bucket of the instant after the current one, as of when the current one was
    /// detached; only [`TimerQueue::prefetch_ahead`] reads it.
    upcoming: Option<u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    seq: u64,
}

impl TimerQueue {
    /// Arms a timer due at `t_ns`.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        t_ns: u64,
        task: u32,
        actor: u16,
        recorded: bool,
        waker: Waker,
    ) -> TimerKey {
        let seq = self.seq;
        self.seq += 1;
        let slot = Slot {
            seq,
            waker: Some(waker),
            task,
            actor,
            recorded,
        };
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = slot;
                index
            }
            None => {
                self.slots.push(slot);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 armed timers")
            }
        };
        let key = TimerKey { slot: index, seq };
        if self.current_next < self.current.len() {
            if t_ns == self.current_t_ns {
                self.current.push(index);
                return key;
            }
            if t_ns < self.current_t_ns {
                self.file_unfiled();
                self.refile_current();
                self.enqueue(t_ns, index);
                return key;
            }
        }
        if self.unfiled.is_empty() && self.current_next >= self.current.len() {
            // No instant is being fired (a lone timer, a request/reply chain): nothing to
            // batch with, and nothing set earlier waits to be filed before it.
            self.enqueue(t_ns, index);
        } else {
            self.unfiled.push((t_ns, index));
        }
        key
    }

    /// Files the timers set since the current instant became current, in the order they
    /// were set (which keeps ties FIFO).
    ///
    /// Why a batch: filing a timer reads three places at random (the index, the bucket, its
    /// tail). Filed one by one between task polls, each read stalled in turn; filed in one
    /// loop, the processor overlaps the reads of consecutive timers.
    #[inline]
    fn file_unfiled(&mut self) {
        let mut unfiled = std::mem::take(&mut self.unfiled);
        for &(t_ns, slot) in &unfiled {
            self.enqueue(t_ns, slot);
        }
        unfiled.clear();
        self.unfiled = unfiled;
    }

    #[inline(always)]
    fn enqueue(&mut self, t_ns: u64, slot: u32) {
        if self.instants.is_empty() {
            match self.single.take() {
                None => {
                    self.single = Some((t_ns, slot));
                    return;
                }
                Some((single_t_ns, single_slot)) => self.push_bucket(single_t_ns, single_slot),
            }
        }
        self.push_bucket(t_ns, slot);
    }

    /// Files the rest of the current instant back as a pending bucket, so that a timer due
    /// before it fires first.
    ///
    /// Why: the front can run ahead of virtual time. Popping cancelled timers does not move
    /// time (`next_live_ns`, an open run's cancelled timers skipped before it pauses), so a
    /// task polled after that may set a timer between virtual time and the current instant.
    #[cold]
    fn refile_current(&mut self) {
        let rest = self.current.split_off(self.current_next);
        self.current.clear();
        self.current_next = 0;
        if let Some((single_t_ns, single_slot)) = self.single.take() {
            self.push_bucket(single_t_ns, single_slot);
        }
        for slot in rest {
            self.push_bucket(self.current_t_ns, slot);
        }
    }

    // Always: with `refile_current` as a second caller, LLVM stopped inlining it into
    // `insert` (+30 instructions an event on W1, callgrind).
    #[inline(always)]
    fn push_bucket(&mut self, t_ns: u64, slot: u32) {
        if let Some(&id) = self.index.get(&t_ns) {
            self.buckets[id as usize].push(slot);
            return;
        }
        let id = match self.free_buckets.pop() {
            Some(id) => id,
            None => {
                self.buckets.push(Vec::new());
                u32::try_from(self.buckets.len() - 1).expect("fewer than 2^32 pending instants")
            }
        };
        self.buckets[id as usize].push(slot);
        self.index.insert(t_ns, id);
        self.instants.push(Reverse(t_ns));
    }

    /// Replaces the waker of an armed timer (a sleep polled from another context).
    pub(crate) fn update_waker(&mut self, key: TimerKey, waker: &Waker) {
        if let Some(slot) = self.slots.get_mut(key.slot as usize) {
            if slot.seq == key.seq {
                match &slot.waker {
                    Some(current) if current.will_wake(waker) => {}
                    _ => slot.waker = Some(waker.clone()),
                }
            }
        }
    }

    /// Cancels an armed timer; a timer that already fired is left alone.
    pub(crate) fn cancel(&mut self, key: TimerKey) {
        if let Some(slot) = self.slots.get_mut(key.slot as usize) {
            if slot.seq == key.seq {
                slot.waker = None;
            }
        }
    }

    /// Returns the deadline of the earliest live timer, first dropping the cancelled timers
    /// ahead of it (popping those is what the run loop would do anyway: they fire nothing).
    pub(crate) fn next_live_ns(&mut self) -> Option<u64> {
        loop {
            if self.current_next >= self.current.len() && !self.unfiled.is_empty() {
                self.file_unfiled();
            }
            let (t_ns, index) = self.peek_entry()?;
            if self.slots[index as usize].waker.is_some() {
                return Some(t_ns);
            }
            self.pop();
        }
    }

    fn peek_entry(&self) -> Option<(u64, u32)> {
        if let Some(&slot) = self.current.get(self.current_next) {
            return Some((self.current_t_ns, slot));
        }
        if let Some(single) = self.single {
            return Some(single);
        }
        let Reverse(t_ns) = *self.instants.peek()?;
        let id = self.index.get(&t_ns)?;
        Some((t_ns, *self.buckets[*id as usize].first()?))
    }

    /// Asks the cache for what the timers a few places behind the front will need: the slot
    /// of the one [`SLOT_AHEAD`] places back, and the state of the task the one
    /// [`TASK_AHEAD`] places back wakes (its waker's data, three lines: async-task's header,
    /// then the future, whose state byte lies past the second line in the benchmarks' tasks).
    /// Near the end of an instant, "behind the front" reaches into the next pending instant.
    /// Returns that timer's task, for the caller to ask for its own per-task state.
    ///
    /// Why: many timers at one instant wake tasks spread over memory (W3: 100 tasks per
    /// instant among 100,000), and each one's slot and task state used to be a cache miss
    /// in turn; asked for ahead, the misses overlap (`crate::prefetch`). W1 has about 16
    /// timers an instant, so without looking into the next instant half its timers were
    /// never asked for.
    #[inline]
    pub(crate) fn prefetch_ahead(&self) -> Option<u32> {
        if let Some(slot) = self.behind_front(SLOT_AHEAD) {
            read_soon(self.slots.as_ptr().wrapping_add(slot as usize));
        }
        let slot = self.slots.get(self.behind_front(TASK_AHEAD)? as usize)?;
        if let Some(waker) = &slot.waker {
            let data = waker.data().cast::<u8>();
            read_soon(data);
            read_soon(data.wrapping_add(64));
            read_soon(data.wrapping_add(128));
        }
        Some(slot.task)
    }

    /// The slot `places` timers behind the front of the current instant, looking on into the
    /// bucket that was next when the instant became current (a hint: a timer set since then
    /// may fire before it).
    #[inline]
    fn behind_front(&self, places: usize) -> Option<u32> {
        let at = self.current_next + places;
        match self.current.get(at) {
            Some(&slot) => Some(slot),
            None => {
                let upcoming = self.buckets.get(self.upcoming? as usize)?;
                upcoming.get(at - self.current.len()).copied()
            }
        }
    }

    /// Pops the earliest timer.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Fired> {
        let (t_ns, index) = self.next_entry()?;
        let slot = &mut self.slots[index as usize];
        slot.seq = u64::MAX;
        let fired = Fired {
            t_ns,
            waker: slot.waker.take(),
            task: slot.task,
            actor: slot.actor,
            recorded: slot.recorded,
        };
        self.free.push(index);
        Some(fired)
    }

    #[inline]
    fn next_entry(&mut self) -> Option<(u64, u32)> {
        if let Some(&slot) = self.current.get(self.current_next) {
            self.current_next += 1;
            return Some((self.current_t_ns, slot));
        }
        if !self.unfiled.is_empty() {
            self.file_unfiled();
        }
        if let Some(single) = self.single.take() {
            // `single` is set only while no bucket is pending, so it is the earliest.
            return Some(single);
        }
        let Reverse(t_ns) = self.instants.pop()?;
        let id = self
            .index
            .remove(&t_ns)
            .expect("every pending instant has a bucket");
        // Swap the bucket in as `current`; the drained vector stays behind for reuse.
        self.current.clear();
        std::mem::swap(&mut self.current, &mut self.buckets[id as usize]);
        self.free_buckets.push(id);
        self.current_t_ns = t_ns;
        self.current_next = 1;
        self.upcoming = self
            .instants
            .peek()
            .and_then(|Reverse(next_t_ns)| self.index.get(next_t_ns).copied());
        Some((t_ns, self.current[0]))
    }

    /// Removes every timer and returns their wakers, to be dropped outside any borrow.
    pub(crate) fn drain_wakers(&mut self) -> Vec<Waker> {
        self.current.clear();
        self.current_next = 0;
        self.unfiled.clear();
        self.single = None;
        self.instants.clear();
        self.index.clear();
        self.buckets.clear();
        self.free_buckets.clear();
        self.free.clear();
        self.slots.drain(..).filter_map(|s| s.waker).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_ahead_names_the_task_a_few_timers_on() {
        // Goal: while one instant's timers are popped, the hint names the task of the timer
        // `TASK_AHEAD` places behind the front (the one whose state is asked for), and none
        // when fewer are left; popping order is untouched by asking.
        let mut queue = TimerQueue::default();
        let waker = Waker::noop().clone();
        let count = (SLOT_AHEAD + 4) as u32;
        for task in 0..count {
            queue.insert(10, task, 1, true, waker.clone());
        }
        let mut hinted = Vec::new();
        let mut popped = Vec::new();
        while let Some(fired) = queue.pop() {
            popped.push(fired.task);
            hinted.push(queue.prefetch_ahead());
        }
        assert_eq!(popped, (0..count).collect::<Vec<_>>());
        let ahead = TASK_AHEAD as u32;
        for (i, hint) in hinted.iter().enumerate() {
            let expected = (i as u32 + 1 + ahead < count).then_some(i as u32 + 1 + ahead);
            assert_eq!(*hint, expected, "after pop {i}");
        }
    }

    #[test]
    fn pops_in_time_then_insertion_order() {
        // Goal: ties at one instant fire FIFO by insertion; earlier instants first.
        let mut queue = TimerQueue::default();
        let waker = Waker::noop().clone();
        queue.insert(20, 1, 1, true, waker.clone());
        queue.insert(10, 2, 1, true, waker.clone());
        queue.insert(20, 3, 1, true, waker.clone());
        queue.insert(10, 4, 1, true, waker.clone());
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| queue.pop())
            .map(|f| (f.t_ns, f.task))
            .collect();
        assert_eq!(order, vec![(10, 2), (10, 4), (20, 1), (20, 3)]);
    }

    /// A waker that does nothing, told apart from the others by its data pointer.
    fn distinct_waker(id: usize) -> Waker {
        use std::task::{RawWaker, RawWakerVTable};
        const VTABLE: RawWakerVTable =
            RawWakerVTable::new(|data| RawWaker::new(data, &VTABLE), |_| {}, |_| {}, |_| {});
        // SAFETY: the vtable's functions never read the data pointer, so any value is sound.
        #[allow(unsafe_code)]
        unsafe {
            Waker::from_raw(RawWaker::new(id as *const (), &VTABLE))
        }
    }

    #[test]
    fn matches_a_reference_heap_under_random_traffic() {
        // Goal: under random inserts, cancels, waker changes, peeks and pops, the queue fires
        // exactly what a (t_ns, seq) min-heap would, in the same order and with the waker set
        // last. Time moves as the executor moves it: only a live timer advances it, so after
        // cancelled timers are skipped, new timers can fall before the queue's instant.
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let wakers: Vec<Waker> = (1..=3).map(distinct_waker).collect();
        let mut rng = crate::rng::RngStream::fork(1, "timer-queue-test");
        let mut queue = TimerQueue::default();
        let mut reference: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
        let mut cancelled = std::collections::BTreeSet::new();
        let mut waker_of = std::collections::BTreeMap::new();
        let mut keys = Vec::new();
        let mut now = 0u64;
        // The latest deadline popped, live or cancelled: the queue's front may be there while
        // virtual time (`now`) is still behind it.
        let mut popped_ns = 0u64;
        let (mut early_inserts, mut fired_cancelled) = (0, 0);
        for step in 0..40_000u32 {
            match rng.below(12) {
                0..=4 => {
                    // Half the timers crowd into a few instants, half spread out.
                    let crowded = rng.chance(crate::rng::Ratio::new(1, 2).unwrap());
                    let t = now + 1 + rng.below(if crowded { 3 } else { 5_000 });
                    if t < popped_ns {
                        early_inserts += 1;
                    }
                    let w = rng.below(3) as usize;
                    let key = queue.insert(t, step, 1, true, wakers[w].clone());
                    reference.push(Reverse((t, key.seq, step)));
                    waker_of.insert(key.seq, w);
                    keys.push(key);
                }
                5..=6 if !keys.is_empty() => {
                    // A sleep is dropped: armed, or after its timer fired (a stale key). Its
                    // key is gone with it.
                    let key = keys.swap_remove(rng.below(keys.len() as u64) as usize);
                    queue.cancel(key);
                    if waker_of.contains_key(&key.seq) {
                        cancelled.insert(key.seq);
                    }
                }
                7 if !keys.is_empty() => {
                    // A pending sleep is polled again, from its task or another one.
                    let key = keys[rng.below(keys.len() as u64) as usize];
                    if waker_of.contains_key(&key.seq) {
                        let w = rng.below(3) as usize;
                        queue.update_waker(key, &wakers[w]);
                        waker_of.insert(key.seq, w);
                    }
                }
                8 => {
                    let expected = reference
                        .iter()
                        .filter(|Reverse((_, seq, _))| !cancelled.contains(seq))
                        .map(|Reverse((t, _, _))| *t)
                        .min();
                    assert_eq!(queue.next_live_ns(), expected, "step {step}");
                    // The queue dropped the cancelled timers ahead; so does the reference.
                    while let Some(Reverse((t, seq, _))) = reference.peek() {
                        if !cancelled.contains(seq) {
                            break;
                        }
                        popped_ns = *t;
                        waker_of.remove(seq);
                        reference.pop();
                    }
                }
                _ => {
                    let expected = reference.pop().map(|Reverse(entry)| entry);
                    let fired = queue.pop();
                    match (expected, fired) {
                        (None, None) => {}
                        (Some((t, seq, task)), Some(fired)) => {
                            assert_eq!((fired.t_ns, fired.task), (t, task), "step {step}");
                            popped_ns = t;
                            let w = waker_of.remove(&seq).expect("armed");
                            match fired.waker {
                                None => {
                                    assert!(cancelled.contains(&seq), "step {step}");
                                    fired_cancelled += 1;
                                }
                                Some(waker) => {
                                    assert!(!cancelled.contains(&seq), "step {step}");
                                    assert!(waker.will_wake(&wakers[w]), "step {step}");
                                    now = t;
                                }
                            }
                        }
                        (expected, fired) => panic!("step {step}: {expected:?} vs {fired:?}"),
                    }
                }
            }
        }
        // The traffic reached the rare paths it is meant to check.
        assert!(
            early_inserts > 10,
            "{early_inserts} timers set before the queue's instant"
        );
        assert!(
            fired_cancelled > 100,
            "{fired_cancelled} cancelled timers surfaced"
        );
    }

    #[test]
    fn cancelled_timers_surface_without_wakers() {
        // Goal: a cancelled timer pops with no waker, and its slot is reused safely.
        let mut queue = TimerQueue::default();
        let key = queue.insert(5, 1, 1, true, Waker::noop().clone());
        queue.cancel(key);
        assert!(queue.pop().unwrap().waker.is_none());
        let again = queue.insert(6, 2, 1, true, Waker::noop().clone());
        queue.cancel(key); // stale key: must not cancel the new timer in the reused slot
        assert_eq!(again.slot, key.slot);
        assert!(queue.pop().unwrap().waker.is_some());
    }
}
