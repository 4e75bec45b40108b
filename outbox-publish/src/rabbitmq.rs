//! RabbitMQ relay (being written).
