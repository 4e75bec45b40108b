//! The suppression list: entries added, replaced, listed by address (with its domain's) and
//! reason, and removed; an enqueue writes a stopped message as `suppressed` (never
//! claimed) by the rule of [`SuppressionProbe`]; the check before sending finds the entry in
//! force; a suppressed settlement keeps the row, counted per type and group until and after
//! it is pruned; a token is used once, and forgotten by kind ([`SuppressionStore`]).

use std::time::Duration;

use super::{at, claim, counts, ids, insert, message, settlement, PortHarness};
use crate::{
    clock::Now,
    enqueue::NewMessage,
    store::{
        GroupStore, NewSuppression, SuppressionFilter, SuppressionProbe, SuppressionReason,
        SuppressionScope, SuppressionStore, TokenUse, MAX_TOKEN_BATCH,
    },
};

/// The type every case uses.
const T: &str = "port_mail";

fn entry(address: &str, scope: &str, reason: SuppressionReason) -> NewSuppression {
    NewSuppression::new(address, scope.parse().expect("a scope"), reason).expect("an address")
}

/// Message `n` of [`T`] to `address`, bulk mail of `list` unless `transactional`, in
/// `group`.
fn mail(
    n: u32,
    address: &str,
    list: Option<&str>,
    transactional: bool,
    group: Option<&str>,
) -> NewMessage {
    NewMessage {
        group: group.map(str::to_owned),
        suppression: SuppressionProbe::new(address, list, transactional, T, group),
        ..message(T, n)
    }
}

/// Adding writes each entry once per address and scope (a second add replaces the
/// reason); the list is newest first; an address filter finds its own entries and its
/// domain's, a reason filter its reason; removing deletes once.
pub async fn entries_are_added_listed_and_removed<H: PortHarness>(h: &H) {
    use SuppressionReason::*;
    let b = h.backend();
    let all = SuppressionFilter::default();
    assert_eq!(b.count_suppressions(&all).await.unwrap(), 0);
    let first = [
        entry("Ann@Example.com", "*", HardBounce).source("ses:1"),
        entry("ann@example.com", "list:weekly", Unsubscribe),
        entry("@blocked.test", "*", Manual),
    ];
    assert_eq!(
        b.add_suppressions(&first, Now::At(at(1_000)))
            .await
            .unwrap(),
        3
    );
    let later = [
        entry("ann@example.com", "*", Complaint),
        entry("bob@example.com", "*", Complaint),
    ];
    assert_eq!(
        b.add_suppressions(&later, Now::At(at(2_000)))
            .await
            .unwrap(),
        2
    );
    assert_eq!(b.count_suppressions(&all).await.unwrap(), 4);
    // The same address written two ways is one entry, counted once.
    let twice = [
        entry("Bob@Example.com", "*", Complaint),
        entry("bob@example.com", "*", Complaint),
    ];
    assert_eq!(
        b.add_suppressions(&twice, Now::At(at(2_000)))
            .await
            .unwrap(),
        1
    );
    assert_eq!(b.count_suppressions(&all).await.unwrap(), 4);
    let listed = b.list_suppressions(&all, 10, 0).await.unwrap();
    let keys: Vec<(String, String, SuppressionReason)> = listed
        .iter()
        .map(|s| (s.address.clone(), s.scope.key(), s.reason))
        .collect();
    assert_eq!(
        keys,
        [
            ("ann@example.com".into(), "*".into(), Complaint),
            ("bob@example.com".into(), "*".into(), Complaint),
            ("@blocked.test".into(), "*".into(), Manual),
            ("ann@example.com".into(), "list:weekly".into(), Unsubscribe),
        ],
        "newest first, the replaced entry with its new reason and time"
    );
    assert_eq!(listed[0].created_at, at(2_000));
    assert_eq!(
        listed[0].source, None,
        "replaced with the new entry's source"
    );
    let of = |address: &str| SuppressionFilter {
        address: Some(address.into()),
        reason: None,
    };
    assert_eq!(
        b.count_suppressions(&of("ANN@example.com")).await.unwrap(),
        2
    );
    assert_eq!(
        b.count_suppressions(&of("zed@blocked.test")).await.unwrap(),
        1
    );
    let unsubscribed = SuppressionFilter {
        address: None,
        reason: Some(Unsubscribe),
    };
    assert_eq!(b.count_suppressions(&unsubscribed).await.unwrap(), 1);
    assert_eq!(b.list_suppressions(&all, 2, 3).await.unwrap().len(), 1);
    // An unsubscribe never weakens a hard bounce or a complaint (transactional mail would
    // go again); a scope may name a group with a space.
    let weaker = [
        entry("ann@example.com", "*", Unsubscribe),
        entry("cy@example.com", "group:Black Friday", Unsubscribe),
    ];
    b.add_suppressions(&weaker, Now::At(at(3_000)))
        .await
        .unwrap();
    let ann = b
        .list_suppressions(&of("ann@example.com"), 10, 0)
        .await
        .unwrap();
    let all_mail = ann
        .iter()
        .find(|s| s.scope == SuppressionScope::All)
        .unwrap();
    assert_eq!(
        (all_mail.reason, all_mail.created_at),
        (Complaint, at(2_000))
    );
    let cy = b
        .list_suppressions(&of("cy@example.com"), 10, 0)
        .await
        .unwrap();
    assert_eq!(cy[0].scope, SuppressionScope::Group("Black Friday".into()));
    let black_friday = SuppressionScope::Group("Black Friday".into());
    assert!(b
        .remove_suppression("cy@example.com", &black_friday)
        .await
        .unwrap());
    let weekly = SuppressionScope::List("weekly".into());
    assert!(b
        .remove_suppression("ann@example.com", &weekly)
        .await
        .unwrap());
    assert!(!b
        .remove_suppression("ann@example.com", &weekly)
        .await
        .unwrap());
    assert_eq!(b.count_suppressions(&all).await.unwrap(), 3);
}

