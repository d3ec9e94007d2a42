//! The timer queue: a binary heap keyed by `(t_ns, seq)` over a slab of waker slots.
//!
//! `seq` is a global insertion counter, so timers due at the same instant fire in the order
//! they were set. A dropped sleep cancels its slot in O(1); the heap entry is skipped when it
//! surfaces, without advancing time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::task::Waker;

/// A heap entry. `key` packs `(t_ns, seq)` into one `u128` (time in the high half), so the
/// ordering is one integer comparison in the heap's hot loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    key: u128,
    slot: u32,
}

impl Entry {
    fn t_ns(&self) -> u64 {
        (self.key >> 64) as u64
    }

    fn seq(&self) -> u64 {
        self.key as u64
    }
}

impl Ord for Entry {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest (t_ns, seq) first.
        other.key.cmp(&self.key)
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

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
    heap: BinaryHeap<Entry>,
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
        self.heap.push(Entry {
            key: (u128::from(t_ns) << 64) | u128::from(seq),
            slot: index,
        });
        TimerKey { slot: index, seq }
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

    /// Pops the earliest timer.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Fired> {
        let entry = self.heap.pop()?;
        let slot = &mut self.slots[entry.slot as usize];
        debug_assert_eq!(
            slot.seq,
            entry.seq(),
            "a slot is reused only after its entry pops"
        );
        slot.seq = u64::MAX;
        let fired = Fired {
            t_ns: entry.t_ns(),
            waker: slot.waker.take(),
            task: slot.task,
            actor: slot.actor,
            recorded: slot.recorded,
        };
        self.free.push(entry.slot);
        Some(fired)
    }

    /// Removes every timer and returns their wakers, to be dropped outside any borrow.
    pub(crate) fn drain_wakers(&mut self) -> Vec<Waker> {
        self.heap.clear();
        self.free.clear();
        self.slots.drain(..).filter_map(|s| s.waker).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
