//! Traffic shaping: configured sites are written and re-configured without losing what rules
//! did to them; a site's grant spends its tokens and honours its cap on messages in flight
//! (a released or expired slot frees room); a rule's matches are counted within its window;
//! slowing and suspending a site change its grants until they end or it is resumed; rules
//! are stored, replaced and removed; the same verbs run at the database's own clock
//! ([`ShapingStore`]).

use std::time::{Duration, SystemTime};

use super::PortHarness;
use crate::store::{
    Now, RuleAction, ShapingRule, ShapingStore, SiteAnswer, SiteDecision, SiteLimit,
};

/// The time `secs` after the cases' origin.
fn t(secs: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(1_900_000_000.0 + secs)
}

/// The verbs pinned at `secs` after the cases' origin.
fn at(secs: f64) -> Now {
    Now::At(t(secs))
}

const LEASE: Duration = Duration::from_secs(30);

fn granted(d: &Option<SiteAnswer>) -> bool {
    matches!(
        d,
        Some(SiteAnswer {
            decision: SiteDecision::Granted { .. },
            ..
        })
    )
}

fn wait(d: &Option<SiteAnswer>) -> Duration {
    match d {
        Some(SiteAnswer {
            decision: SiteDecision::Wait { wait, .. },
            ..
        }) => *wait,
        other => panic!("expected a wait, got {other:?}"),
    }
}

/// Configured sites are listed with their limits; configuring again replaces the limits
/// and drops those of a site no longer configured; an unknown site has no row.
pub async fn sites_are_configured_and_listed<H: PortHarness>(h: &H) {
    let b = h.backend();
    let big_site = SiteLimit::per(2.0, Duration::from_secs(1))
        .burst(2)
        .max_concurrent(3);
    let sites = vec![
        ("big".to_owned(), big_site),
        ("small.example".to_owned(), SiteLimit::concurrent(1)),
    ];
    b.configure_sites(&sites, at(0.0)).await.unwrap();
    let listed = b.sites(at(0.0)).await.unwrap();
    assert_eq!(
        listed.iter().map(|s| s.site.as_str()).collect::<Vec<_>>(),
        ["big", "small.example"]
    );
    assert_eq!(listed[0].limit, big_site);
    assert!(listed[0].configured);
    assert_eq!(listed[0].tokens, 2.0);
    assert_eq!(listed[1].limit.per_second, None);
    assert_eq!(listed[1].limit.max_concurrent, Some(1));
    assert!(b
        .take_site("nowhere.example", "m#1", at(0.0), LEASE)
        .await
        .unwrap()
        .is_none());

    b.configure_sites(&sites[..1], at(1.0)).await.unwrap();
    let listed = b.sites(at(1.0)).await.unwrap();
    assert_eq!(listed[0].limit, big_site);
    assert!(!listed[1].configured);
    assert_eq!(listed[1].limit, SiteLimit::unlimited());
}

