//! Wake-ups: how a backend tells idle workers that messages of a type were committed,
//! so they claim at once instead of at the process's next due probe.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

/// The idle workers of one database, by type tag. A backend calls [`Wakeups::notify`]
/// when it learns of a commit (PostgreSQL NOTIFY, a SQLite commit in this process); a
/// notification for a worker that is busy is kept until it next waits, so none is lost.
#[derive(Debug, Default)]
pub struct Wakeups {
    subscribers: Mutex<Vec<(String, Weak<Notify>)>>,
}

impl Wakeups {
    /// A registry without subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// The notification a worker of `type_tag` waits on; dropped with the worker.
    pub fn subscribe(&self, type_tag: &str) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|(_, w)| w.strong_count() > 0);
        subs.push((type_tag.to_owned(), Arc::downgrade(&notify)));
        notify
    }

    /// Whether any worker still waits here (a backend stops listening when none does).
    pub fn has_subscribers(&self) -> bool {
        let subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subs.iter().any(|(_, w)| w.strong_count() > 0)
    }

    /// Wakes the workers of `type_tag`.
    pub fn notify(&self, type_tag: &str) {
        let subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        for (tag, w) in subs.iter() {
            if tag == type_tag {
                if let Some(n) = w.upgrade() {
                    n.notify_one();
                }
            }
        }
    }

    /// Wakes every worker (a commit whose types are unknown).
    pub fn notify_all(&self) {
        let subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        for (_, w) in subs.iter() {
            if let Some(n) = w.upgrade() {
                n.notify_one();
            }
        }
    }
}
