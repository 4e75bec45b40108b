use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders {id} created")]
struct Spaces {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.*.{id}")]
struct Wildcard {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders..{id}")]
struct EmptyToken {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = ".orders.{id}")]
struct LeadingDot {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "{id}.")]
struct TrailingDot {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "")]
struct EmptySubject;

#[derive(Serialize, PublishEvent)]
#[publish(
    subject = "a.very.long.subject.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)]
struct TooLong;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "a..b >")]
struct Everything;

fn main() {}
