//! Per-domain traffic shaping end to end, against a real SMTP server on loopback that
//! rate-limits one recipient domain the way large providers do: after a few messages it
//! answers `421 4.7.28 ... rate limited` to that domain unless 400 ms passed since the last
//! one it took. A stored rule matches that reply; at its threshold (2 matches) the domain is
//! slowed to the rule's rate (2/s), every refused message is deferred without using an
//! attempt, and the mail to another domain goes at full speed meanwhile. Nothing is
//! dead-lettered. Also: domains on the same mail exchangers (served by a real DNS server,
//! dnsmasq) share one site; two outboxes on one database share a site's rate; a bounce rule
//! turns a matched reply into a dead letter.

mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use common::{eventually, TestDb};
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SmtpConfig},
    DeadLetterFilter, RuleAction, Shaping, ShapingRule, SiteLimit,
};
use smtp_sink::{SinkOptions, SmtpSink, Throttle};

const GMAIL_421: &str = "421 4.7.28 [127.0.0.1] Our system has detected an unusual rate of \
                         unsolicited mail originating from your IP address. To protect our users \
                         from spam, mail sent from your IP address has been rate limited.";

/// The rule's slowed rate: 2 per second, slower than the receiver's 400 ms gap.
const SLOWED_PER_SECOND: f64 = 2.0;

fn email(to: &str) -> Email {
    Email::builder()
        .from("news@example.com")
        .to(to)
        .subject("Hello")
        .text("Hi.")
        .build()
        .unwrap()
}

/// Waits (up to a minute) until every message of `ids` is done or has left the queue.
async fn wait_settled<'a>(db: &TestDb, ids: impl IntoIterator<Item = &'a String> + Clone) {
    let settled = eventually(Duration::from_secs(60), || {
        let ids = ids.clone();
        async move {
            for id in ids {
                // One read: a row can leave the queue between two.
                if db.status(id).await.is_some_and(|s| s != "done") {
                    return false;
                }
            }
            true
        }
    })
    .await;
    assert!(settled, "not every message was settled within a minute");
}

/// A mailer that sends to `sink`.
fn mailer(sink: &SmtpSink) -> Mailer {
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    Mailer::new(MailerConfig::smtp(smtp)).unwrap()
}

