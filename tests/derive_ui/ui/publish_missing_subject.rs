use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
struct NoAttribute {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(key = "{id}")]
struct KeyOnly {
    id: u64,
}

fn main() {
    // The stand-in impl emitted with the errors keeps these lines free of errors.
    let _ = NoAttribute { id: 1 }.to_event();
    let _ = KeyOnly { id: 1 }.subject();
}
