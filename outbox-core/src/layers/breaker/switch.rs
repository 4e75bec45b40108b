//! One breaker shared by the workers of a process: its state machine behind a lock, the
//! workers waiting for it, and what the process does when it holds or releases them.

use std::{
    sync::{Arc, Mutex},
    task::Waker,
    time::Instant,
};

use super::{state::Local, Breaker};

/// What a breaker's change asks of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerEvent {
    /// It opened, or its probe failed: the claimed messages of its types that have not
    /// started go back to the queue unchanged.
    Held,
    /// It closed, or this process got its probe: its types' workers start again now.
    Released,
}

/// What the process does on a [`BreakerEvent`].
pub type OnBreakerEvent = Arc<dyn Fn(&[&'static str], BreakerEvent) + Send + Sync>;

/// A circuit breaker as one process runs it: shared by the workers of every type it
/// guards, kept in step with the shared row by the process's breaker watcher.
pub struct BreakerSwitch {
    name: String,
    config: Breaker,
    types: Vec<&'static str>,
    local: Mutex<Local>,
    waiting: Mutex<Vec<Waker>>,
    on_event: OnBreakerEvent,
}

impl BreakerSwitch {
    /// The closed breaker `name` with `config`, guarding `types`; `on_event` is called on
    /// each change (with the types).
    pub fn new(
        name: String,
        config: Breaker,
        types: Vec<&'static str>,
        on_event: OnBreakerEvent,
    ) -> Self {
        Self {
            name,
            config,
            types,
            local: Mutex::new(Local::new()),
            waiting: Mutex::new(Vec::new()),
            on_event,
        }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The message types it guards in this process.
    pub fn types(&self) -> &[&'static str] {
        &self.types
    }

    /// Its settings.
    pub fn config(&self) -> &Breaker {
        &self.config
    }

    /// Whether it is open, as this process knows.
    pub fn is_open(&self) -> bool {
        self.with(|l| l.is_open())
    }

    /// Runs `f` on the state machine.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Local) -> R) -> R {
        f(&mut self.local.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether a message may start now; if not, `waker` is woken when one may.
    pub(crate) fn admits(&self, waker: &Waker) -> bool {
        if self.with(|l| l.admits(Instant::now())) {
            return true;
        }
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            if !waiting.iter().any(|w| w.will_wake(waker)) {
                waiting.push(waker.clone());
            }
        }
        // Checked again after registering, so a release in between is not missed.
        self.with(|l| l.admits(Instant::now()))
    }

    /// Tells the process of `event`; a release also wakes the workers waiting here.
    pub(crate) fn notify(&self, event: BreakerEvent) {
        if event == BreakerEvent::Released {
            let wakers =
                std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
            wakers.into_iter().for_each(Waker::wake);
        }
        (self.on_event)(&self.types, event);
    }
}

impl std::fmt::Debug for BreakerSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerSwitch")
            .field("name", &self.name)
            .field("types", &self.types)
            .field("open", &self.is_open())
            .finish_non_exhaustive()
    }
}