fn rule() -> ShapingRule {
    ShapingRule::new(
        "test-rate-limited",
        r"\b421[ -]4\.7\.28\b",
        RuleAction::Slow {
            per_second: SLOWED_PER_SECOND,
            duration: Duration::from_secs(600),
        },
    )
    .unwrap()
    .threshold(2, Duration::from_secs(3600))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_domain_slows_to_the_rules_rate_and_others_keep_full_speed() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions {
        rcpt_domain_throttles: HashMap::from([(
            "slow.test".to_owned(),
            Throttle {
                free: 3,
                gap: Duration::from_millis(400),
                reply: GMAIL_421,
            },
        )]),
        ..SinkOptions::default()
    })
    .await;
    let mailer = mailer(&sink);

    // 12 to the throttled domain and 60 to another, interleaved, in one transaction.
    let mut tx = db.pool.begin().await.unwrap();
    let (mut slow, mut fast) = (Vec::new(), Vec::new());
    for n in 0..72 {
        let (to, ids) = if n % 6 == 0 {
            (format!("user{n}@slow.test"), &mut slow)
        } else {
            (format!("user{n}@fast.test"), &mut fast)
        };
        ids.push(email(&to).enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    tx.commit().await.unwrap();

    let outbox = Outbox::new(db.backend())
        .retention(outbox::Retention::keep_for(Duration::from_secs(3600)))
        // An unrelated configured site: its limits do not touch these domains.
        .shaping(
            Shaping::new()
                .site("other.example", SiteLimit::concurrent(1))
                .rule(rule()),
        )
        .register::<Email, _>(mailer.handler());
    let started = Instant::now();
    outbox
        .run_until(wait_settled(&db, slow.iter().chain(&fast)))
        .await
        .unwrap();

    // Nothing dead-lettered, and no attempt charged for a throttled reply.
    let admin = Outbox::new(db.backend()).admin();
    let dead = admin
        .dead_letters()
        .count(&DeadLetterFilter::default())
        .await
        .unwrap();
    assert_eq!(dead, 0, "no message may be dead-lettered for a rate limit");
    for id in slow.iter().chain(&fast) {
        let (status, attempts, _) = db.row(id).await;
        assert_eq!((status.as_str(), attempts), ("done", 1), "message {id}");
    }

    // The receiver refused the domain a few times, then the rule slowed it and it refused
    // no more: the rule's slowdown is what its deliveries kept to.
    let refused = sink.throttled();
    assert!(
        refused.len() >= 2,
        "the receiver must have rate-limited the domain: {refused:?}"
    );
    let received = sink.received();
    let at_of = |domain: &str| -> Vec<Instant> {
        let mut at: Vec<Instant> = received
            .iter()
            .filter(|r| r.rcpt.iter().any(|a| a.ends_with(domain)))
            .map(|r| r.at)
            .collect();
        at.sort();
        at
    };
    let (slow_at, fast_at) = (at_of("@slow.test"), at_of("@fast.test"));
    assert_eq!((slow_at.len(), fast_at.len()), (12, 60));
    let last_refusal = refused.iter().map(|(_, at)| *at).max().unwrap();
    let after: Vec<Instant> = slow_at
        .iter()
        .copied()
        .filter(|at| *at > last_refusal)
        .collect();
    assert!(
        after.len() >= 5,
        "most of the domain's mail went after the slowdown: {} of 12",
        after.len()
    );
    // At the slowed rate (burst 1): n deliveries span at least (n - 1) / rate, less a
    // little for the scheduler.
    let span = after.last().unwrap().duration_since(after[0]).as_secs_f64();
    let least = (after.len() - 1) as f64 / SLOWED_PER_SECOND;
    assert!(
        span >= least * 0.9,
        "{} deliveries after the slowdown in {span:.2} s: faster than {SLOWED_PER_SECOND}/s",
        after.len()
    );
    // The other domain kept its full speed: all of it was delivered while the slowed
    // domain's backlog was still going out, none of it ever deferred.
    assert!(
        *fast_at.last().unwrap() < *slow_at.last().unwrap(),
        "the other domain's mail waited for the slowed one"
    );
    // Claimed once each: no message to the other domain was ever deferred or put back,
    // while the refused ones to the slowed domain came back (claimed again) to be sent.
    let claims = |id: String| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT claims FROM outbox_messages WHERE id = ?")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    for id in &fast {
        assert_eq!(
            claims(id.clone()).await,
            1,
            "message {id} to the other domain waited"
        );
    }
    let mut again = 0;
    for id in &slow {
        again += usize::from(claims(id.clone()).await > 1);
    }
    assert!(
        again >= 1,
        "the refused messages were deferred and claimed again"
    );

    // The site's row shows the slowdown and the rule that made it.
    let sites = admin.shaping().sites().await.unwrap();
    let site = sites
        .iter()
        .find(|s| s.site == "slow.test")
        .expect("its row");
    assert_eq!(site.slow_per_second, Some(SLOWED_PER_SECOND));
    assert!(
        site.reason
            .as_deref()
            .is_some_and(|r| r.contains("test-rate-limited") && r.contains("4.7.28")),
        "{:?}",
        site.reason
    );
    eprintln!(
        "{} refusals; 12 + 60 delivered in {:.2} s; slowed domain: {} after the slowdown in {span:.2} s",
        refused.len(),
        started.elapsed().as_secs_f64(),
        after.len()
    );
}

/// A real DNS server on loopback (dnsmasq) serving the MX records of the test domains;
/// stopped when dropped.
struct Dns {
    child: std::process::Child,
    addr: std::net::SocketAddr,
}