/// An enqueue writes the messages a suppression stops as `suppressed`, naming it, and
/// the others as queued: an address's entry and its domain's stop all mail; a list's
/// unsubscribe stops that list only, and never transactional mail; a message without a
/// recipient is never checked. A single message with a recipient is checked too. Only the
/// queued ones are claimed; the counts and the stopped list show the others.
pub async fn an_enqueue_keeps_stopped_messages_as_suppressed<H: PortHarness>(h: &H) {
    use SuppressionReason::*;
    let b = h.backend();
    let entries = [
        entry("ann@example.com", "*", HardBounce),
        entry("@blocked.test", "*", Complaint),
        entry("dave@example.com", "list:weekly", Unsubscribe),
        entry("erin@example.com", "*", Unsubscribe),
    ];
    b.add_suppressions(&entries, Now::At(at(0))).await.unwrap();
    let rows = [
        mail(1, "Ann@Example.com", None, true, None),
        mail(2, "bob@example.com", Some("weekly"), false, None),
        mail(3, "zed@blocked.test", None, true, None),
        mail(4, "dave@example.com", Some("weekly"), false, None),
        mail(5, "dave@example.com", Some("daily"), false, None),
        mail(6, "erin@example.com", None, true, None),
        mail(7, "erin@example.com", Some("weekly"), false, None),
        message(T, 8),
    ];
    let written = insert(h, &rows).await;
    let single = insert(h, &[mail(9, "ann@example.com", None, false, None)]).await;
    let c = counts(h, T, at(0)).await;
    assert_eq!((c.pending, c.suppressed), (4, 5), "{c:?}");
    let claimed = claim(h, T, "w", 100, at(0)).await;
    let queued = [1, 4, 5, 7].map(|i| written[i].clone());
    assert_eq!(
        ids(&claimed),
        queued,
        "bob, dave of daily, erin's transactional mail, no recipient"
    );
    let stopped = b.suppressed_messages(10).await.unwrap();
    assert_eq!(stopped.len(), 5);
    let reason_of = |id: &crate::enqueue::MessageId| {
        let m = stopped
            .iter()
            .find(|m| m.id == id.as_str())
            .expect("listed");
        assert_eq!(m.type_tag, T);
        m.reason.clone()
    };
    assert_eq!(
        reason_of(&written[0]),
        "suppressed: hard_bounce of ann@example.com (*)"
    );
    assert_eq!(
        reason_of(&written[2]),
        "suppressed: complaint of @blocked.test (*)"
    );
    assert_eq!(
        reason_of(&written[3]),
        "suppressed: unsubscribe of dave@example.com (list:weekly)"
    );
    assert_eq!(
        reason_of(&written[6]),
        "suppressed: unsubscribe of erin@example.com (*)"
    );
    assert_eq!(
        reason_of(&single[0]),
        "suppressed: hard_bounce of ann@example.com (*)"
    );
}

