//! NATS JetStream relay (being written).