impl Drop for Dns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Dns {
    /// Serves `mx` (domain, exchanger, preference) and nothing else.
    fn start(mx: &[(&str, &str, u16)]) -> Self {
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cmd = std::process::Command::new("dnsmasq");
        cmd.args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            "--listen-address=127.0.0.1",
            "--user=root",
            // Answers for .test itself: a name it does not know does not exist.
            "--local=/test/",
            &format!("--port={port}"),
        ]);
        for (domain, host, pref) in mx {
            cmd.arg(format!("--mx-host={domain},{host},{pref}"));
        }
        let child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("dnsmasq must be installed (apt-get install dnsmasq-base)");
        Self {
            child,
            addr: ([127, 0, 0, 1], port).into(),
        }
    }
}

/// Domains served by the same exchangers share one site: a limit on the exchangers' site
/// paces the mail to both domains together, while a domain on other exchangers goes at full
/// speed; the lookups come from a real DNS server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domains_on_the_same_exchangers_share_one_site() {
    use outbox::smtp::{DnsMx, EmailShaping, MxLookup, MxRollup};

    let dns = Dns::start(&[
        ("a.test", "mx1.shared.test", 10),
        ("a.test", "mx2.shared.test", 20),
        ("b.test", "mx2.shared.test", 5),
        ("b.test", "mx1.shared.test", 10),
        ("c.test", "mx.other.test", 10),
        ("corp.test", "aspmx.l.google.com", 1),
    ]);
    let lookup = DnsMx::with_server(dns.addr).unwrap();
    // dnsmasq may take a moment to listen.
    let mut a = Err(String::new());
    for _ in 0..50 {
        a = lookup.mx("a.test").await;
        if a.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(a.unwrap(), ["mx1.shared.test", "mx2.shared.test"]);
    assert_eq!(
        lookup.mx("b.test").await.unwrap(),
        ["mx2.shared.test", "mx1.shared.test"]
    );
    assert_eq!(
        lookup.mx("nothing.test").await.unwrap(),
        Vec::<String>::new()
    );
    let lookup = std::sync::Arc::new(lookup);
    let shaping = Shaping::providers().mx_lookup(lookup.clone());
    assert_eq!(
        MxRollup::new(lookup)
            .site_of_mx(&["aspmx.l.google.com".to_owned()])
            .as_deref(),
        Some("google")
    );

    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let mailer = mailer(&sink);
    let mut tx = db.pool.begin().await.unwrap();
    let mut ids = Vec::new();
    for n in 0..10 {
        for domain in ["a.test", "b.test", "c.test"] {
            let to = format!("user{n}@{domain}");
            ids.push(email(&to).enqueue(&mut *tx).await.unwrap().id().to_string());
        }
    }
    tx.commit().await.unwrap();
    // The shared exchangers' site is named for them; 5 per second, burst 1.
    let site = "mx:mx1.shared.test,mx2.shared.test";
    let outbox = Outbox::new(db.backend())
        .shaping(shaping.site(site, SiteLimit::per(5.0, Duration::from_secs(1))))
        .register::<Email, _>(mailer.handler());
    outbox.run_until(wait_settled(&db, &ids)).await.unwrap();
    let received = sink.received();
    let at_of = |domains: &[&str]| -> Vec<Instant> {
        let mut at: Vec<Instant> = received
            .iter()
            .filter(|r| {
                r.rcpt
                    .iter()
                    .any(|a| domains.iter().any(|d| a.ends_with(&format!("@{d}"))))
            })
            .map(|r| r.at)
            .collect();
        at.sort();
        at
    };
    let shared = at_of(&["a.test", "b.test"]);
    let other = at_of(&["c.test"]);
    assert_eq!((shared.len(), other.len()), (20, 10));
    // 20 messages at 5/s with burst 1 span at least 19/5 s (less a little for the
    // scheduler): one bucket for both domains, not one each (which would take half).
    let span = shared
        .last()
        .unwrap()
        .duration_since(shared[0])
        .as_secs_f64();
    assert!(
        span >= 19.0 / 5.0 * 0.9,
        "a.test and b.test together in {span:.2} s"
    );
    assert!(
        other.last().unwrap() < shared.last().unwrap(),
        "the domain on other exchangers waited for the shared site"
    );
    let admin = Outbox::new(db.backend()).admin();
    let sites = admin.shaping().sites().await.unwrap();
    assert!(sites.iter().any(|s| s.site == site), "{sites:?}");
    assert!(!sites
        .iter()
        .any(|s| s.site == "a.test" || s.site == "b.test"));
    eprintln!("a.test + b.test: 20 in {span:.2} s through one site");
}