/// A site with a rate grants its burst, then says how long until the next token; a capped
/// site grants as many slots as its cap until one is released or its lease runs out.
pub async fn a_site_spends_tokens_and_caps_messages_in_flight<H: PortHarness>(h: &H) {
    let b = h.backend();
    let sites = vec![
        (
            "rated".to_owned(),
            SiteLimit::per(2.0, Duration::from_secs(1)).burst(2),
        ),
        ("capped".to_owned(), SiteLimit::concurrent(2)),
    ];
    b.configure_sites(&sites, at(0.0)).await.unwrap();
    assert!(granted(
        &b.take_site("rated", "a#1", at(0.0), LEASE).await.unwrap()
    ));
    assert!(granted(
        &b.take_site("rated", "b#1", at(0.0), LEASE).await.unwrap()
    ));
    let third = b.take_site("rated", "c#1", at(0.0), LEASE).await.unwrap();
    assert!((wait(&third).as_secs_f64() - 0.5).abs() < 0.01, "{third:?}");
    assert_eq!(third.map(|a| a.at), Some(t(0.0)), "asked at the time given");
    assert!(granted(
        &b.take_site("rated", "c#1", at(0.5), LEASE).await.unwrap()
    ));

    assert!(granted(
        &b.take_site("capped", "a#1", at(0.0), LEASE).await.unwrap()
    ));
    assert!(granted(
        &b.take_site("capped", "b#1", at(0.0), LEASE).await.unwrap()
    ));
    let full = b.take_site("capped", "c#1", at(0.0), LEASE).await.unwrap();
    assert!(!wait(&full).is_zero());
    assert_eq!(b.sites(at(0.0)).await.unwrap()[0].in_flight, 2);
    b.release_site("capped", "a#1", false, at(0.1))
        .await
        .unwrap();
    assert!(granted(
        &b.take_site("capped", "c#1", at(0.1), LEASE).await.unwrap()
    ));
    // "b#1" and "c#1" hold the two slots; once their leases run out the site has room.
    assert!(!granted(
        &b.take_site("capped", "d#1", at(1.0), LEASE).await.unwrap()
    ));
    assert!(granted(
        &b.take_site("capped", "d#1", at(31.0), LEASE).await.unwrap()
    ));
    // The same holder taking its slot again (its release was lost) renews it.
    assert!(granted(
        &b.take_site("capped", "d#1", at(31.5), LEASE).await.unwrap()
    ));
    assert_eq!(b.sites(at(31.5)).await.unwrap()[0].in_flight, 1);
    b.release_site("capped", "d#1", false, at(32.0))
        .await
        .unwrap();
    assert_eq!(b.sites(at(32.0)).await.unwrap()[0].in_flight, 0);
}

/// A rule's matches at a site are counted within its window; old ones fall out.
pub async fn rule_matches_are_counted_in_their_window<H: PortHarness>(h: &H) {
    let b = h.backend();
    let w = Duration::from_secs(60);
    assert_eq!(b.record_hit("big", "r", at(0.0), w).await.unwrap(), 1);
    assert_eq!(b.record_hit("big", "r", at(10.0), w).await.unwrap(), 2);
    assert_eq!(b.record_hit("other", "r", at(10.0), w).await.unwrap(), 1);
    assert_eq!(b.record_hit("big", "other", at(10.0), w).await.unwrap(), 1);
    assert_eq!(b.record_hit("big", "r", at(65.0), w).await.unwrap(), 2);
}

/// Slowing a site (a rule's site without a row gets one) grants one message per the slowed
/// rate, with no burst, until the slowdown ends; a suspension grants nothing until it ends
/// or the site is resumed.
pub async fn slowing_and_suspending_change_the_grants<H: PortHarness>(h: &H) {
    let b = h.backend();
    let slow = RuleAction::Slow {
        per_second: 0.5,
        duration: Duration::from_secs(60),
    };
    let news = b
        .act_on_site("throttled.example", &slow, "rule `r`: 421 4.7.28", at(0.0))
        .await
        .unwrap();
    assert!(news, "the first slowdown is news");
    let site = b.sites(at(0.0)).await.unwrap().remove(0);
    assert_eq!(site.site, "throttled.example");
    assert!(!site.configured);
    assert_eq!(site.slow_per_second, Some(0.5));
    assert_eq!(site.reason.as_deref(), Some("rule `r`: 421 4.7.28"));
    // It starts without a token: the next one is 2 s away.
    let first = b
        .take_site("throttled.example", "a#1", at(0.0), LEASE)
        .await
        .unwrap();
    assert!((wait(&first).as_secs_f64() - 2.0).abs() < 0.01, "{first:?}");
    assert!(granted(
        &b.take_site("throttled.example", "a#1", at(2.0), LEASE)
            .await
            .unwrap()
    ));
    assert!(!granted(
        &b.take_site("throttled.example", "b#1", at(3.0), LEASE)
            .await
            .unwrap()
    ));
    // Slowed again while slowed: extended (to 62.5 s), not news, and its tokens are kept
    // (reset, the next token would be 2 s after 2.5 s, not at 4 s).
    let again = b
        .act_on_site("throttled.example", &slow, "rule `r`: 421 4.7.28", at(2.5))
        .await
        .unwrap();
    assert!(!again);
    assert!(granted(
        &b.take_site("throttled.example", "b#1", at(4.0), LEASE)
            .await
            .unwrap()
    ));
    // After the slowdown: no limits of its own, so every message goes.
    for n in 0..5 {
        let holder = format!("c{n}#1");
        assert!(granted(
            &b.take_site("throttled.example", &holder, at(63.0), LEASE)
                .await
                .unwrap()
        ));
    }

    let suspend = RuleAction::Suspend {
        duration: Duration::from_secs(100),
    };
    assert!(b
        .act_on_site("throttled.example", &suspend, "rule `s`: [TSS04]", at(70.0))
        .await
        .unwrap());
    let held = b
        .take_site("throttled.example", "d#1", at(80.0), LEASE)
        .await
        .unwrap();
    assert_eq!(wait(&held).as_secs_f64().round(), 90.0);
    assert!(b.resume_site("throttled.example").await.unwrap());
    assert!(granted(
        &b.take_site("throttled.example", "d#1", at(80.0), LEASE)
            .await
            .unwrap()
    ));
    assert!(!b.resume_site("nowhere.example").await.unwrap());
    // A bounce writes nothing.
    b.act_on_site("other.example", &RuleAction::Bounce, "x", at(0.0))
        .await
        .unwrap();
    assert_eq!(b.sites(at(0.0)).await.unwrap().len(), 1);
}

