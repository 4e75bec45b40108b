//! The in-process flag of one paused type.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Mutex,
    },
    task::Waker,
};

/// On while a type is paused; wakes the waiting worker when turned off.
#[derive(Debug, Default)]
pub struct PauseSwitch {
    paused: AtomicBool,
    waiting: Mutex<Vec<Waker>>,
}

impl PauseSwitch {
    /// Whether the type is paused.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Turns the switch on or off; turning it off wakes the workers waiting on it.
    pub fn set(&self, paused: bool) {
        let was = self.paused.swap(paused, Ordering::SeqCst);
        if was && !paused {
            let wakers =
                std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
            wakers.into_iter().for_each(Waker::wake);
        }
    }

    /// Remembers `waker` to wake on resume.
    pub(crate) fn wait(&self, waker: &Waker) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if !waiting.iter().any(|w| w.will_wake(waker)) {
            waiting.push(waker.clone());
        }
    }
}
