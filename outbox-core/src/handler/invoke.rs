//! The one guarded call of user code: a time limit, and a panic caught and put into words.
//!
//! The worker's dispatch calls handlers through [`invoke`], the supervisor calls a worker's
//! run through it (without a limit), and `testing::perform` calls a handler the way the
//! worker does; so a panic or a time-out reads the same wherever it happens.

use std::{any::Any, fmt, future::Future, panic::AssertUnwindSafe, time::Duration};

use futures::FutureExt;

/// Why a guarded call ended without its own result.
#[derive(Debug)]
pub(crate) enum Interrupted {
    /// It panicked (its synchronous start or its future).
    Panicked(Panic),
    /// It ran longer than its limit and was dropped.
    TimedOut(Duration),
}

/// A caught panic's payload.
pub(crate) struct Panic(Box<dyn Any + Send>);

impl Panic {
    /// The panic's text, when its payload is a string (`panic!("…")`, `expect`, `unwrap`);
    /// `None` for any other payload (`std::panic::panic_any(42)`).
    pub(crate) fn text(&self) -> Option<&str> {
        panic_text(&*self.0)
    }
}

impl fmt::Debug for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Panic").field(&self.text()).finish()
    }
}

impl fmt::Display for Panic {
    /// The panic's text, or "a non-string panic payload".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().unwrap_or("a non-string panic payload"))
    }
}

/// The text of a panic payload: the `&str` or `String` that `panic!` carries; `None` for
/// any other payload. Never panics.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Starts `call` and awaits its future, both inside a panic guard, for at most `limit`
/// (`None`: no limit). A panic becomes [`Interrupted::Panicked`] and a call past its
/// limit is dropped and becomes [`Interrupted::TimedOut`]; neither unwinds into the
/// caller. The caller's state seen by `call` must stay usable after a panic (it is
/// asserted unwind-safe here: the outbox drops everything the call touched).
pub(crate) async fn invoke<C, F>(call: C, limit: Option<Duration>) -> Result<F::Output, Interrupted>
where
    C: FnOnce() -> F,
    F: Future,
{
    // Started inside the guarded future, so a panic before its first `.await` is caught too.
    let guarded = AssertUnwindSafe(async move { call().await }).catch_unwind();
    let result = match limit {
        Some(limit) => match tokio::time::timeout(limit, guarded).await {
            Ok(result) => result,
            Err(_) => return Err(Interrupted::TimedOut(limit)),
        },
        None => guarded.await,
    };
    result.map_err(|payload| Interrupted::Panicked(Panic(payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_result_passes_through() {
        let out = invoke(|| async { 7 }, Some(Duration::from_secs(1))).await;
        assert_eq!(out.unwrap(), 7);
    }

    #[tokio::test]
    async fn panics_are_caught_with_their_text_wherever_they_happen() {
        let in_future = invoke(|| async { panic!("boom {}", 1) }, None).await;
        let Err(Interrupted::Panicked(p)) = in_future else {
            panic!("not caught: {in_future:?}")
        };
        assert_eq!(p.to_string(), "boom 1");

        let at_start = invoke(|| -> std::future::Ready<()> { panic!("at start") }, None).await;
        let Err(Interrupted::Panicked(p)) = at_start else {
            panic!("not caught: {at_start:?}")
        };
        assert_eq!(p.text(), Some("at start"));

        let other = invoke(|| async { std::panic::panic_any(42_u8) }, None).await;
        let Err(Interrupted::Panicked(p)) = other else {
            panic!("not caught: {other:?}")
        };
        assert_eq!(p.text(), None);
        assert_eq!(p.to_string(), "a non-string panic payload");
    }

    #[tokio::test]
    async fn a_call_past_its_limit_is_dropped() {
        let limit = Duration::from_millis(20);
        let out = invoke(|| tokio::time::sleep(Duration::from_secs(60)), Some(limit)).await;
        assert!(matches!(out, Err(Interrupted::TimedOut(l)) if l == limit));
    }
}