/// Rules are stored, listed by name, replaced by name and removed.
pub async fn rules_are_stored_replaced_and_removed<H: PortHarness>(h: &H) {
    let b = h.backend();
    let slow = ShapingRule::new(
        "b-big",
        r"\b4\.7\.28\b",
        RuleAction::Slow {
            per_second: 1.0 / 60.0,
            duration: Duration::from_secs(5400),
        },
    )
    .unwrap()
    .at_site("big")
    .threshold(3, Duration::from_secs(3600));
    let suspend = ShapingRule::new(
        "a-other",
        r"\[TSS04\]",
        RuleAction::Suspend {
            duration: Duration::from_secs(3600),
        },
    )
    .unwrap();
    let bounce = ShapingRule::new("c-bounce", "5\\.7\\.515", RuleAction::Bounce).unwrap();
    b.put_rules(&[slow.clone(), suspend.clone(), bounce.clone()])
        .await
        .unwrap();
    let stored: Vec<_> = b
        .shaping_rules()
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(stored, [suspend.clone(), slow.clone(), bounce]);
    let replaced = ShapingRule {
        threshold: 1,
        ..slow
    };
    b.put_rules(std::slice::from_ref(&replaced)).await.unwrap();
    assert!(b.remove_rule("c-bounce").await.unwrap());
    assert!(!b.remove_rule("c-bounce").await.unwrap());
    let stored: Vec<_> = b
        .shaping_rules()
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(stored, [suspend, replaced]);
}

/// The workers read only the sites in force; a token given back can be spent again; a
/// renewed slot outlives its first lease; a rule's site whose action ended a day ago is
/// forgotten at the next configuration.
pub async fn in_force_refund_renew_and_prune<H: PortHarness>(h: &H) {
    let b = h.backend();
    let sites = vec![
        ("capped".to_owned(), SiteLimit::concurrent(1)),
        (
            "rated".to_owned(),
            SiteLimit::per(1.0, Duration::from_secs(60)),
        ),
    ];
    b.configure_sites(&sites, at(0.0)).await.unwrap();
    let slow = RuleAction::Slow {
        per_second: 1.0,
        duration: Duration::from_secs(60),
    };
    b.act_on_site("ruled", &slow, "rule `r`", at(0.0))
        .await
        .unwrap();
    let names = |v: Vec<crate::store::SiteState>| v.into_iter().map(|s| s.site).collect::<Vec<_>>();
    let read = b.sites_in_force(at(10.0)).await.unwrap();
    assert_eq!(read.read_at, t(10.0));
    assert_eq!(names(read.sites), ["capped", "rated", "ruled"]);
    assert_eq!(
        names(b.sites_in_force(at(70.0)).await.unwrap().sites),
        ["capped", "rated"]
    );

    // One token a minute: spent, given back (the message was put back), spent again.
    assert!(granted(
        &b.take_site("rated", "a#1", at(0.0), LEASE).await.unwrap()
    ));
    assert!(!granted(
        &b.take_site("rated", "b#1", at(0.0), LEASE).await.unwrap()
    ));
    b.release_site("rated", "a#1", true, at(0.0)).await.unwrap();
    assert!(granted(
        &b.take_site("rated", "b#1", at(0.0), LEASE).await.unwrap()
    ));

    // A slot renewed past its first lease still counts.
    assert!(granted(
        &b.take_site("capped", "x#1", at(0.0), LEASE).await.unwrap()
    ));
    b.renew_site("capped", "x#1", at(70.0), LEASE)
        .await
        .unwrap();
    assert!(!granted(
        &b.take_site("capped", "y#1", at(50.0), LEASE).await.unwrap()
    ));
    assert!(granted(
        &b.take_site("capped", "y#1", at(101.0), LEASE)
            .await
            .unwrap()
    ));

    b.configure_sites(&sites, at(60.0 + 86_400.0 + 1.0))
        .await
        .unwrap();
    assert_eq!(names(b.sites(at(0.0)).await.unwrap()), ["capped", "rated"]);
}

