//! Virtual time: `u64` nanoseconds from the run's start instant.
//!
//! [`sleep`], [`sleep_until`], [`timeout`] and [`Interval`] arm timers on the simulation's
//! timer queue; time moves only when the executor pops the next timer. The wall clock the
//! simulated world sees is the start instant plus virtual time ([`wall_clock_unix_ns`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::actor::CLOCK_ACTOR;
use crate::executor::with_core;
use crate::timers::TimerKey;

/// The default start instant: 2026-01-01T00:00:00Z, in nanoseconds since the Unix epoch.
pub const START_DEFAULT_UNIX_NS: i64 = 1_767_225_600 * 1_000_000_000;

/// Returns the virtual time, in nanoseconds since the start of the run.
pub fn now_ns() -> u64 {
    with_core(|core| core.now_ns)
}

/// Returns the virtual time as a [`Duration`] since the start of the run.
pub fn elapsed() -> Duration {
    Duration::from_nanos(now_ns())
}

/// Returns the simulated wall clock: the start instant plus virtual time, in nanoseconds since
/// the Unix epoch.
pub fn wall_clock_unix_ns() -> i64 {
    with_core(|core| core.start_unix_ns.saturating_add(core.now_ns as i64))
}

/// Returns `duration` in nanoseconds, saturating at `u64::MAX`.
pub fn duration_ns(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Formats virtual nanoseconds for people: `1.5s`, `250ms`, `12us`, `7ns`.
pub fn format_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (scale, unit) in UNITS {
        if ns >= scale || scale == 1 {
            let whole = ns / scale;
            let frac = ns % scale;
            if frac == 0 {
                return format!("{whole}{unit}");
            }
            let digits = scale.ilog10() as usize;
            let frac = format!("{frac:0digits$}");
            return format!("{whole}.{}{unit}", frac.trim_end_matches('0'));
        }
    }
    unreachable!("the last unit has scale 1")
}

/// Why a time text does not parse. Never fatal to a run: the caller reports it where the
/// text came from (a scenario field, a builder setting).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TimeParseError {
    /// Not an RFC 3339 instant.
    #[error("{text:?}: {source}")]
    Instant {
        /// The text as given.
        text: String,
        /// What the parser found.
        source: humantime::TimestampError,
    },
    /// An instant before the Unix epoch.
    #[error("{text:?} is before 1970-01-01T00:00:00Z, which simtape does not support")]
    BeforeEpoch {
        /// The text as given.
        text: String,
    },
    /// An instant whose nanoseconds do not fit in an `i64`.
    #[error("{text:?} is too far in the future")]
    TooLate {
        /// The text as given.
        text: String,
    },
    /// Not a duration.
    #[error("{text:?}: {source}")]
    Duration {
        /// The text as given (trimmed).
        text: String,
        /// What the parser found.
        source: humantime::DurationError,
    },
}

/// Parses an RFC 3339 instant (`2026-01-01T00:00:00Z`) into nanoseconds since the Unix epoch.
pub fn parse_instant(text: &str) -> Result<i64, TimeParseError> {
    let owned = || text.to_string();
    #[allow(clippy::disallowed_types)] // a value conversion, not a clock read
    let instant: std::time::SystemTime =
        humantime::parse_rfc3339_weak(text.trim()).map_err(|source| TimeParseError::Instant {
            text: owned(),
            source,
        })?;
    #[allow(clippy::disallowed_types)]
    let since = instant
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| TimeParseError::BeforeEpoch { text: owned() })?;
    i64::try_from(since.as_nanos()).map_err(|_| TimeParseError::TooLate { text: owned() })
}

/// Formats nanoseconds since the Unix epoch as RFC 3339 (UTC, nanosecond precision).
pub fn format_instant(unix_ns: i64) -> String {
    let nanos = u64::try_from(unix_ns).unwrap_or(0);
    #[allow(clippy::disallowed_types)]
    let instant = std::time::UNIX_EPOCH + Duration::from_nanos(nanos);
    humantime::format_rfc3339_nanos(instant).to_string()
}

/// Parses a duration such as `250ms`, `1h 30m`, `2s`, or a bare number of nanoseconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, TimeParseError> {
    let text = text.trim();
    if let Ok(ns) = text.parse::<u64>() {
        return Ok(ns);
    }
    humantime::parse_duration(text)
        .map(duration_ns)
        .map_err(|source| TimeParseError::Duration {
            text: text.to_string(),
            source,
        })
}

/// A future that completes at a virtual deadline. Created by [`sleep`] and [`sleep_until`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline_ns: u64,
    key: Option<TimerKey>,
    actor: u16,
    recorded: bool,
}

