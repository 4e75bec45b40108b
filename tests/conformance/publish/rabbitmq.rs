//! RabbitMQ as the cases' broker: a durable topic exchange of each run's own, a durable
//! queue bound to `<prefix>.#` that the consumer reads through `RabbitConsumer`, and a
//! second queue bound the same way that nobody reads (the tap: how many messages the broker
//! stored, duplicates included). The machine's node at 127.0.0.1:5672, or a private node
//! the test starts for the restart. Everything the run declared is deleted at its end.

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::FutureExt;
use outbox::{
    backend::Backend,
    prelude::*,
    publish::{
        rabbitmq::{
            lapin::{
                self,
                options::{
                    BasicConsumeOptions, BasicQosOptions, ExchangeDeclareOptions,
                    ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
                    QueueDeleteOptions,
                },
                types::FieldTable,
                Channel, Connection, ConnectionProperties, ExchangeKind,
            },
            ConsumeError, RabbitConsumer, RabbitRelay,
        },
        Event, Inbox,
    },
};

use super::{unique, Broker, Consumed, Recorder, Table};

#[path = "../../../outbox-publish/tests/support/rabbit_node.rs"]
mod rabbit_node;
use rabbit_node::PrivateNode;

/// The machine's RabbitMQ.
const SHARED_AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// A connection to the broker for declarations, counts and the consumer, opened again
/// after the broker went away.
struct Link {
    uri: String,
    open: tokio::sync::Mutex<Option<Arc<Connection>>>,
}

impl Link {
    fn new(uri: String) -> Self {
        Self {
            uri,
            open: tokio::sync::Mutex::new(None),
        }
    }

    /// A new channel (a failed declaration closes its channel: each use gets its own).
    async fn channel(&self) -> Option<Channel> {
        let mut open = self.open.lock().await;
        if let Some(connection) = open.as_ref().filter(|c| c.status().connected()) {
            if let Ok(Ok(channel)) = within(connection.create_channel()).await {
                return Some(channel);
            }
        }
        *open = None;
        let connection = within(Connection::connect(
            &self.uri,
            ConnectionProperties::default(),
        ))
        .await
        .ok()?
        .ok()?;
        let channel = within(connection.create_channel()).await.ok()?.ok()?;
        *open = Some(Arc::new(connection));
        Some(channel)
    }

    async fn must(&self) -> Channel {
        self.channel().await.unwrap_or_else(|| {
            panic!(
                "RabbitMQ at {} does not answer: these cases need it running (guest/guest)",
                self.uri
            )
        })
    }
}

/// `future`, given up after 5 s: a call on a connection the restart broke may never end.
async fn within<F: Future>(future: F) -> Result<F::Output, tokio::time::error::Elapsed> {
    tokio::time::timeout(Duration::from_secs(5), future).await
}

/// RabbitMQ: the outbox's `RabbitRelay` on a topic exchange, read through `RabbitConsumer`.
pub struct Rabbit {
    link: Link,
    relay: RabbitRelay,
    exchange: String,
    prefix: String,
    queue: String,
    tap: String,
    /// What the running consumer has acknowledged (processed + skipped), once it runs.
    acked: Mutex<Option<Arc<dyn Fn() -> u64 + Send + Sync>>>,
    node: Option<tokio::sync::Mutex<PrivateNode>>,
}

impl Rabbit {
    async fn with_topology(uri: String, tag: &str, node: Option<PrivateNode>) -> Self {
        let link = Link::new(uri.clone());
        let channel = link.must().await;
        let prefix = unique(&format!("conf{}", tag.to_lowercase()));
        let exchange = format!("{prefix}.x");
        let queue = format!("{prefix}.q");
        let tap = format!("{prefix}.tap");
        channel
            .exchange_declare(
                exchange.as_str().into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .unwrap();
        for q in [&queue, &tap] {
            channel
                .queue_declare(
                    q.as_str().into(),
                    QueueDeclareOptions::durable(),
                    FieldTable::default(),
                )
                .await
                .unwrap();
            channel
                .queue_bind(
                    q.as_str().into(),
                    exchange.as_str().into(),
                    format!("{prefix}.#").as_str().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .unwrap();
        }
        let relay = RabbitRelay::connect(&uri, exchange.clone())
            .await
            .unwrap_or_else(|e| panic!("the relay cannot reach RabbitMQ at {uri}: {e}"));
        Self {
            link,
            relay,
            exchange,
            prefix,
            queue,
            tap,
            acked: Mutex::new(None),
            node: node.map(tokio::sync::Mutex::new),
        }
    }

    /// Messages ready in `queue` (not counting those delivered and not yet acknowledged).
    async fn ready(&self, queue: &str) -> Option<u64> {
        let channel = self.link.channel().await?;
        let declared = within(channel.queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        ))
        .await
        .ok()?
        .ok()?;
        let _ = within(channel.close(200, "OK".into())).await;
        Some(u64::from(declared.message_count()))
    }
}

impl Broker for Rabbit {
    const NAME: &'static str = "rabbitmq";
    const REFUSED_FOR_GOOD: bool = false;

