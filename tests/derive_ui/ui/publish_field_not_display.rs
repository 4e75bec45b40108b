use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "files.{bytes}.uploaded", key = "{owner}")]
struct Uploaded {
    bytes: Vec<u8>,
    owner: Option<String>,
}

fn main() {}
