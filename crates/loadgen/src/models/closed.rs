//! Closed model (like wrk): a fixed set of connections, each sending its next request as soon
//! as the previous answer arrived. Latency counts from the actual send.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Budget, Driver};
use crate::client::connection::Failure;
use crate::client::worker::Core;

/// Pause before reconnecting after a failed connect, so that a dead port does not turn the
/// generator into a busy loop of refused connects.
const CONNECT_RETRY: Duration = Duration::from_millis(10);

pub(crate) struct ClosedDriver {
    connections: usize,
    budget: Option<Arc<Budget>>,
    /// Budget spent: no new requests.
    spent: bool,
    /// Per connection: when to reconnect, if it is waiting to.
    retry_at: Vec<Option<Instant>>,
    waiting: usize,
}

impl ClosedDriver {
    pub(crate) fn new(connections: usize, budget: Option<Arc<Budget>>) -> ClosedDriver {
        ClosedDriver { connections, budget, spent: false, retry_at: vec![None; connections], waiting: 0 }
    }

    fn connect(&mut self, core: &mut Core, idx: usize, now: Instant) {
        if !core.connect(idx, now) {
            self.retry_later(idx, now);
        }
    }

    fn retry_later(&mut self, idx: usize, now: Instant) {
        if self.retry_at[idx].replace(now + CONNECT_RETRY).is_none() {
            self.waiting += 1;
        }
    }

    fn send(&mut self, core: &mut Core, idx: usize, now: Instant) {
        if self.spent {
            return;
        }
        if let Some(b) = &self.budget {
            if !b.take() {
                self.spent = true;
                return;
            }
        }
        if !core.send(idx, now, now) {
            // The write failed: the connection is closed; start a new one.
            self.connect(core, idx, now);
        }
    }
}

impl Driver for ClosedDriver {
    fn start(&mut self, core: &mut Core, now: Instant) {
        for _ in 0..self.connections {
            let idx = core.add_slot(now);
            self.connect(core, idx, now);
        }
    }

    fn on_idle(&mut self, core: &mut Core, idx: usize, now: Instant, _fresh: bool) {
        self.send(core, idx, now);
    }

    fn on_closed(&mut self, core: &mut Core, idx: usize, now: Instant, failure: Option<Failure>, was_connecting: bool) {
        if self.spent {
            return;
        }
        let connect_failed =
            was_connecting || matches!(failure, Some(Failure::ConnectRefused | Failure::ConnectTimeout));
        if connect_failed {
            self.retry_later(idx, now);
        } else {
            self.connect(core, idx, now);
        }
    }

    fn on_tick(&mut self, core: &mut Core, now: Instant) {
        if self.waiting == 0 {
            return;
        }
        for idx in 0..self.retry_at.len() {
            if self.retry_at[idx].is_some_and(|at| at <= now) {
                self.retry_at[idx] = None;
                self.waiting -= 1;
                self.connect(core, idx, now);
            }
        }
    }

    fn finished(&self, core: &Core) -> bool {
        self.spent && !core.any_busy()
    }
}