impl Sleep {
    /// A sleep whose wake is recorded under `actor` (or not recorded at all): the seam actors
    /// use to wait out their own latency.
    pub(crate) fn for_actor(deadline_ns: u64, actor: u16, recorded: bool) -> Sleep {
        Sleep {
            deadline_ns,
            key: None,
            actor,
            recorded,
        }
    }

    /// Returns the deadline, in virtual nanoseconds.
    pub fn deadline_ns(&self) -> u64 {
        self.deadline_ns
    }
}

impl Future for Sleep {
    type Output = ();

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        with_core(|core| {
            if core.now_ns >= this.deadline_ns {
                this.key = None;
                return Poll::Ready(());
            }
            match this.key {
                Some(key) => core.timers.update_waker(key, cx.waker()),
                None => {
                    let task = crate::executor::current_task();
                    let waker = cx.waker().clone();
                    let key = core.timers.insert(
                        this.deadline_ns,
                        task,
                        this.actor,
                        this.recorded,
                        waker,
                    );
                    this.key = Some(key);
                }
            }
            Poll::Pending
        })
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // The core may be gone when a run tears down; then there is nothing to cancel.
            crate::executor::try_with_core(|core| core.timers.cancel(key));
        }
    }
}

/// Sleeps for `duration` of virtual time. The wake is a `wake` record of the clock actor.
///
/// ```
/// use std::time::Duration;
/// let report = simtape::Sim::builder().build().unwrap().run(|_host| async {
///     simtape::time::sleep(Duration::from_secs(3600)).await;
///     simtape::time::now_ns()
/// }).unwrap();
/// assert_eq!(report.output, 3_600_000_000_000);
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    let now = now_ns();
    Sleep::for_actor(now.saturating_add(duration_ns(duration)), CLOCK_ACTOR, true)
}

/// Sleeps until virtual time `deadline_ns` (nanoseconds since the start of the run).
pub fn sleep_until(deadline_ns: u64) -> Sleep {
    Sleep::for_actor(deadline_ns, CLOCK_ACTOR, true)
}

/// Returned by [`timeout`] when the deadline passes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("timed out after {}", format_ns(*.0))]
pub struct Elapsed(pub u64);

/// A future racing `future` against a deadline. Created by [`timeout`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    future: Pin<Box<F>>,
    sleep: Sleep,
    duration_ns: u64,
}

/// Runs `future` for at most `duration` of virtual time.
///
/// ```
/// use std::time::Duration;
/// use simtape::time::{sleep, timeout};
/// let report = simtape::Sim::builder().build().unwrap().run(|_host| async {
///     timeout(Duration::from_millis(10), sleep(Duration::from_secs(1))).await
/// }).unwrap();
/// assert!(report.output.is_err());
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future: Box::pin(future),
        sleep: sleep(duration),
        duration_ns: duration_ns(duration),
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(value) = self.future.as_mut().poll(cx) {
            return Poll::Ready(Ok(value));
        }
        let duration_ns = self.duration_ns;
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(duration_ns))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Ticks every `period` of virtual time, on a fixed schedule (a late tick does not shift the
/// next one).
#[derive(Debug)]
pub struct Interval {
    next_ns: u64,
    period_ns: u64,
}

/// Returns an interval whose first tick is immediate.
///
/// # Panics
/// When `period` is zero.
pub fn interval(period: Duration) -> Interval {
    let period_ns = duration_ns(period);
    assert!(period_ns > 0, "an interval needs a period above zero");
    Interval {
        next_ns: now_ns(),
        period_ns,
    }
}

impl Interval {
    /// Waits for the next tick and returns its virtual time.
    pub async fn tick(&mut self) -> u64 {
        let deadline = self.next_ns;
        sleep_until(deadline).await;
        self.next_ns = deadline.saturating_add(self.period_ns);
        deadline
    }
}

/// Yields to every other runnable task once, without advancing time.
pub async fn yield_now() {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_time() {
        // Goal: people-facing time strings round-trip and the default start is 2026-01-01.
        assert_eq!(format_ns(1_500_000_000), "1.5s");
        assert_eq!(format_ns(250_000_000), "250ms");
        assert_eq!(format_ns(7), "7ns");
        assert_eq!(format_ns(0), "0ns");
        assert_eq!(
            parse_instant("2026-01-01T00:00:00Z").unwrap(),
            START_DEFAULT_UNIX_NS
        );
        assert_eq!(
            format_instant(START_DEFAULT_UNIX_NS),
            "2026-01-01T00:00:00.000000000Z"
        );
        assert_eq!(parse_duration_ns("1h 30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration_ns("250ms").unwrap(), 250_000_000);
        assert!(parse_duration_ns("soon").is_err());
        assert!(parse_instant("yesterday").is_err());
    }
}
