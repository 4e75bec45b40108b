//! Groups (campaigns): progress, pause, resume, cancel and the completion hook of every
//! message enqueued with [`EnqueueOptions::group`](crate::EnqueueOptions::group).

use std::sync::Arc;

use crate::{
    clock::Clock,
    enqueue::check_group,
    error::Error,
    message::OutboxMessage,
    store::{Backend, GroupHook, GroupProgress},
};

use super::LIVE_BATCH;

/// Steer groups of messages from any process on the database, with or without workers
/// running. Every operation reads or writes through the group indexes: its cost follows
/// the group's size, not the queue's.
#[derive(Clone)]
pub struct Groups<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> Groups<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// Every group with a message in the queue, a dead letter, or something recorded
    /// (a pause, deliveries, cancels, a hook), by name, with its progress.
    pub async fn list(&self) -> Result<Vec<GroupProgress>, Error> {
        self.backend.groups(self.clock.database_now()).await
    }

    /// One group's progress; `None` if nothing is known of it.
    pub async fn show(&self, name: &str) -> Result<Option<GroupProgress>, Error> {
        self.backend.group(name, self.clock.database_now()).await
    }

    /// Pauses the group in every process: once this returns, no claim takes its
    /// messages, and the running outboxes give back the ones they had claimed but not
    /// started within 0.2 s (messages already running finish). Its queued messages keep
    /// their place in line and go out after [`Groups::resume`]. Pausing a paused group
    /// keeps its first pause time and takes the new reason.
    pub async fn pause(&self, name: &str, reason: &str) -> Result<(), Error> {
        check_group(name).map_err(Error::Config)?;
        self.backend
            .pause_group(name, reason, self.clock.database_now())
            .await
    }

    /// Lets the group's messages start again; false if it was not paused.
    pub async fn resume(&self, name: &str) -> Result<bool, Error> {
        self.backend.resume_group(name).await
    }

    /// Cancels the group's messages enqueued until now that have not started: records the
    /// cancel in the group's row, then deletes its queued, scheduled and retrying messages
    /// in transactions of at most [`LIVE_BATCH`] messages, counting them as cancelled in
    /// its progress; returns how many it deleted. The running outboxes stop starting the
    /// ones they had claimed within 0.2 s, as for a pause, and delete those as cancelled
    /// too; messages already running finish. Messages enqueued into the group afterwards
    /// are not affected.
    pub async fn cancel(&self, name: &str) -> Result<u64, Error> {
        self.backend
            .cancel_group(name, self.clock.database_now(), LIVE_BATCH)
            .await
    }

    /// Enqueues `message` once the group has nothing queued or running left (delivered,
    /// dead or cancelled): a running outbox checks every second and a drain before it
    /// ends, and across processes the message is enqueued once. Its handler can read the
    /// final figures with [`Groups::show`]. Set it after the group's messages are
    /// enqueued (a group with nothing in it yet counts as finished); setting it again
    /// replaces the hook and arms it again.
    pub async fn on_complete<M: OutboxMessage>(
        &self,
        name: &str,
        message: &M,
    ) -> Result<(), Error> {
        check_group(name).map_err(Error::Config)?;
        let payload = serde_json::to_vec(message).map_err(|e| {
            Error::Config(format!(
                "the completion message of group `{name}` does not serialize as `{}`: {e}",
                M::TYPE
            ))
        })?;
        let hook = GroupHook {
            type_tag: M::TYPE.to_owned(),
            payload,
            max_attempts: M::DEFAULTS.max_attempts,
            priority: M::DEFAULTS.priority,
        };
        self.backend.set_group_hook(name, &hook).await
    }
}