/// An entry that expired stops nothing at enqueue (read at the enqueue's clock), while one
/// that has not is in force.
pub async fn an_expired_entry_stops_nothing_at_enqueue<H: PortHarness>(h: &H) {
    let b = h.backend();
    let long_ago = std::time::UNIX_EPOCH + Duration::from_secs(1);
    let entries = [
        entry("gus@example.com", "*", SuppressionReason::HardBounce).expires_at(long_ago),
        entry("hal@example.com", "*", SuppressionReason::HardBounce).expires_at(at(0)),
    ];
    b.add_suppressions(&entries, Now::At(at(0))).await.unwrap();
    insert(
        h,
        &[
            mail(1, "gus@example.com", None, true, None),
            mail(2, "hal@example.com", None, true, None),
        ],
    )
    .await;
    let c = counts(h, T, at(0)).await;
    assert_eq!((c.pending, c.suppressed), (1, 1), "{c:?}");
}

/// The check before sending names, per probe, the entry in force that stops it (none once
/// it expired), in the probes' order.
pub async fn the_check_finds_the_entry_in_force<H: PortHarness>(h: &H) {
    use SuppressionReason::*;
    let b = h.backend();
    let entries = [
        entry("ann@example.com", "group:nov", Manual).expires_at(at(5_000)),
        entry("@example.org", "type:port_mail", HardBounce),
    ];
    b.add_suppressions(&entries, Now::At(at(0))).await.unwrap();
    let probe = |address: &str, group: Option<&str>| {
        SuppressionProbe::new(address, None, false, T, group).expect("an address")
    };
    let probes = [
        probe("ann@example.com", Some("nov")),
        probe("ann@example.com", Some("dec")),
        probe("bob@example.org", None),
        probe("bob@example.com", None),
    ];
    let found = b
        .check_suppressions(&probes, Now::At(at(1_000)))
        .await
        .unwrap();
    let scopes: Vec<Option<String>> = found
        .iter()
        .map(|s| s.as_ref().map(|s| s.scope.key()))
        .collect();
    assert_eq!(
        scopes,
        [
            Some("group:nov".into()),
            None,
            Some("type:port_mail".into()),
            None
        ]
    );
    let found = b
        .check_suppressions(&probes, Now::At(at(5_000)))
        .await
        .unwrap();
    assert!(found[0].is_none(), "expired");
    assert!(found[2].is_some());
}

/// A suppressed settlement keeps the row as `suppressed` with its reason and gives the
/// attempt back; it counts per type and in its group; pruning deletes it after the window
/// and its group keeps counting it.
pub async fn a_suppressed_settlement_is_kept_counted_and_pruned<H: PortHarness>(h: &H) {
    let b = h.backend();
    insert(
        h,
        &[mail(
            1,
            "ann@example.com",
            Some("weekly"),
            false,
            Some("nov"),
        )],
    )
    .await;
    let claimed = claim(h, T, "w", 10, at(0)).await;
    assert_eq!(claimed.len(), 1);
    let reason = "suppressed: complaint of ann@example.com (*)".to_owned();
    let settled = crate::store::QueueStore::settle(
        b,
        "w",
        &[settlement(
            &claimed[0],
            crate::store::Settle::Suppressed {
                reason: reason.clone(),
            },
        )],
        Now::At(at(1_000)),
    )
    .await
    .unwrap();
    assert_eq!(settled.applied, 1);
    let c = counts(h, T, at(1_000)).await;
    assert_eq!((c.running, c.suppressed, c.pending), (0, 1, 0), "{c:?}");
    let stopped = b.suppressed_messages(10).await.unwrap();
    assert_eq!(stopped.len(), 1);
    assert_eq!(
        (stopped[0].reason.as_str(), stopped[0].at),
        (reason.as_str(), at(1_000))
    );
    assert_eq!(stopped[0].group.as_deref(), Some("nov"));
    let group = b
        .group("nov", Now::At(at(1_000)))
        .await
        .unwrap()
        .expect("known");
    assert_eq!((group.suppressed, group.total()), (1, 1));
    let window = Duration::from_secs(60);
    assert_eq!(
        b.prune_suppressed(window, Now::At(at(60_000)), 100)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        b.prune_suppressed(window, Now::At(at(61_001)), 100)
            .await
            .unwrap(),
        1
    );
    assert_eq!(counts(h, T, at(61_001)).await.suppressed, 0);
    let group = b
        .group("nov", Now::At(at(61_001)))
        .await
        .unwrap()
        .expect("known");
    assert_eq!(
        group.suppressed, 1,
        "still counted in its group after the prune"
    );
}

