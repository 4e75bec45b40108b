use outbox::OutboxMessage;
#[derive(OutboxMessage)]
union Bits {
    int: u32,
    float: f32,
}
fn main() {}