/// The same verbs at the database's own clock ([`Now::Database`], how a running outbox
/// calls them): the sites in force are read with the time of the read (also when none is);
/// a capped site's slot, taken and renewed by that clock, fills the cap until released; a
/// rule's matches are counted and its slowdown is news once and starts without a token.
pub async fn sites_run_at_the_database_clock<H: PortHarness>(h: &H) {
    let b = h.backend();
    let none = b.sites_in_force(Now::Database).await.unwrap();
    assert!(none.sites.is_empty(), "{none:?}");
    // The database's clock, not a time bound by the case: near this process's.
    let near = |at: SystemTime| {
        let skew = SystemTime::now().duration_since(at);
        let skew = skew.unwrap_or_else(|e| e.duration());
        assert!(skew < Duration::from_secs(86_400), "{at:?}");
    };
    near(none.read_at);

    let limit = SiteLimit::per(1.0, Duration::from_secs(3600))
        .burst(2)
        .max_concurrent(1);
    let sites = vec![("capped".to_owned(), limit)];
    b.configure_sites(&sites, Now::Database).await.unwrap();
    let read = b.sites_in_force(Now::Database).await.unwrap();
    assert_eq!(read.sites.len(), 1);
    assert_eq!(read.sites[0].tokens, 2.0);
    let first = b
        .take_site("capped", "a#1", Now::Database, LEASE)
        .await
        .unwrap();
    assert!(granted(&first), "{first:?}");
    near(first.unwrap().at);
    // A token is left, but the one slot is held (its lease runs by the same clock).
    let full = b
        .take_site("capped", "b#1", Now::Database, LEASE)
        .await
        .unwrap();
    assert_eq!(wait(&full), crate::shaping::SLOT_WAIT);
    b.renew_site("capped", "a#1", Now::Database, LEASE)
        .await
        .unwrap();
    assert_eq!(b.sites(Now::Database).await.unwrap()[0].in_flight, 1);
    b.release_site("capped", "a#1", false, Now::Database)
        .await
        .unwrap();
    assert_eq!(b.sites(Now::Database).await.unwrap()[0].in_flight, 0);
    assert!(granted(
        &b.take_site("capped", "b#1", Now::Database, LEASE)
            .await
            .unwrap()
    ));

    let window = Duration::from_secs(60);
    for n in 1..=2 {
        let hits = b.record_hit("ruled", "r", Now::Database, window).await;
        assert_eq!(hits.unwrap(), n);
    }
    let slow = RuleAction::Slow {
        per_second: 0.5,
        duration: Duration::from_secs(60),
    };
    assert!(b
        .act_on_site("ruled", &slow, "rule `r`", Now::Database)
        .await
        .unwrap());
    assert!(!b
        .act_on_site("ruled", &slow, "rule `r`", Now::Database)
        .await
        .unwrap());
    let slowed = b
        .take_site("ruled", "c#1", Now::Database, LEASE)
        .await
        .unwrap();
    let wait = wait(&slowed);
    assert!(
        wait > Duration::from_secs(1) && wait <= Duration::from_secs(2),
        "{wait:?}"
    );
    // Configured again: the rule's site, slowed now, is kept.
    b.configure_sites(&sites, Now::Database).await.unwrap();
    let read = b.sites_in_force(Now::Database).await.unwrap();
    let names: Vec<_> = read.sites.iter().map(|s| s.site.as_str()).collect();
    assert_eq!(names, ["capped", "ruled"]);
}
