//! What a load model gives the worker's event loop: a driver that decides when each connection sends,
//! through the worker's [`Core`]. The models implement it (models/); the worker only calls it.
//! driver.rs and worker.rs import each other on purpose: the worker calls the driver per event, and the driver
//! acts only through the worker's `Core`; one event loop owns both halves so that no answer waits on a channel.

use std::time::Instant;

use super::connection::Failure;
use super::worker::Core;
use crate::report::OpenStats;

/// A load model's side of the worker's event loop.
pub(crate) trait Driver {
    /// Once, before the loop starts.
    fn start(&mut self, core: &mut Core, now: Instant);
    /// Connection `idx` is idle: just connected (`fresh`), or done with a response.
    fn on_idle(&mut self, core: &mut Core, idx: usize, now: Instant, fresh: bool);
    /// Connection `idx` was closed: by the server, after an error (`failure`, already counted),
    /// or a timeout. `was_connecting`: it never got connected.
    fn on_closed(&mut self, core: &mut Core, idx: usize, now: Instant, failure: Option<Failure>, was_connecting: bool);
    /// Every tick (about 10 ms): retries and other slow timers.
    fn on_tick(&mut self, _core: &mut Core, _now: Instant) {}
    /// Every loop iteration: send what is due.
    fn dispatch(&mut self, _core: &mut Core, _now: Instant) {}
    /// When the loop must wake up next for this model, if sooner than the next tick.
    fn next_wakeup(&self, _now: Instant) -> Option<Instant> {
        None
    }
    /// The run's deadline has passed: send nothing more (requests in flight may still be answered).
    /// Called on every loop pass of the drain, so it must be idempotent.
    fn stop_sending(&mut self) {}
    /// The model has nothing left to do (request budget spent and every answer in).
    fn finished(&self, core: &Core) -> bool;
    /// Schedule bookkeeping at the end of the window `end` (open model only).
    fn open_result(&mut self, _end: Instant) -> Option<OpenResult> {
        None
    }
}

/// A worker's open-model figures, with what merging them across workers exactly needs.
pub(crate) struct OpenResult {
    /// This worker's figures alone.
    pub(crate) stats: OpenStats,
    /// Schedule lag of every send (µs).
    pub(crate) lag: hdrhistogram::Histogram<u64>,
    /// Requests sent within the window.
    pub(crate) sent: u64,
}