    async fn shared(tag: &str, _duplicate_window: Option<Duration>) -> Self {
        // RabbitMQ keeps no de-duplication window: every re-publish is stored again, and
        // the inbox skips it.
        Self::with_topology(SHARED_AMQP.to_owned(), tag, None).await
    }

    async fn private(tag: &str) -> Self {
        let mut node = PrivateNode::new();
        node.start().await;
        Self::with_topology(node.uri(), tag, Some(node)).await
    }

    async fn from_env() -> Self {
        let uri = std::env::var("OUTBOX_PUB_AMQP_URL").expect("OUTBOX_PUB_AMQP_URL");
        let exchange = std::env::var("OUTBOX_PUB_AMQP_EXCHANGE").expect("OUTBOX_PUB_AMQP_EXCHANGE");
        let relay = RabbitRelay::connect(&uri, exchange.clone())
            .await
            .unwrap_or_else(|e| panic!("the relay cannot reach RabbitMQ at {uri}: {e}"));
        Self {
            link: Link::new(uri),
            relay,
            exchange,
            prefix: String::new(),
            queue: String::new(),
            tap: String::new(),
            acked: Mutex::new(None),
            node: None,
        }
    }

    fn relay_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OUTBOX_PUB_AMQP_URL", self.link.uri.clone()),
            ("OUTBOX_PUB_AMQP_EXCHANGE", self.exchange.clone()),
        ]
    }

    fn subject(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }

    fn refused_subject(&self, key: &str) -> String {
        // Bound to no queue: RabbitMQ returns it (mandatory), the relay retries it and
        // dead-letters it once its retries are used.
        format!("{}-unbound.{key}", self.prefix)
    }

    fn register<K: Backend>(&self, outbox: Outbox<K>, options: QueueOptions) -> Outbox<K> {
        outbox.register_with::<Event, _>(self.relay.clone(), options)
    }

    fn consume<DB>(
        &self,
        inbox: Inbox<DB>,
        recorder: Recorder,
        lanes: usize,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> impl Future<Output = Consumed>
    where
        DB: Table,
        DB::Connection: outbox::InsertMessages,
    {
        let consumer = RabbitConsumer::new(inbox)
            .concurrency(lanes)
            .nack_delay(Duration::from_millis(200), Duration::from_secs(2));
        let progress = consumer.clone();
        *self.acked.lock().unwrap() = Some(Arc::new(move || {
            let c = progress.consumed();
            c.processed + c.skipped
        }));
        let stop = stop.map(|_| ()).shared();
        async move {
            let mut total = Consumed::default();
            // A run ends when the broker goes away (its restart): connect again and go on.
            loop {
                // A channel of the consumer's own: closing it hands back what it was sent.
                let Some(channel) = self.link.channel().await else {
                    if stop.clone().now_or_never().is_some() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let prefetch = u16::try_from(lanes * 10).unwrap_or(u16::MAX);
                if !matches!(
                    within(channel.basic_qos(prefetch, BasicQosOptions::default())).await,
                    Ok(Ok(()))
                ) {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                let Ok(Ok(deliveries)) = within(channel.basic_consume(
                    self.queue.as_str().into(),
                    unique("consumer").as_str().into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                ))
                .await
                else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let recorder = recorder.clone();
                let ran = consumer
                    .run_until(
                        deliveries,
                        move |tx, event| recorder.record::<DB>(tx, event),
                        stop.clone(),
                    )
                    .await;
                let (run, ended) = match ran {
                    Ok(run) => (run, true),
                    Err(e @ ConsumeError::Config(_)) => panic!("the consumer: {e}"),
                    Err(e) => (e.consumed(), false),
                };
                total.processed += run.processed;
                total.skipped += run.skipped;
                total.failed += run.handler_failed + run.database_failed;
                total.ack_failed += run.ack_failed;
                total.stream_errors += run.stream_errors + u64::from(!ended);
                // A channel of a connection that went away may never answer its close.
                let _ = within(channel.close(200, "OK".into())).await;
                if ended {
                    break;
                }
            }
            total
        }
    }

    async fn stored(&self) -> Option<u64> {
        self.ready(&self.tap).await
    }

    async fn drained(&self) -> bool {
        let acked = self.acked.lock().unwrap().clone();
        let (Some(acked), Some(ready), Some(stored)) =
            (acked, self.ready(&self.queue).await, self.stored().await)
        else {
            return false;
        };
        ready == 0 && acked() >= stored
    }

    async fn restart(&self, down: Duration) {
        let node = self
            .node
            .as_ref()
            .expect("only a private broker is restarted");
        let mut node = node.lock().await;
        node.stop();
        tokio::time::sleep(down).await;
        node.start().await;
    }

    async fn teardown(self) {
        if let Some(channel) = self.link.channel().await {
            for q in [&self.queue, &self.tap] {
                let _ = channel
                    .queue_delete(q.as_str().into(), QueueDeleteOptions::default())
                    .await;
            }
            let _ = channel
                .exchange_delete(
                    self.exchange.as_str().into(),
                    ExchangeDeleteOptions::default(),
                )
                .await;
        }
        drop(self.node);
    }
}
