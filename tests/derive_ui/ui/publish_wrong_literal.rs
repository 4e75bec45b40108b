use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = 42)]
struct NotAString;

#[derive(Serialize, PublishEvent)]
#[publish(subject)]
struct NoValue;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "pings", crate = "not a path")]
struct BadCrate;

fn main() {}