/// A token is used once: its first use adds its entries, a second writes nothing.
pub async fn a_token_is_used_once<H: PortHarness>(h: &H) {
    let b = h.backend();
    let entries = [entry(
        "ann@example.com",
        "list:weekly",
        SuppressionReason::Unsubscribe,
    )];
    assert!(b
        .use_token("unsubscribe", "digest-1", &entries, Now::At(at(0)))
        .await
        .unwrap());
    b.remove_suppression("ann@example.com", &SuppressionScope::List("weekly".into()))
        .await
        .unwrap();
    assert!(!b
        .use_token("unsubscribe", "digest-1", &entries, Now::At(at(1)))
        .await
        .unwrap());
    let all = SuppressionFilter::default();
    assert_eq!(
        b.count_suppressions(&all).await.unwrap(),
        0,
        "a replay adds nothing"
    );
    assert!(b
        .use_token("mailgun", "digest-1", &[], Now::At(at(2)))
        .await
        .unwrap());
    let second = Duration::from_secs(1);
    let forget = |ms| b.forget_tokens("mailgun", second, Now::At(at(ms)));
    assert_eq!(
        forget(1_001).await.unwrap(),
        0,
        "not older than the window yet"
    );
    assert_eq!(forget(1_003).await.unwrap(), 1);
    let again = b.use_token("mailgun", "digest-1", &[], Now::At(at(1_004)));
    assert!(again.await.unwrap(), "forgotten: usable again");
    let other = b.use_token("unsubscribe", "digest-1", &[], Now::At(at(1_005)));
    assert!(!other.await.unwrap(), "other kinds are kept");
}

/// A batch of token uses is written in one call: the tokens not used before (and the first
/// of a token named twice) add their entries, those used before add nothing, and the
/// answer says which was which, in order; a batch over [`MAX_TOKEN_BATCH`] is refused.
pub async fn a_batch_of_tokens_is_used_once_each<H: PortHarness>(h: &H) {
    let b = h.backend();
    let used = |n: u32| TokenUse {
        token: format!("event-{n}"),
        entries: vec![entry(
            &format!("r{n}@example.com"),
            "*",
            SuppressionReason::HardBounce,
        )],
    };
    assert!(b
        .use_token("event", "event-1", &[], Now::At(at(0)))
        .await
        .unwrap());
    let mut batch: Vec<TokenUse> = (0..MAX_TOKEN_BATCH as u32 - 1).map(used).collect();
    batch.push(used(2));
    let new = b.use_tokens("event", &batch, Now::At(at(1))).await.unwrap();
    assert_eq!(new.len(), MAX_TOKEN_BATCH);
    assert!(new[0] && !new[1] && new[2], "{:?}", &new[..3]);
    assert!(
        !new[MAX_TOKEN_BATCH - 1],
        "named twice: new the first time only"
    );
    assert_eq!(new.iter().filter(|n| **n).count(), MAX_TOKEN_BATCH - 2);
    let all = SuppressionFilter::default();
    assert_eq!(
        b.count_suppressions(&all).await.unwrap(),
        MAX_TOKEN_BATCH as u64 - 2,
        "r1 was used before the batch"
    );
    let one = SuppressionFilter {
        address: Some("r1@example.com".into()),
        ..SuppressionFilter::default()
    };
    assert_eq!(b.count_suppressions(&one).await.unwrap(), 0);
    let again = b
        .use_tokens("event", &batch[..10], Now::At(at(2)))
        .await
        .unwrap();
    assert_eq!(again, vec![false; 10], "a repeated batch writes nothing");
    let other = b
        .use_tokens("unsubscribe", &batch[..2], Now::At(at(3)))
        .await
        .unwrap();
    assert_eq!(other, vec![true, true], "tokens are per kind");
    let too_many: Vec<TokenUse> = (0..MAX_TOKEN_BATCH as u32 + 1).map(used).collect();
    let refused = b.use_tokens("event", &too_many, Now::At(at(4))).await;
    assert!(refused.is_err(), "more than MAX_TOKEN_BATCH");
}

