//! An application on sqlx 0.7, which the outbox does not take: enqueueing through its
//! transaction fails to compile with a note naming the sqlx versions the outbox takes.

#[test]
fn enqueue_through_another_sqlx() {
    trybuild::TestCases::new().compile_fail("ui/enqueue_through_another_sqlx.rs");
}
