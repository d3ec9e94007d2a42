//! The reference workloads (W1, W1ms, W2, W3, W4), their pseudo-random durations, and the event
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
    /// A realistic mix: clients that think, spawn a handler per request, send it the request
    /// over a channel and await the reply under a timeout that fires or is cancelled.
    W4,
}

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 5] = [
        Workload::W1,
        Workload::W1ms,
        Workload::W2,
        Workload::W3,
        Workload::W4,
    ];

    /// Returns the name used in tables, JSON and `--only`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::W1 => "W1",
            Workload::W1ms => "W1ms",
            Workload::W2 => "W2",
            Workload::W3 => "W3",
            Workload::W4 => "W4",
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
            // Milliseconds, as W1ms: tokio's wheel then fires every deadline exactly, so the
            // race between a reply and its timeout ends the same way on every framework.
            Workload::W4 => Shape::Mix(Mix {
                clients: if full { 2_000 } else { 50 },
                requests_per_client: 4,
                unit_ns: MILLISECOND_NS,
                timeout_units: MIX_TIMEOUT_UNITS,
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
            .ok_or_else(|| {
                format!("unknown workload {text:?}; expected one of W1, W1ms, W2, W3, W4")
            })
    }
}

/// How big each workload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Size {
    /// The full sizes: 1M timer events for W1/W1ms/W2, 100k tasks for W3, 10k for W4.
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

/// W4's timeout on each reply, in units. Service times are odd (`2·draw − 1`) and the timeout
/// is even, so a reply never ties with its timeout: about half the timeouts fire, the others
/// are cancelled by the reply.
pub const MIX_TIMEOUT_UNITS: u64 = 1000;

/// W4: `clients` client tasks each make `requests_per_client` requests in sequence. A request
/// is: sleep a think time (one draw), spawn a handler task, send it the service time
/// (`2·draw − 1`) over a fresh channel, and await its reply on the client's reply channel under
/// a timeout of `timeout_units`. The handler receives, sleeps the service time, replies and
/// ends. A fired timeout is counted and the client then awaits the late reply; a reply in time
/// cancels the timeout. Tasks: `clients · (1 + requests_per_client)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    /// Client tasks (spawned by the main task).
    pub clients: u64,
    /// Requests each client makes, each served by a handler task it spawns.
    pub requests_per_client: u64,
    /// Nanoseconds in one unit of a draw.
    pub unit_ns: u64,
    /// The timeout on each reply, in units.
    pub timeout_units: u64,
}

/// One request of a W4 client, as its stream draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The client's sleep before it sends the request, in units.
    pub think_units: u64,
    /// The handler's sleep before it replies, in units (odd).
    pub service_units: u64,
}

impl Request {
    /// Draws the next request of a client's stream: the think time, then the service time.
    pub fn draw(stream: &mut SplitMix64) -> Request {
        let think_units = stream.draw();
        let service_units = 2 * stream.draw() - 1;
        Request {
            think_units,
            service_units,
        }
    }
}

impl Mix {
    /// Returns the tasks a run spawns besides the main task: the clients and their handlers.
    pub fn tasks(&self) -> u64 {
        self.clients * (1 + self.requests_per_client)
    }
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
    /// W4.
    Mix(Mix),
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
            Shape::Mix(mix) => {
                // Events: every think and every service sleep, plus each timeout that fires.
                let mut fired = 0;
                let mut end_ns = 0;
                for client in 0..mix.clients {
                    let mut stream = SplitMix64::for_task(client);
                    let mut now = 0;
                    for _ in 0..mix.requests_per_client {
                        let request = Request::draw(&mut stream);
                        let sent =
                            deadline_ns(now, request.think_units * mix.unit_ns, resolution_ns);
                        let timeout =
                            deadline_ns(sent, mix.timeout_units * mix.unit_ns, resolution_ns);
                        let replied =
                            deadline_ns(sent, request.service_units * mix.unit_ns, resolution_ns);
                        if timeout < replied {
                            fired += 1;
                        }
                        now = replied;
                    }
                    end_ns = end_ns.max(now);
                }
                Expected {
                    events: 2 * mix.clients * mix.requests_per_client + fired,
                    end_ns,
                }
            }
        }
    }
}