/// Addresses are normalized as receivers read them before they are stored and before they
/// are looked up: an entry written with full-width letters, a soft hyphen, a zero-width
/// space or `。` is stored once, as plain ASCII, and stops mail to every spelling of the
/// address (at enqueue and in the check before sending); a filter or a removal in any
/// spelling finds it; a domain IDNA refuses is refused with the reason.
pub async fn unicode_spellings_of_an_address_name_one_entry<H: PortHarness>(h: &H) {
    use SuppressionReason::*;
    let b = h.backend();
    let entries = [
        entry("ann@ｅｘａｍｐｌｅ.com", "*", HardBounce),
        entry("@blocked\u{3002}test", "*", Complaint),
        entry("cid@Bücher.de", "*", Manual),
    ];
    assert_eq!(
        b.add_suppressions(&entries, Now::At(at(0))).await.unwrap(),
        3
    );
    let all = SuppressionFilter::default();
    let mut stored: Vec<String> = b
        .list_suppressions(&all, 10, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.address)
        .collect();
    stored.sort();
    assert_eq!(
        stored,
        ["@blocked.test", "ann@example.com", "cid@xn--bcher-kva.de"],
        "stored normalized"
    );
    let again = [entry("ANN@exam\u{ad}ple.com\u{200b}", "*", HardBounce)];
    b.add_suppressions(&again, Now::At(at(1))).await.unwrap();
    assert_eq!(
        b.count_suppressions(&all).await.unwrap(),
        3,
        "the same entry"
    );

    let spellings = [
        "ann@ｅｘａｍｐｌｅ.com",
        "ann@exam\u{ad}ple.com",
        "ann@example.com\u{200b}",
        "ann@example\u{3002}com",
        "zed@ＢＬＯＣＫＥＤ.test",
        "cid@xn--bcher-kva.de",
        "cid@BÜCHER.de",
    ];
    let rows: Vec<NewMessage> = spellings
        .iter()
        .zip(1..)
        .map(|(a, n)| mail(n, a, None, false, None))
        .collect();
    let mut rows = rows;
    rows.push(mail(99, "bob@example.com", None, false, None));
    let written = insert(h, &rows).await;
    let c = counts(h, T, at(2)).await;
    assert_eq!((c.pending, c.suppressed), (1, 7), "{c:?}");
    let claimed = claim(h, T, "w", 100, at(2)).await;
    assert_eq!(
        ids(&claimed),
        [written[7].clone()],
        "only bob's mail is queued"
    );

    let probes: Vec<SuppressionProbe> = spellings
        .iter()
        .map(|a| SuppressionProbe::new(a, None, false, T, None).expect("an address"))
        .collect();
    let found = b.check_suppressions(&probes, Now::At(at(3))).await.unwrap();
    assert!(found.iter().all(Option::is_some), "{found:?}");

    let filter = SuppressionFilter {
        address: Some("Ann@ｅｘａｍｐｌｅ.com".into()),
        ..SuppressionFilter::default()
    };
    assert_eq!(b.count_suppressions(&filter).await.unwrap(), 1);
    assert!(b
        .remove_suppression("ann@example\u{3002}com\u{200b}", &SuppressionScope::All)
        .await
        .unwrap());
    assert_eq!(b.count_suppressions(&all).await.unwrap(), 2);

    let refused = [entry("ann@example.com", "*", HardBounce)];
    let mut refused = refused;
    refused[0].address = "ann@exa%mple.com".into();
    let e = b
        .add_suppressions(&refused, Now::At(at(4)))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("domain"), "{e}");
}
