//! `poll_oneoff`: clock subscriptions wait on a simulation timer; descriptor subscriptions
//! are always ready.
//!
//! Every clock subscription's deadline is computed once, at entry (relative: now + timeout;
//! absolute MONOTONIC: the timeout; absolute REALTIME: the timeout minus the start instant).
//! When a descriptor subscription is present its events come back at once, with the clock
//! subscriptions already due, and no time passes. Otherwise the guest waits until the
//! earliest deadline, a real simulation timer during which other tasks and actors run, and
//! only the subscriptions due by then are reported.

use wasmtime::{Caller, Extern};

use super::abi::{
    self, WasiResult, EFAULT, EINVAL, EVENTTYPE_CLOCK, EVENTTYPE_FD_READ, EVENTTYPE_FD_WRITE,
    EVENT_BYTES, SUBCLOCKFLAGS_ABSTIME, SUBSCRIPTION_BYTES,
};
use super::clock;
use super::run::Guest;

/// Subscriptions one call may pass.
const SUBSCRIPTIONS_MAX: u32 = 4096;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Clock { deadline_ns: u64 },
    Descriptor { event_type: u8, fd: u32 },
}

#[derive(Debug, Clone, Copy)]
struct Subscription {
    userdata: u64,
    kind: Kind,
}

/// One event to hand back.
#[derive(Debug, Clone, Copy)]
struct Event {
    userdata: u64,
    errno: u16,
    event_type: u8,
    nbytes: u64,
}

/// Runs `poll_oneoff`; returns the guest's errno.
pub(super) async fn poll_oneoff(
    caller: &mut Caller<'_, Guest>,
    subscriptions_ptr: u32,
    events_ptr: u32,
    count: u32,
    events_written_ptr: u32,
) -> i32 {
    clock::charge_fuel(caller).await;
    let subscriptions = match read_subscriptions(caller, subscriptions_ptr, events_ptr, count) {
        Ok(subscriptions) => subscriptions,
        Err(errno) => return abi::errno_of(Err(errno)),
    };
    let descriptor_events = descriptor_events(caller.data(), &subscriptions);
    let due_by = if descriptor_events.is_empty() {
        let earliest = subscriptions
            .iter()
            .filter_map(|s| match s.kind {
                Kind::Clock { deadline_ns } => Some(deadline_ns),
                Kind::Descriptor { .. } => None,
            })
            .min()
            .expect("without descriptor subscriptions every subscription is a clock");
        crate::time::sleep_until(earliest).await;
        earliest
    } else {
        crate::time::now_ns()
    };
    let mut events = descriptor_events;
    events.extend(subscriptions.iter().filter_map(|s| match s.kind {
        Kind::Clock { deadline_ns } if deadline_ns <= due_by => Some(Event {
            userdata: s.userdata,
            errno: 0,
            event_type: EVENTTYPE_CLOCK,
            nbytes: 0,
        }),
        _ => None,
    }));
    abi::errno_of(write_events(
        caller,
        events_ptr,
        &events,
        events_written_ptr,
    ))
}

/// Decodes the subscriptions and checks the event array fits, before any time passes.
fn read_subscriptions(
    caller: &mut Caller<'_, Guest>,
    ptr: u32,
    events_ptr: u32,
    count: u32,
) -> WasiResult<Vec<Subscription>> {
    if count == 0 || count > SUBSCRIPTIONS_MAX {
        return Err(EINVAL);
    }
    let memory = memory(caller)?;
    let data = memory.data(&*caller);
    abi::bytes(data, events_ptr, count * EVENT_BYTES)?;
    (0..count)
        .map(|index| {
            let at = ptr.checked_add(index * SUBSCRIPTION_BYTES).ok_or(EFAULT)?;
            let raw = abi::bytes(data, at, SUBSCRIPTION_BYTES)?;
            let userdata = abi::read_u64(raw, 0)?;
            let kind = match raw[8] {
                EVENTTYPE_CLOCK => {
                    let id = abi::read_u32(raw, 16)?;
                    let timeout = abi::read_u64(raw, 24)?;
                    let absolute = abi::read_u16(raw, 40)? & SUBCLOCKFLAGS_ABSTIME != 0;
                    Kind::Clock {
                        deadline_ns: clock::deadline_ns(id, timeout, absolute)?,
                    }
                }
                event_type @ (EVENTTYPE_FD_READ | EVENTTYPE_FD_WRITE) => Kind::Descriptor {
                    event_type,
                    fd: abi::read_u32(raw, 16)?,
                },
                _ => return Err(EINVAL),
            };
            Ok(Subscription { userdata, kind })
        })
        .collect()
}

/// Returns an event for each descriptor subscription: ready now, or its error.
fn descriptor_events(guest: &Guest, subscriptions: &[Subscription]) -> Vec<Event> {
    subscriptions
        .iter()
        .filter_map(|s| match s.kind {
            Kind::Descriptor { event_type, fd } => {
                let ready = if event_type == EVENTTYPE_FD_READ {
                    guest.vfs.readable_bytes(fd)
                } else {
                    guest.vfs.fdstat(fd).map(|_| 0)
                };
                let (errno, nbytes) = match ready {
                    Ok(nbytes) => (0, nbytes),
                    Err(errno) => (errno.0, 0),
                };
                Some(Event {
                    userdata: s.userdata,
                    errno,
                    event_type,
                    nbytes,
                })
            }
            Kind::Clock { .. } => None,
        })
        .collect()
}

fn write_events(
    caller: &mut Caller<'_, Guest>,
    ptr: u32,
    events: &[Event],
    written_ptr: u32,
) -> WasiResult {
    let memory = memory(caller)?;
    let data = memory.data_mut(&mut *caller);
    for (index, event) in events.iter().enumerate() {
        let mut raw = [0u8; EVENT_BYTES as usize];
        raw[0..8].copy_from_slice(&event.userdata.to_le_bytes());
        raw[8..10].copy_from_slice(&event.errno.to_le_bytes());
        raw[10] = event.event_type;
        raw[16..24].copy_from_slice(&event.nbytes.to_le_bytes());
        // In range: the whole event array was checked before any time passed.
        abi::write_bytes(data, ptr + index as u32 * EVENT_BYTES, &raw)?;
    }
    abi::write_u32(data, written_ptr, events.len() as u32)
}

fn memory(caller: &mut Caller<'_, Guest>) -> WasiResult<wasmtime::Memory> {
    caller
        .get_export("memory")
        .and_then(Extern::into_memory)
        .ok_or(EFAULT)
}
