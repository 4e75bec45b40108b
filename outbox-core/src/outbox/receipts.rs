//! Writes the receipts handlers record ([`MessageContext::record_receipt`]) in batches:
//! a handler hands its receipt over and goes on at once; one task writes whatever has
//! gathered in one statement while the next ones gather (so a fast drain writes a few
//! statements, not one per message), and the stop writes the rest. A batch that cannot
//! be written is kept and tried again (up to [`MAX_PENDING`] receipts, then the newest
//! are dropped with a WARN); a process that dies loses the receipts not written yet, never
//! a message.
//!
//! [`MessageContext::record_receipt`]: crate::MessageContext::record_receipt

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    sync::{watch, Notify},
    task::JoinHandle,
};

use crate::{
    clock::Clock,
    handler::context::{EventLog, RecordFn},
    message_events::NewMessageEvent,
    store::Backend,
};

/// Receipts written per statement at most.
const BATCH: usize = 1_000;
/// Receipts kept while the database cannot be written; more are dropped.
pub(crate) const MAX_PENDING: usize = 100_000;
/// The pause before a failed batch is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The receipts waiting to be written, and the task that writes them.
pub(super) struct ReceiptWriter<B> {
    backend: B,
    clock: Arc<dyn Clock>,
    pending: Mutex<Vec<NewMessageEvent>>,
    /// Receipts dropped since the last WARN (the pending list was full).
    dropped: Mutex<u64>,
    wake: Notify,
}

impl<B: Backend> ReceiptWriter<B> {
    /// A writer to `backend`, on `clock`.
    pub(super) fn new(backend: B, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self {
            backend,
            clock,
            pending: Mutex::new(Vec::new()),
            dropped: Mutex::new(0),
            wake: Notify::new(),
        })
    }

    /// Where handlers' receipts go: into the pending list, at once.
    pub(super) fn log(self: &Arc<Self>) -> EventLog {
        let this = Arc::clone(self);
        let write: RecordFn = Arc::new(move |event| {
            this.push(event);
            Box::pin(futures::future::ready(Ok(())))
        });
        EventLog(Some(write))
    }

    fn push(&self, event: NewMessageEvent) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if pending.len() >= MAX_PENDING {
                drop(pending);
                *self.dropped.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                return;
            }
            pending.push(event);
        }
        self.wake.notify_one();
    }

    /// Writes what gathers until stopped.
    pub(super) fn start(self: &Arc<Self>, mut stopped: watch::Receiver<bool>) -> JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = this.wake.notified() => {}
                    _ = stopped.wait_for(|s| *s) => return,
                }
                if !this.flush().await {
                    tokio::select! {
                        _ = tokio::time::sleep(RETRY_AFTER) => {}
                        _ = stopped.wait_for(|s| *s) => return,
                    }
                    this.wake.notify_one();
                }
            }
        })
    }

    /// Writes every pending receipt, a batch per statement; false when a batch could not
    /// be written (it stays pending, in front).
    pub(super) async fn flush(&self) -> bool {
        self.warn_dropped();
        loop {
            let batch: Vec<NewMessageEvent> = {
                let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
                let n = pending.len().min(BATCH);
                pending.drain(..n).collect()
            };
            if batch.is_empty() {
                return true;
            }
            if let Err(e) = self
                .backend
                .record_events(&batch, self.clock.database_now())
                .await
            {
                tracing::warn!(
                    error = %e, receipts = batch.len(),
                    "cannot write providers' receipts of delivered messages; trying again"
                );
                let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
                let later = std::mem::replace(&mut *pending, batch);
                pending.extend(later);
                pending.truncate(MAX_PENDING);
                return false;
            }
        }
    }

    fn warn_dropped(&self) {
        let dropped = std::mem::take(&mut *self.dropped.lock().unwrap_or_else(|p| p.into_inner()));
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "{dropped} receipts of delivered messages were not recorded: {MAX_PENDING} \
                 were waiting for the database already (the messages were delivered; the \
                 providers' later events about them will not be tied to them)"
            );
        }
    }
}
