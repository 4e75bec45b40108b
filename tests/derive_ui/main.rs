//! Compile-time errors of `#[derive(OutboxMessage)]`: each case in `ui/` must fail
//! with exactly the message and span recorded next to it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
