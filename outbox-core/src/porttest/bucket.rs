//! Token buckets: creation, taking, refill, the cap and rate changes, with exact
//! arithmetic at pinned times ([`RateBucketStore`]). Times move by binary fractions of a
//! second, so every expected value is exact in floating point; results are compared to
//! within 1e-6.

use std::time::{Duration, SystemTime};

use super::{t0, PortHarness};
use crate::{
    clock::Now,
    store::{BucketState, RateBucketStore, RateLimit, TokenGrant},
};

/// Tolerance of the floating-point comparisons.
const EPS: f64 = 1e-6;

/// [`t0`] plus `secs` seconds.
fn at_s(secs: f64) -> SystemTime {
    t0() + Duration::from_secs_f64(secs)
}

/// Burst 3, 2 tokens per second.
fn three_at_two() -> RateLimit {
    RateLimit {
        burst: 3.0,
        per_second: 2.0,
    }
}

/// Takes a token from `bucket` at `now`.
async fn take<H: PortHarness>(h: &H, bucket: &str, now: SystemTime) -> TokenGrant {
    h.backend()
        .take_token(bucket, Now::At(now))
        .await
        .expect("take a token")
}

/// Asserts `grant` is a wait of `secs` seconds (within [`EPS`]).
fn assert_wait(grant: TokenGrant, secs: f64, what: &str) {
    match grant {
        TokenGrant::Wait(d) => assert!(
            (d.as_secs_f64() - secs).abs() < EPS,
            "{what}: waits {d:?}, expected {secs} s"
        ),
        other => panic!("{what}: {other:?}, expected a wait of {secs} s"),
    }
}

/// The bucket read at `now`.
async fn state<H: PortHarness>(h: &H, bucket: &str, now: SystemTime) -> BucketState {
    h.backend()
        .bucket(bucket, Now::At(now))
        .await
        .expect("read a bucket")
        .expect("the bucket exists")
}

/// Asserts two token counts are equal within [`EPS`].
fn assert_tokens(got: f64, expected: f64, what: &str) {
    assert!(
        (got - expected).abs() < EPS,
        "{what}: {got} tokens, expected {expected}"
    );
}

/// A new bucket is full (its burst), read at the given time; a take at the same instant
/// succeeds burst times, then waits exactly (1 − tokens) / rate.
pub async fn new_bucket_is_full_then_waits<H: PortHarness>(h: &H) {
    let b = h.backend();
    b.set_bucket("mail", three_at_two(), Now::At(t0()))
        .await
        .unwrap();
    let s = state(h, "mail", t0()).await;
    assert_eq!(s.limit, three_at_two());
    assert_tokens(s.tokens, 3.0, "stored");
    assert_tokens(s.tokens_now(), 3.0, "now");
    assert_eq!((s.updated_at, s.read_at), (t0(), t0()));
    for i in 0..3 {
        assert_eq!(take(h, "mail", t0()).await, TokenGrant::Granted, "take {i}");
    }
    assert_wait(take(h, "mail", t0()).await, 0.5, "empty: (1 - 0) / 2");
    let s = state(h, "mail", t0()).await;
    assert_tokens(s.tokens_now(), 0.0, "after three takes");
}

/// Tokens come back at the rate: a quarter second after draining, half a token (a wait of
/// a quarter second); half a second after, one token (granted), then empty again.
pub async fn tokens_refill_with_time<H: PortHarness>(h: &H) {
    let b = h.backend();
    b.set_bucket("mail", three_at_two(), Now::At(t0()))
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(take(h, "mail", t0()).await, TokenGrant::Granted);
    }
    let s = state(h, "mail", at_s(0.25)).await;
    assert_eq!(s.read_at, at_s(0.25));
    assert_tokens(s.tokens_now(), 0.5, "a quarter second at 2/s");
    assert_wait(take(h, "mail", at_s(0.25)).await, 0.25, "(1 - 0.5) / 2");
    assert_eq!(take(h, "mail", at_s(0.5)).await, TokenGrant::Granted);
    assert_wait(take(h, "mail", at_s(0.5)).await, 0.5, "empty again");
    let s = state(h, "mail", at_s(0.5)).await;
    assert_tokens(s.tokens_now(), 0.0, "the refilled token was spent");
}

