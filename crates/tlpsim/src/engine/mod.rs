//! The discrete-event engine: integer simulated time and a deterministic event queue.
//!
//! Time is an integer count of ticks (1/64 ps) so that no floating-point drift accumulates;
//! events at the same time run in the order they were scheduled.

pub mod queue;
pub mod rng;
pub(crate) mod table;
pub mod time;

pub use queue::EventQueue;
pub(crate) use table::Table;
pub use time::{OpenSpan, SimTime};