/// A site's limits hold across processes: two outboxes on one database share the site's
/// bucket, so together they send no faster than its rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_outboxes_share_a_sites_rate() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let mailer = mailer(&sink);
    let mut tx = db.pool.begin().await.unwrap();
    let mut ids = Vec::new();
    for n in 0..20 {
        let to = format!("user{n}@paced.test");
        ids.push(email(&to).enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    tx.commit().await.unwrap();
    let outbox = || {
        Outbox::new(db.backend())
            .shaping(Shaping::new().site("paced.test", SiteLimit::per(5.0, Duration::from_secs(1))))
            .register::<Email, _>(mailer.handler())
    };
    let (a, b) = (outbox(), outbox());
    let done = wait_settled(&db, &ids);
    let (stop_b, stopped_b) = tokio::sync::oneshot::channel::<()>();
    let second = async {
        b.run_until(async {
            let _ = stopped_b.await;
        })
        .await
        .unwrap()
    };
    let first = async {
        a.run_until(done).await.unwrap();
        let _ = stop_b.send(());
    };
    tokio::join!(first, second);
    let mut at: Vec<Instant> = sink.received().iter().map(|r| r.at).collect();
    at.sort();
    assert_eq!(at.len(), 20);
    let span = at.last().unwrap().duration_since(at[0]).as_secs_f64();
    // One bucket for both: 20 at 5/s (burst 1) span at least 19/5 s, less a little for the
    // scheduler; a bucket per process would take half that.
    assert!(span >= 19.0 / 5.0 * 0.9, "20 messages in {span:.2} s");
    eprintln!("two outboxes: 20 in {span:.2} s at 5/s");
}

/// A bounce rule gives a message up at its threshold: a reply that would be retried for
/// ever (a blocklist's 451) becomes a dead letter that names the rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounce_rule_dead_letters_the_message() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions {
        rcpt_domain_replies: HashMap::from([(
            "blocked.test".to_owned(),
            "451 4.7.1 Service unavailable; client host blocked using Spamhaus",
        )]),
        ..SinkOptions::default()
    })
    .await;
    let mailer = mailer(&sink);
    let mut tx = db.pool.begin().await.unwrap();
    let blocked = email("ann@blocked.test").enqueue(&mut *tx).await.unwrap();
    let fine = email("bob@fine.test").enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let rule = ShapingRule::new(
        "blocklisted",
        "(?i)blocked using spamhaus",
        RuleAction::Bounce,
    )
    .unwrap();
    let outbox = Outbox::new(db.backend())
        .shaping(Shaping::new().rule(rule))
        .register::<Email, _>(mailer.handler());
    let admin = outbox.admin();
    outbox
        .run_until(async {
            let gone = eventually(Duration::from_secs(20), || async {
                db.status(blocked.id().as_str()).await.is_none()
                    && db.status(fine.id().as_str()).await.is_none()
            })
            .await;
            assert!(gone, "both messages left the queue");
        })
        .await
        .unwrap();
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::default(), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id.as_str(), blocked.id().as_str());
    assert!(
        dead[0]
            .last_error
            .contains("bounced by shaping rule `blocklisted`"),
        "{}",
        dead[0].last_error
    );
    assert_eq!(dead[0].attempts, 1, "given up at the first match");
    assert_eq!(sink.received().len(), 1, "the other message was sent");
}
