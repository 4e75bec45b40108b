//! The line of messages waiting to ask a bucket for a token: the oldest started message
//! (in claim order) asks first, whatever order the runtime first polls their futures in.
//!
//! A message joins the line when the worker starts it (synchronously, in the order the
//! worker starts them) and is served once it is the oldest in line and nobody is asking;
//! a message that leaves without being served (its attempt was dropped) leaves the line.

use std::{
    cmp::Reverse,
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::SystemTime,
};

use tokio::sync::Notify;

use crate::store::Claimed;

/// A message's place: claim order (higher priority, earlier due, older id), then when it
/// joined (one message can be in line once only, but a key must be unique).
type Key = (Reverse<i32>, SystemTime, String, u64);

#[derive(Default)]
struct State {
    waiting: BTreeSet<Key>,
    asking: bool,
    joined: u64,
}

/// The line of one bucket layer.
#[derive(Default)]
pub(crate) struct Line {
    state: Mutex<State>,
    changed: Notify,
}

impl Line {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `claimed` joins the line.
    pub(crate) fn join(self: &Arc<Self>, claimed: &Claimed) -> Place {
        let mut state = self.state();
        state.joined += 1;
        let key = (
            Reverse(claimed.priority),
            claimed.due_at,
            claimed.id.as_str().to_owned(),
            state.joined,
        );
        state.waiting.insert(key.clone());
        Place {
            line: Arc::clone(self),
            key: Some(key),
        }
    }

    fn wake(&self) {
        self.changed.notify_waiters();
    }
}

/// A message's place in line; leaving it (dropped unserved) lets the next one go.
pub(crate) struct Place {
    line: Arc<Line>,
    key: Option<Key>,
}

impl Place {
    /// Waits until this message is the oldest in line and nobody is asking; it asks until
    /// the returned turn is dropped.
    pub(crate) async fn turn(mut self) -> Turn {
        loop {
            let changed = self.line.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.line.state();
                let first = state.waiting.first() == self.key.as_ref();
                if first && !state.asking {
                    state.asking = true;
                    if let Some(key) = self.key.take() {
                        state.waiting.remove(&key);
                    }
                    return Turn {
                        line: Arc::clone(&self.line),
                    };
                }
            }
            changed.await;
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.line.state().waiting.remove(&key);
            self.line.wake();
        }
    }
}

/// The right to ask the bucket; the next in line asks once it is dropped.
pub(crate) struct Turn {
    line: Arc<Line>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.line.state().asking = false;
        self.line.wake();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::enqueue::MessageId;

    fn claimed(id: &str, due: u64) -> Claimed {
        Claimed {
            id: MessageId::from_string(id.to_owned()),
            payload: Vec::new(),
            attempt: 1,
            max_attempts: 3,
            priority: 0,
            due_at: SystemTime::UNIX_EPOCH + Duration::from_secs(due),
            claim: 1,
            group: None,
            enqueued_at: SystemTime::UNIX_EPOCH,
        }
    }

    #[tokio::test]
    async fn the_oldest_in_line_asks_first_whatever_order_they_are_polled_in() {
        let line = Arc::new(Line::default());
        let older = line.join(&claimed("a", 1));
        let newer = line.join(&claimed("b", 2));
        // The newer is polled first: it must wait for the older.
        let newer = tokio::spawn(newer.turn());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!newer.is_finished());
        let turn = older.turn().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!newer.is_finished(), "one asks at a time");
        drop(turn);
        let _ = tokio::time::timeout(Duration::from_secs(1), newer)
            .await
            .expect("the newer asks next");
    }

    #[tokio::test]
    async fn a_place_left_unserved_lets_the_next_go() {
        let line = Arc::new(Line::default());
        let older = line.join(&claimed("a", 1));
        let newer = line.join(&claimed("b", 2));
        let newer = tokio::spawn(newer.turn());
        drop(older);
        let _ = tokio::time::timeout(Duration::from_secs(1), newer)
            .await
            .expect("served once the older left");
    }
}
