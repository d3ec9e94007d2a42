//! The four reference workloads (W1, W1ms, W2, W3), their pseudo-random durations, and the event
//! count and virtual end time each must produce, computed from the draws alone.
//!
//! Every framework draws the same durations: task `i` owns a SplitMix64 stream seeded
//! `SEED ^ i·φ`, and each draw is `1 + x mod 1000` (in µs, or in ms for W1ms). The expected
//! figures here never run a framework, so a framework that loses, adds or reorders an event
//! fails the check instead of getting faster.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The root seed of every duration stream.
///
/// With `0x5EED`, W1 ends at 61,734 µs; the tests pin that end time, computed from the draws
/// alone.
pub const SEED: u64 = 0x5EED;

/// The golden-ratio constant φ·2⁶⁴: SplitMix64's increment and the task-stream spacing.
pub const PHI: u64 = 0x9E37_79B9_7F4A_7C15;

/// The largest duration a draw returns, in workload units.
pub const DRAW_MAX: u64 = 1000;

/// Nanoseconds in one microsecond.
pub const MICROSECOND_NS: u64 = 1_000;

/// Nanoseconds in one millisecond.
pub const MILLISECOND_NS: u64 = 1_000_000;

/// SplitMix64 (Steele, Lea and Flood, 2014): one 64-bit state, one add and two multiplies per
/// draw, so drawing costs the same on every framework and never shows up in a comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// Returns a stream that starts from `state`.
    pub fn new(state: u64) -> SplitMix64 {
        SplitMix64 { state }
    }

    /// Returns the stream of task `task`: seeded `SEED ^ task·φ`.
    pub fn for_task(task: u64) -> SplitMix64 {
        SplitMix64::new(SEED ^ task.wrapping_mul(PHI))
    }

    /// Returns the next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(PHI);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Returns the next duration, `1..=1000` units.
    #[inline]
    pub fn draw(&mut self) -> u64 {
        1 + self.next_u64() % DRAW_MAX
    }
}

/// One of the benchmark's workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Workload {
    /// Many tasks, each sleeping a chain of 1..1000 µs.
    W1,
    /// W1's draws read as milliseconds (spread deadlines, no 1 ms rounding).
    W1ms,
    /// Two tasks exchanging messages, each hop a 1 µs sleep then a send.
    W2,
    /// Many spawned tasks, each sleeping once for 1..1000 µs.
    W3,
}

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 4] = [Workload::W1, Workload::W1ms, Workload::W2, Workload::W3];

    /// Returns the name used in tables, JSON and `--only`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::W1 => "W1",
            Workload::W1ms => "W1ms",
            Workload::W2 => "W2",
            Workload::W3 => "W3",
        }
    }

    /// Returns the workload's dimensions at `size`.
    pub fn shape(self, size: Size) -> Shape {
        let full = size == Size::Full;
        match self {
            Workload::W1 | Workload::W1ms => Shape::Timers(Timers {
                tasks: if full { 10_000 } else { 100 },
                sleeps_per_task: if full { 100 } else { 20 },
                unit_ns: if self == Workload::W1 {
                    MICROSECOND_NS
                } else {
                    MILLISECOND_NS
                },
            }),
            Workload::W2 => Shape::PingPong(PingPong {
                messages: if full { 1_000_000 } else { 2_000 },
                hop_ns: MICROSECOND_NS,
            }),
            Workload::W3 => Shape::FanOut(FanOut {
                tasks: if full { 100_000 } else { 1_000 },
                unit_ns: MICROSECOND_NS,
            }),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(text: &str) -> Result<Workload, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| format!("unknown workload {text:?}; expected one of W1, W1ms, W2, W3"))
    }
}

/// How big each workload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Size {
    /// The full sizes: 1M timer events for W1/W1ms/W2, 100k tasks for W3.
    Full,
    /// Sizes that run in milliseconds in a debug build, for tests and smoke runs.
    Small,
}

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Size, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Size::Full),
            "small" => Ok(Size::Small),
            _ => Err(format!("unknown size {text:?}; expected full or small")),
        }
    }
}

/// W1 and W1ms: `tasks` tasks, each sleeping `sleeps_per_task` times in sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// Tasks (or nexosim models).
    pub tasks: u64,
    /// Sequential sleeps of each task.
    pub sleeps_per_task: u64,
    /// Nanoseconds in one unit of a draw.
    pub unit_ns: u64,
}

/// W2: `messages` messages bounce between two tasks, each hop a `hop_ns` sleep then a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingPong {
    /// Messages in all, both ways together (even: each side sends half).
    pub messages: u64,
    /// The sleep before each send, in nanoseconds.
    pub hop_ns: u64,
}

/// W3: `tasks` tasks are spawned, each sleeps once for one draw and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanOut {
    /// Tasks spawned (or events scheduled by one nexosim model).
    pub tasks: u64,
    /// Nanoseconds in one unit of a draw.
    pub unit_ns: u64,
}

/// A workload's dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// W1 and W1ms.
    Timers(Timers),
    /// W2.
    PingPong(PingPong),
    /// W3.
    FanOut(FanOut),
}

/// What a correct run of a workload produces: the benchmark's definition of "the same work".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// Timer events (completed sleeps).
    pub events: u64,
    /// Virtual time when the last event fires, in nanoseconds from the start.
    pub end_ns: u64,
}

/// Returns the deadline a timer armed at `now_ns` for `delay_ns` fires at, on a clock that
/// rounds every deadline up to a multiple of `resolution_ns` (1 for exact clocks, 1 ms for
/// tokio's wheel).
fn deadline_ns(now_ns: u64, delay_ns: u64, resolution_ns: u64) -> u64 {
    (now_ns + delay_ns).div_ceil(resolution_ns) * resolution_ns
}

impl Shape {
    /// Returns what a run must produce on a clock of resolution `resolution_ns`, computed
    /// from the draws alone.
    pub fn expected(&self, resolution_ns: u64) -> Expected {
        match *self {
            Shape::Timers(timers) => {
                let end_ns = (0..timers.tasks)
                    .map(|task| {
                        let mut stream = SplitMix64::for_task(task);
                        (0..timers.sleeps_per_task).fold(0, |now, _| {
                            deadline_ns(now, stream.draw() * timers.unit_ns, resolution_ns)
                        })
                    })
                    .max()
                    .unwrap_or(0);
                Expected {
                    events: timers.tasks * timers.sleeps_per_task,
                    end_ns,
                }
            }
            Shape::PingPong(ping_pong) => {
                let end_ns = (0..ping_pong.messages).fold(0, |now, _| {
                    deadline_ns(now, ping_pong.hop_ns, resolution_ns)
                });
                Expected {
                    events: ping_pong.messages,
                    end_ns,
                }
            }
            Shape::FanOut(fan_out) => {
                let end_ns = (0..fan_out.tasks)
                    .map(|task| {
                        let delay_ns = SplitMix64::for_task(task).draw() * fan_out.unit_ns;
                        deadline_ns(0, delay_ns, resolution_ns)
                    })
                    .max()
                    .unwrap_or(0);
                Expected {
                    events: fan_out.tasks,
                    end_ns,
                }
            }
        }
    }
}