/// After a long quiet spell a bucket holds its burst, no more: burst takes succeed, the
/// next waits a full token's time.
pub async fn tokens_cap_at_the_burst<H: PortHarness>(h: &H) {
    let b = h.backend();
    b.set_bucket("mail", three_at_two(), Now::At(t0()))
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(take(h, "mail", t0()).await, TokenGrant::Granted);
    }
    let hour = at_s(3600.0);
    assert_tokens(state(h, "mail", hour).await.tokens_now(), 3.0, "capped");
    for i in 0..3 {
        assert_eq!(take(h, "mail", hour).await, TokenGrant::Granted, "take {i}");
    }
    assert_wait(take(h, "mail", hour).await, 0.5, "empty");
}

/// Changing a bucket's settings keeps the tokens earned at the old rate until then,
/// capped at the new burst; the new rate applies from then on.
pub async fn rate_change_keeps_earned_tokens_capped<H: PortHarness>(h: &H) {
    let b = h.backend();
    b.set_bucket("mail", three_at_two(), Now::At(t0()))
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(take(h, "mail", t0()).await, TokenGrant::Granted);
    }
    // One second at 2/s earned 2 tokens; the new burst of 1 caps them.
    let one = RateLimit {
        burst: 1.0,
        per_second: 8.0,
    };
    b.set_bucket("mail", one, Now::At(at_s(1.0))).await.unwrap();
    let s = state(h, "mail", at_s(1.0)).await;
    assert_eq!(s.limit, one);
    assert_tokens(s.tokens_now(), 1.0, "2 earned, capped at 1");
    assert_eq!(take(h, "mail", at_s(1.0)).await, TokenGrant::Granted);
    assert_wait(take(h, "mail", at_s(1.0)).await, 0.125, "1 / 8");
    // 1/16 s at 8/s earned half a token; a larger burst keeps it, the new rate is 2/s.
    let four = RateLimit {
        burst: 4.0,
        per_second: 2.0,
    };
    b.set_bucket("mail", four, Now::At(at_s(1.0625)))
        .await
        .unwrap();
    let s = state(h, "mail", at_s(1.0625)).await;
    assert_eq!(s.limit, four);
    assert_tokens(s.tokens_now(), 0.5, "earned at the old rate");
    assert_wait(
        take(h, "mail", at_s(1.0625)).await,
        0.25,
        "(1 - 0.5) / 2 at the new rate",
    );
    let s = state(h, "mail", at_s(1.3125)).await;
    assert_tokens(s.tokens_now(), 1.0, "a quarter second at 2/s");
}

/// A bucket that does not exist: a take says so and a read finds nothing. `buckets`
/// lists every bucket by name, each read at the given time.
pub async fn unknown_bucket_and_listing<H: PortHarness>(h: &H) {
    let b = h.backend();
    assert_eq!(take(h, "nope", t0()).await, TokenGrant::NoSuchBucket);
    assert_eq!(b.bucket("nope", Now::At(t0())).await.unwrap(), None);
    assert!(b.buckets(Now::At(t0())).await.unwrap().is_empty());
    let slow = RateLimit {
        burst: 2.0,
        per_second: 0.5,
    };
    b.set_bucket("zeta", slow, Now::At(t0())).await.unwrap();
    b.set_bucket("alpha", three_at_two(), Now::At(t0()))
        .await
        .unwrap();
    assert_eq!(take(h, "zeta", t0()).await, TokenGrant::Granted);
    assert_eq!(take(h, "zeta", t0()).await, TokenGrant::Granted);
    let later = at_s(0.5);
    let all = b.buckets(Now::At(later)).await.unwrap();
    let names: Vec<_> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["alpha", "zeta"], "by name");
    assert_eq!(all[0].1.limit, three_at_two());
    assert_tokens(all[0].1.tokens_now(), 3.0, "alpha, full");
    assert_eq!(all[1].1.limit, slow);
    assert_eq!(all[1].1.read_at, later);
    assert_tokens(all[1].1.tokens_now(), 0.25, "zeta: half a second at 0.5/s");
    assert_wait(take(h, "zeta", later).await, 1.5, "(1 - 0.25) / 0.5");
}
