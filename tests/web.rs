//! The web admin in a real headless Chromium (Debian's `chromium` and `chromium-driver`),
//! driven through chromedriver with fantoccini, plus raw HTTP requests for the CSRF and
//! authorization refusals.
//!
//! A missing browser or driver fails these tests with the command that installs them.
//! Set `OUTBOX_WRITE_SCREENSHOTS=1` to write the pages' screenshots to `docs/` (otherwise
//! they go to a temporary directory and are only checked to be PNGs).

mod common;

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use common::TestDb;
use fantoccini::{Client, ClientBuilder, Locator};
use outbox::{
    prelude::*,
    smtp::{Email, RefusedRecipient, SendError},
    web::{axum, WebAdmin},
    LiveFilter, SqliteBackend, TypeCounts,
};
use serde::{Deserialize, Serialize};

const INSTALL: &str = "apt-get update && apt-get install -y chromium chromium-driver";

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "web.note", max_attempts = 3)]
struct Note {
    n: u32,
}

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "web.fail", max_attempts = 1)]
struct Failing {
    order: u32,
}

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "web.counted", max_attempts = 3)]
struct Counted {
    n: u32,
}

/// One browser at a time: the machines running these tests are small.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// chromedriver on a free port, with a Chromium session; both end on drop.
struct Browser {
    client: Client,
    driver: Child,
}

impl Browser {
    async fn start() -> Self {
        let chromium = find(&["chromium", "chromium-browser", "google-chrome"]).unwrap_or_else(|| {
            panic!("no Chromium found on PATH: the web admin's browser tests need it; install it with `{INSTALL}`")
        });
        let driver_bin = find(&["chromedriver"]).unwrap_or_else(|| {
            panic!("no chromedriver found on PATH: the web admin's browser tests need it; install it with `{INSTALL}`")
        });
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; install it with `{INSTALL}`",
                    driver_bin.display()
                )
            });
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"],
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => {
                    panic!(
                        "chromedriver at {url} gave no Chromium session: {e}; is `{INSTALL}` done?"
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        Self { client, driver }
    }

    async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element `{css}`: {e}"))
            .text()
            .await
            .unwrap()
    }

    /// Waits until the text of `css` is `want` (the page refreshing itself).
    async fn wait_text(&self, css: &str, want: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let got = match self.client.find(Locator::Css(css)).await {
                Ok(e) => e.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if got.trim() == want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{css}` shows {got:?}, not {want:?}, after {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Clicks a form's button and waits for the page the form leads to.
    async fn click(&self, css: &str) {
        let mark = "document.documentElement.dataset.before = 'click'";
        self.client.execute(mark, vec![]).await.unwrap();
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element `{css}`: {e}"))
            .click()
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let check = "return document.readyState === 'complete' \
                     && document.documentElement.dataset.before === undefined";
        while self.client.execute(check, vec![]).await.ok() != Some(serde_json::Value::Bool(true)) {
            assert!(
                Instant::now() < deadline,
                "clicking `{css}` led to no new page"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn fill(&self, css: &str, value: &str) {
        let e = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element `{css}`: {e}"));
        e.clear().await.unwrap();
        e.send_keys(value).await.unwrap();
    }

    /// A screenshot of the whole page, to `docs/NAME.png` when asked, else a temp dir.
    async fn screenshot(&self, name: &str) {
        let height: u64 = self
            .client
            .execute("return document.documentElement.scrollHeight", vec![])
            .await
            .unwrap()
            .as_u64()
            .unwrap_or(1000);
        self.client
            .set_window_size(1280, (height + 200).clamp(600, 3000) as u32)
            .await
            .unwrap();
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a screenshot is a PNG");
        let dir = if std::env::var_os("OUTBOX_WRITE_SCREENSHOTS").is_some() {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs")
        } else {
            std::env::temp_dir().join("outbox-web-screenshots")
        };
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
        self.client.set_window_size(1280, 1000).await.unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

/// The admin mounted at `/outbox` on a free loopback port, served with peer addresses.
async fn serve(web: WebAdmin<SqliteBackend>) -> String {
    let app = axum::Router::new().nest(
        "/outbox",
        web.sample_every(Duration::from_millis(300)).into_router(),
    );
    serve_app(app, true).await
}

async fn serve_app(app: axum::Router, connect_info: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        if connect_info {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap();
        } else {
            axum::serve(listener, app).await.unwrap();
        }
    });
    format!("http://{addr}/outbox")
}

async fn enqueue_notes(db: &TestDb, range: std::ops::Range<u32>) {
    let mut tx = db.pool.begin().await.unwrap();
    for n in range {
        let _ = Note { n }.enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

async fn counts(db: &TestDb, type_tag: &str) -> TypeCounts {
    Admin::new(db.backend())
        .status_counts()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.type_tag == type_tag)
        .unwrap_or_default()
}

/// Dead letters of `web.fail`, made by a handler that gives up at once.
async fn make_dead_letters(db: &TestDb, n: u32) {
    let mut tx = db.pool.begin().await.unwrap();
    for order in 0..n {
        let _ = Failing { order }.enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register::<Failing, _>(|m: Failing, _ctx: MessageContext<()>| async move {
            Err::<(), _>(HandlerError::permanent(format!(
                "order {} not found in shop 'north'",
                m.order
            )))
        })
        .drain()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_shows_counts_and_refreshes_after_an_enqueue() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    enqueue_notes(&db, 0..3).await;
    let admin = Admin::new(db.backend());
    admin
        .set_rate_limit("smtp", RateLimit::per_hour(600.0).burst(20))
        .await
        .unwrap();
    let url = serve(WebAdmin::new(admin)).await;
    let b = Browser::start().await;
    b.client.goto(&url).await.unwrap();
    assert_eq!(b.client.title().await.unwrap(), "Overview · outbox admin");
    let pending = r#"#counts tr[data-type="web.note"] td[data-col="pending"]"#;
    assert_eq!(b.text(pending).await, "3");
    assert_eq!(
        b.text(r#"tr[data-bucket="smtp"] td[data-col="capacity"]"#)
            .await,
        "20"
    );
    assert_eq!(
        b.text(r#"tr[data-bucket="smtp"] td[data-col="rate"]"#)
            .await,
        "10/min"
    );

    // Two more, committed elsewhere: the page shows them without a reload.
    enqueue_notes(&db, 3..5).await;
    b.wait_text(pending, "5", Duration::from_secs(10)).await;
    let refreshed = b
        .client
        .execute(
            "return document.getElementById('live').dataset.refreshed || ''",
            vec![],
        )
        .await
        .unwrap();
    assert_ne!(refreshed, "", "the count changed through the live refresh");

    // A circuit breaker opens elsewhere: the overview shows it, open, with its reason.
    use outbox::store::{BreakerStore, Now};
    db.backend()
        .open_breaker(
            "smtp:relay.example:587",
            "connection refused",
            Now::Database,
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let state =
        r#"#breakers tr[data-breaker="smtp:relay.example:587"] td[data-col="state"] span.open"#;
    b.wait_text(state, "open", Duration::from_secs(10)).await;
    let row = b
        .text(r#"#breakers tr[data-breaker="smtp:relay.example:587"]"#)
        .await;
    assert!(
        row.contains("connection refused") && row.contains("in "),
        "{row}"
    );
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_is_requeued_by_clicking() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    make_dead_letters(&db, 2).await;
    assert_eq!(counts(&db, "web.fail").await.dead, 2);
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    b.client
        .goto(&format!("{url}/dead?type=web.fail"))
        .await
        .unwrap();
    assert_eq!(b.text("#dead-total").await, "2 dead letters of web.fail");
    let first = b
        .client
        .find(Locator::Css("#dead tbody tr"))
        .await
        .unwrap()
        .attr("data-id")
        .await
        .unwrap()
        .unwrap();
    b.click(&format!(r#"tr[data-id="{first}"] button[type=submit]"#))
        .await;
    assert_eq!(b.text(".flash").await, format!("Requeued {first}."));
    assert_eq!(b.text("#dead-total").await, "1 dead letter of web.fail");
    let c = counts(&db, "web.fail").await;
    assert_eq!((c.dead, c.pending), (1, 1));

    // The detail page and the grouping by error; the group's requeue takes the rest.
    b.client.goto(&format!("{url}/dead/groups")).await.unwrap();
    assert_eq!(
        b.text("#groups tbody tr strong").await,
        "order # not found in shop \"…\""
    );
    b.click("#groups tbody tr form[action$='/dead/groups/requeue'] button")
        .await;
    assert!(b.text(".flash").await.starts_with("Requeued 1 "));
    let c = counts(&db, "web.fail").await;
    assert_eq!((c.dead, c.pending), (0, 2));
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_a_type_stops_its_worker_until_resumed() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let delivered = Arc::new(AtomicU64::new(0));
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&delivered))
        .register_with::<Counted, _>(
            |_m: Counted, ctx: MessageContext<Arc<AtomicU64>>| async move {
                ctx.state().fetch_add(1, Ordering::SeqCst);
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new(),
        )
        .idle_poll(Duration::from_millis(200), Duration::from_millis(200));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(async move {
        outbox
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let enqueue = |n: u32| {
        let pool = db.pool.clone();
        async move {
            let mut conn = pool.acquire().await.unwrap();
            let _ = Counted { n }.enqueue(&mut *conn).await.unwrap();
        }
    };
    enqueue(0).await;
    assert!(
        common::eventually(Duration::from_secs(10), || async {
            delivered.load(Ordering::SeqCst) == 1
        })
        .await,
        "the worker delivers before the pause"
    );

    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    b.client
        .goto(&format!("{url}/types/web.counted"))
        .await
        .unwrap();
    b.fill("input[name=reason]", "SMTP provider outage").await;
    b.click("form[action$='/pause'] button").await;
    assert_eq!(
        b.text(".flash").await,
        "Paused web.counted: SMTP provider outage"
    );
    assert_eq!(
        b.text(r#"#counts tr[data-type="web.counted"] td[data-col="state"]"#)
            .await,
        "paused SMTP provider outage"
    );
    tokio::time::sleep(Duration::from_secs(2)).await; // every process sees it within ~1 s
    for n in 1..4 {
        enqueue(n).await;
    }
    // A paused type's queued messages count as paused, not pending.
    b.wait_text(
        r#"#counts tr[data-type="web.counted"] td[data-col="paused"]"#,
        "3",
        Duration::from_secs(10),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        delivered.load(Ordering::SeqCst),
        1,
        "nothing delivered while paused"
    );
    let c = counts(&db, "web.counted").await;
    assert_eq!((c.paused, c.pending), (3, 0));

    b.click("form[action$='/resume'] button").await;
    assert_eq!(b.text(".flash").await, "Resumed web.counted.");
    assert!(
        common::eventually(Duration::from_secs(15), || async {
            delivered.load(Ordering::SeqCst) == 4
        })
        .await,
        "the worker delivers after the resume"
    );
    b.wait_text(
        r#"#counts tr[data-type="web.counted"] td[data-col="pending"]"#,
        "0",
        Duration::from_secs(10),
    )
    .await;
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_rate_is_changed_from_the_overview() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    admin
        .set_rate_limit("smtp", RateLimit::per_hour(60.0).burst(2))
        .await
        .unwrap();
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;
    b.client.goto(&url).await.unwrap();
    assert_eq!(
        b.text(r#"tr[data-bucket="smtp"] td[data-col="rate"]"#)
            .await,
        "1/min"
    );
    b.fill(
        "#rates form[action$='/buckets/smtp'] input[name=per_hour]",
        "7200",
    )
    .await;
    b.fill(
        "#rates form[action$='/buckets/smtp'] input[name=burst]",
        "10",
    )
    .await;
    b.click("#rates form[action$='/buckets/smtp'] button").await;
    assert_eq!(
        b.text(".flash").await,
        "Bucket smtp: 7200 per hour, capacity 10."
    );
    assert_eq!(
        b.text(r#"tr[data-bucket="smtp"] td[data-col="rate"]"#)
            .await,
        "2/s"
    );
    assert_eq!(
        b.text(r#"tr[data-bucket="smtp"] td[data-col="capacity"]"#)
            .await,
        "10"
    );
    let state = admin.rate_limit("smtp").await.unwrap().unwrap();
    assert_eq!((state.limit.per_second, state.limit.burst), (2.0, 10.0));
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_dead_letter_shows_the_email_escaped_and_sandboxed() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let html = "<h1>Welcome</h1><script>parent.document.title='pwned'</script>";
    let email = Email::builder()
        .from("Shop <shop@shop.example>")
        .to("Bob <bob@bad.example>")
        .subject("Your order <b>42</b>")
        .text("Thanks for your order!")
        .html(html)
        .header("X-Campaign", "spring")
        .build()
        .unwrap();
    let mut conn = db.pool.acquire().await.unwrap();
    let id = email.enqueue(&mut *conn).await.unwrap().id().clone();
    drop(conn);
    // Greylisted twice, then refused for good: three attempts, each with its reply.
    let sender = Outbox::new(db.backend()).register_with::<Email, _>(
        |_e: Email, ctx: MessageContext<()>| async move {
            if ctx.attempt() < 3 {
                return Err(HandlerError::retry(format!(
                    "451 4.7.1 greylisted (attempt {})",
                    ctx.attempt()
                )));
            }
            Err::<(), _>(
                SendError::RecipientsRefused(vec![RefusedRecipient {
                    address: "bob@bad.example".into(),
                    code: 550,
                    reply: "5.1.1 <bob@bad.example>: user unknown".into(),
                }])
                .into_handler_error(),
            )
        },
        QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(10)])),
    );
    sender
        .run_until(async {
            let dead = async {
                while counts(&db, "outbox.email").await.dead < 1 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(30), dead)
                .await
                .expect("the email was dead-lettered after three attempts within 30 s");
        })
        .await
        .unwrap();
    assert_eq!(counts(&db, "outbox.email").await.dead, 1);

    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{url}/dead/groups")).await.unwrap();
    assert_eq!(
        b.text("#groups tbody tr strong").await,
        "550 5.1.1 @bad.example"
    );
    b.client
        .goto(&format!("{url}/dead/{}", id.as_str()))
        .await
        .unwrap();
    let source = b.client.source().await.unwrap();
    assert!(
        source.contains(&format!("&lt;{}@shop.example&gt;", id.as_str())),
        "the Message-ID is shown"
    );
    assert!(!source.contains("<b>42</b>"), "the subject is escaped");
    assert!(b.text("#email").await.contains("Your order <b>42</b>"));
    let email_text = b.text("#email").await;
    assert!(
        email_text
            .lines()
            .any(|l| l.starts_with("X-Campaign") && l.ends_with("spring")),
        "{email_text}"
    );
    assert_eq!(b.text("#text-body").await, "Thanks for your order!");
    let frame = b
        .client
        .find(Locator::Css("iframe#html-body"))
        .await
        .unwrap();
    assert_eq!(frame.attr("sandbox").await.unwrap().as_deref(), Some(""));
    assert_eq!(frame.attr("srcdoc").await.unwrap().as_deref(), Some(html));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        b.client.title().await.unwrap().starts_with("Dead letter "),
        "the email's script did not run"
    );
    assert!(b
        .text("#last-error")
        .await
        .contains("bob@bad.example: 550 5.1.1"));
    // Each attempt's reply, oldest first.
    let mut replies = Vec::new();
    for row in b
        .client
        .find_all(Locator::Css("#attempts tbody tr"))
        .await
        .unwrap()
    {
        replies.push(row.text().await.unwrap());
    }
    assert_eq!(replies.len(), 3, "{replies:?}");
    assert!(replies[0].starts_with('1') && replies[0].contains("451 4.7.1 greylisted (attempt 1)"));
    assert!(replies[1].starts_with('2') && replies[1].contains("451 4.7.1 greylisted (attempt 2)"));
    assert!(
        replies[2].starts_with('3') && replies[2].contains("550 5.1.1"),
        "{replies:?}"
    );
    b.client.clone().close().await.unwrap();
}

/// The CSRF token in a page's forms.
fn token_in(page: &str) -> String {
    let at = page
        .find(r#"name="csrf" value=""#)
        .expect("a form with a CSRF token")
        + 19;
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

#[tokio::test]
async fn a_post_without_a_valid_csrf_token_is_refused() {
    let db = TestDb::new().await;
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = http.get(&url).send().await.unwrap();
    let cookie = page
        .headers()
        .get("set-cookie")
        .expect("a CSRF cookie")
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("outbox_admin_csrf="));
    let token = token_in(&page.text().await.unwrap());
    let post = |cookie: Option<&str>, body: String| {
        let mut r = http
            .post(format!("{url}/pause"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(c) = cookie {
            r = r.header("cookie", c.to_string());
        }
        r.send()
    };
    let form = |csrf: &str| format!("csrf={csrf}&back=%2F&type_tag=web.note&reason=test");
    for (cookie, body, case) in [
        (
            Some(cookie.as_str()),
            "back=%2F&type_tag=web.note&reason=test".to_string(),
            "no token",
        ),
        (Some(cookie.as_str()), form("AAAA"), "a wrong token"),
        (None, form(&token), "no cookie"),
        (
            Some("outbox_admin_csrf=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            form(&token),
            "another cookie",
        ),
    ] {
        let r = post(cookie, body).await.unwrap();
        assert_eq!(r.status(), 403, "{case}");
        assert!(r.text().await.unwrap().contains("CSRF token"), "{case}");
    }
    assert!(Admin::new(db.backend()).paused().await.unwrap().is_empty());

    // The groups' and messages' actions are guarded the same way.
    enqueue_group_notes(&db, "spring", "spring-", 0..2).await;
    for action in [
        "/groups/spring/pause",
        "/groups/spring/cancel",
        "/messages/cancel",
        "/messages/retry",
    ] {
        let r = http
            .post(format!("{url}{action}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", cookie.clone())
            .body("csrf=AAAA&back=%2F&confirm=yes")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{action}");
    }
    let g = Admin::new(db.backend())
        .groups()
        .show("spring")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((g.pending, g.is_paused()), (2, false), "nothing changed");

    let r = post(Some(&cookie), form(&token)).await.unwrap();
    assert_eq!(r.status(), 303);
    let paused = Admin::new(db.backend()).paused().await.unwrap();
    assert_eq!(paused[0].type_tag, "web.note");
}

#[tokio::test]
async fn requests_without_authorization_are_refused() {
    let db = TestDb::new().await;
    let http = reqwest::Client::new();
    let admin = || Admin::new(db.backend());

    // Basic authentication.
    let url = serve(WebAdmin::new(admin()).basic_auth("ops", "s3cret")).await;
    let r = http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .starts_with("Basic"));
    let r = http
        .get(&url)
        .basic_auth("ops", Some("wrong"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = http
        .post(format!("{url}/pause"))
        .basic_auth("ops", Some("wrong"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        401,
        "a POST without authorization is refused before anything"
    );
    let r = http
        .get(&url)
        .basic_auth("ops", Some("s3cret"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // The application's check.
    let url = serve(
        WebAdmin::new(admin())
            .authorize(|req| req.headers.get("x-role").is_some_and(|v| v == "admin")),
    )
    .await;
    assert_eq!(http.get(&url).send().await.unwrap().status(), 403);
    let r = http
        .get(&url)
        .header("x-role", "admin")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // No authorization configured: loopback only, and only when the peer is known.
    let url = serve(WebAdmin::new(admin())).await;
    assert_eq!(
        http.get(&url).send().await.unwrap().status(),
        200,
        "a loopback peer (debug build)"
    );
    let app = axum::Router::new().nest("/outbox", outbox::web::router(admin()));
    let url = serve_app(app, false).await;
    let r = http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let why = r.text().await.unwrap();
    assert!(
        why.contains(".basic_auth(user, password)")
            && why.contains("into_make_service_with_connect_info"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_of_each_page() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    admin
        .set_rate_limit("smtp", RateLimit::per_hour(600.0).burst(20))
        .await
        .unwrap();
    admin
        .set_rate_limit("webhooks", RateLimit::per_second(5.0).burst(10))
        .await
        .unwrap();
    make_dead_letters(&db, 3).await;
    let mut conn = db.pool.acquire().await.unwrap();
    let mut email_id = None;
    for (to, n) in [("bob@bad.example", 3), ("eve@gone.example", 1)] {
        for i in 0..n {
            let email = Email::builder()
                .from("Shop <shop@shop.example>")
                .to(to)
                .subject(format!("Your order {}", 40 + i))
                .text("Thanks for your order!\n\nWe will ship it tomorrow.")
                .html("<h2 style='font-family:sans-serif'>Thanks for your order!</h2><p>We will ship it <b>tomorrow</b>.</p>")
                .header("X-Campaign", "orders")
                .build()
                .unwrap();
            email_id = Some(email.enqueue(&mut *conn).await.unwrap().id().clone());
        }
    }
    drop(conn);
    let refuse = Outbox::new(db.backend()).register_with::<Email, _>(
        |e: Email, ctx: MessageContext<()>| async move {
            if ctx.attempt() == 1 {
                return Err(HandlerError::retry(
                    "451 4.7.1 greylisted, please try again later",
                ));
            }
            let address = e.to[0].address.clone();
            let (code, reply) = if address.ends_with("@bad.example") {
                (550, format!("5.1.1 <{address}>: user unknown"))
            } else {
                (554, "5.7.1 relay access denied".to_string())
            };
            Err::<(), _>(
                SendError::RecipientsRefused(vec![RefusedRecipient {
                    address,
                    code,
                    reply,
                }])
                .into_handler_error(),
            )
        },
        QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(10)])),
    );
    refuse
        .run_until(async {
            let dead = async {
                while counts(&db, "outbox.email").await.dead < 4 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(30), dead)
                .await
                .expect("the four emails were dead-lettered within 30 s");
        })
        .await
        .unwrap();
    enqueue_notes(&db, 0..12).await;
    admin
        .pause("web.note", "waiting for the new SMTP password")
        .await
        .unwrap();
    // Delivered before the admin starts: the persisted history shows them.
    let mut tx = db.pool.begin().await.unwrap();
    for n in 0..8 {
        let _ = Counted { n }.enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register::<Counted, _>(|_m: Counted, _ctx: MessageContext<()>| async move {
            Ok::<(), HandlerError>(())
        })
        .drain()
        .await
        .unwrap();
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;
    // The first request starts the admin's reading of the history.
    b.client.goto(&url).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    b.client.goto(&url).await.unwrap();
    let chart = b.text(".chart + p").await;
    assert!(chart.starts_with("8 delivered in the last "), "{chart}");
    b.screenshot("web-overview").await;
    b.client
        .goto(&format!("{url}/types/web.note"))
        .await
        .unwrap();
    b.screenshot("web-type").await;
    b.client.goto(&format!("{url}/dead")).await.unwrap();
    b.screenshot("web-dead-letters").await;
    b.client.goto(&format!("{url}/dead/groups")).await.unwrap();
    assert_eq!(
        b.text("#groups tbody tr strong").await,
        "550 5.1.1 @bad.example"
    );
    b.screenshot("web-dead-groups").await;
    let id = email_id.unwrap();
    b.client
        .goto(&format!("{url}/dead/{}", id.as_str()))
        .await
        .unwrap();
    b.screenshot("web-email").await;
    b.client.clone().close().await.unwrap();
}

/// An `outbox.email` dead letter with this HTML body, refused for good at its first try.
async fn make_email_dead_letter(db: &TestDb, html: &str) -> outbox::MessageId {
    let email = Email::builder()
        .from("Shop <shop@shop.example>")
        .to("bob@bad.example")
        .subject("Your order")
        .text("Thanks for your order!")
        .html(html)
        .build()
        .unwrap();
    let mut conn = db.pool.acquire().await.unwrap();
    let id = email.enqueue(&mut *conn).await.unwrap().id().clone();
    drop(conn);
    Outbox::new(db.backend())
        .register::<Email, _>(|_e: Email, _ctx: MessageContext<()>| async move {
            Err::<(), _>(HandlerError::permanent(
                "550 5.1.1 <bob@bad.example>: user unknown",
            ))
        })
        .drain()
        .await
        .unwrap();
    assert_eq!(counts(db, "outbox.email").await.dead, 1);
    id
}

/// A loopback HTTP server answering every request with a 1x1 GIF; counts the requests.
async fn pixel_server() -> (u16, Arc<AtomicU64>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                if conn.read(&mut buf).await.unwrap_or(0) > 0 {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: image/gif\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        GIF.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(GIF).await;
                }
            });
        }
    });
    (port, hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emails_remote_images_load_only_when_asked() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let (port, hits) = pixel_server().await;
    let html = format!(
        "<h1>Welcome</h1><img src=\"http://127.0.0.1:{port}/pixel.gif\" width=\"1\" height=\"1\">"
    );
    let id = make_email_dead_letter(&db, &html).await;
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    b.client
        .goto(&format!("{url}/dead/{}", id.as_str()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "opening the email's page fetched its remote image"
    );
    // The body itself is shown: the policy blocks the image, not the frame.
    b.client.enter_frame(0).await.unwrap();
    assert_eq!(b.text("h1").await, "Welcome");
    b.client.enter_parent_frame().await.unwrap();
    assert!(b
        .text("#remote-images")
        .await
        .contains("Remote images are blocked."));

    // The operator's choice: that one page loads them.
    b.click("#remote-images a").await;
    assert!(
        common::eventually(Duration::from_secs(5), || async {
            hits.load(Ordering::SeqCst) > 0
        })
        .await,
        "the remote image is fetched once asked for"
    );
    assert!(b
        .text("#remote-images")
        .await
        .contains("Remote images are loaded"));
    b.client.clone().close().await.unwrap();
}

/// A fresh CSRF cookie (`name=value`) and the form token of the page at `url`.
async fn session(http: &reqwest::Client, url: &str) -> (String, String) {
    let page = http.get(url).send().await.unwrap();
    let cookie = page.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    (cookie, token_in(&page.text().await.unwrap()))
}

#[tokio::test]
async fn every_page_carries_the_security_headers() {
    let db = TestDb::new().await;
    enqueue_notes(&db, 0..1).await;
    enqueue_group_notes(&db, "spring", "spring-", 0..1).await;
    let id = make_email_dead_letter(&db, "<p>Hi</p>").await;
    let live_id = Admin::new(db.backend())
        .messages()
        .list(&LiveFilter::all(), None, 1)
        .await
        .unwrap()
        .messages[0]
        .id
        .clone();
    let http = reqwest::Client::new();
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    for path in [
        String::new(),
        "/types/web.note".into(),
        "/dead".into(),
        "/dead/groups".into(),
        format!("/dead/{}", id.as_str()),
        "/groups".into(),
        "/groups/spring".into(),
        "/messages".into(),
        "/messages?group=spring&state=pending".into(),
        format!("/messages/{}", live_id.as_str()),
        "/suppressions".into(),
        "/suppressions?address=ann@example.com&reason=manual".into(),
        "/shaping".into(),
        "/webhooks".into(),
        "/relays".into(),
        "/no/such/page".into(),
    ] {
        let r = http.get(format!("{url}{path}")).send().await.unwrap();
        assert!(
            r.status() == 200 || path == "/no/such/page",
            "{path}: {}",
            r.status()
        );
        let h = r.headers();
        let header = |name: &str| {
            h.get(name)
                .unwrap_or_else(|| panic!("{path}: no {name}"))
                .to_str()
                .unwrap()
                .to_string()
        };
        let csp = header("content-security-policy");
        let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
        for want in [
            "default-src 'none'",
            "img-src 'self' data:",
            "frame-ancestors 'none'",
            "style-src 'unsafe-inline'",
            "connect-src 'self'",
        ] {
            assert!(directives.contains(&want), "{path}: {want} in {csp}");
        }
        let script = directives
            .iter()
            .find(|d| d.starts_with("script-src "))
            .unwrap_or_else(|| panic!("{path}: no script-src in {csp}"));
        assert!(
            script.starts_with("script-src 'sha256-") && !script.contains("unsafe"),
            "{path}: only the hashed script: {script}"
        );
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
    }

    // The refusals carry them too.
    let guarded = serve(WebAdmin::new(Admin::new(db.backend())).basic_auth("ops", "pw")).await;
    let r = http.get(&guarded).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    assert!(r.headers().contains_key("content-security-policy"));

    // The CSRF cookie is Secure with the option, or when the request says https.
    let csrf_cookie = |r: &reqwest::Response| {
        r.headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .find(|c| c.starts_with("outbox_admin_csrf="))
            .expect("a CSRF cookie")
    };
    let plain = csrf_cookie(&http.get(&url).send().await.unwrap());
    assert!(!plain.split(';').any(|a| a.trim() == "Secure"), "{plain}");
    let secure_url = serve(WebAdmin::new(Admin::new(db.backend())).secure_cookies(true)).await;
    let secure = csrf_cookie(&http.get(&secure_url).send().await.unwrap());
    assert!(secure.split(';').any(|a| a.trim() == "Secure"), "{secure}");
    // An absolute https request URI (as a TLS-terminating server passes it on).
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/outbox")
        .to_string();
    let head = raw_get(&addr, &format!("https://{addr}/outbox")).await;
    let cookie = head
        .lines()
        .find(|l| {
            l.to_ascii_lowercase()
                .starts_with("set-cookie: outbox_admin_csrf=")
        })
        .unwrap_or_else(|| panic!("no CSRF cookie in {head}"));
    assert!(cookie.contains("; Secure"), "{cookie}");
}

/// The response head of `GET target` sent as is over a plain connection to `addr`.
async fn raw_get(addr: &str, target: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(
        format!("GET {target} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut response = Vec::new();
    conn.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    response
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .replace("\r\n", "\n")
}

#[tokio::test]
async fn a_back_value_off_this_site_is_refused_before_the_action() {
    let db = TestDb::new().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // Served at the root, where a tab in `/\t/evil.example` used to leave this site.
    let app = outbox::web::router(Admin::new(db.backend()));
    let url = serve_app(app, true)
        .await
        .trim_end_matches("/outbox")
        .to_string();
    let (cookie, token) = session(&http, &format!("{url}/")).await;
    let pause = |back: &str| {
        let body: String = form_urlencoded_pairs(&[
            ("csrf", token.as_str()),
            ("back", back),
            ("type_tag", "web.note"),
            ("reason", "test"),
        ]);
        http.post(format!("{url}/pause"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", cookie.clone())
            .body(body)
            .send()
    };
    for back in [
        "/\tevil.example",
        "/\t/evil.example",
        "/\n",
        "/types/x\r\nSet-Cookie: a=b",
        "/\u{7f}",
        "//evil.example",
        "/\\evil.example",
        "https://evil.example/",
        "evil.example",
    ] {
        let r = pause(back).await.unwrap();
        assert_eq!(r.status(), 400, "{back:?}");
        assert!(
            r.text().await.unwrap().contains("not a path on this site"),
            "{back:?}"
        );
        assert!(
            Admin::new(db.backend()).paused().await.unwrap().is_empty(),
            "{back:?} paused the type"
        );
    }
    // A path on this site: paused, and back there.
    let r = pause("/types/web.note").await.unwrap();
    assert_eq!(r.status(), 303);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("/types/web.note?msg="), "{location}");
    assert_eq!(Admin::new(db.backend()).paused().await.unwrap().len(), 1);
    let page = http
        .get(format!("{url}{location}"))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Paused web.note: test"), "the banner shows");

    // Banner texts from a link do not show, as a message or as an error.
    for query in [
        "err=log%20in%20again%20at%20http://evil.example",
        "msg=log%20in%20again%20at%20http://evil.example",
        "msg=log%20in%20again%20at%20http://evil.example&sig=AAAAAAAAAAAAAAAAAAAAAA",
    ] {
        for path in ["/", "/dead", "/types/web.note"] {
            let page = http
                .get(format!("{url}{path}?{query}"))
                .header("cookie", cookie.clone())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(!page.contains("evil.example"), "{path}?{query}");
        }
    }
    // Nor a banner signed for another browser.
    let (other_cookie, _) = session(&http, &format!("{url}/")).await;
    let page = http
        .get(format!("{url}{location}"))
        .header("cookie", other_cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("Paused web.note: test"));
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn form_urlencoded_pairs(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", percent(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes everything but ASCII letters and digits.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Pages without a live part (the dead letters, their groups, one dead letter) are not
/// refreshed: the refresh would fetch the whole page again into it, every 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_without_a_live_part_stay_whole() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    make_dead_letters(&db, 1).await;
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    for path in ["/dead?type=web.fail", "/dead/groups"] {
        b.client.goto(&format!("{url}{path}")).await.unwrap();
        // Two refresh periods.
        tokio::time::sleep(Duration::from_millis(4_500)).await;
        let headings = b.client.find_all(Locator::Css("h1")).await.unwrap();
        let headers = b.client.find_all(Locator::Css("header")).await.unwrap();
        assert_eq!(
            (headings.len(), headers.len()),
            (1, 1),
            "{path}: the page holds itself after the refresh period"
        );
    }
    b.client.clone().close().await.unwrap();
}

/// Enqueues `n` notes into `group`, due now, with the keys `{prefix}{i}`.
async fn enqueue_group_notes(db: &TestDb, group: &str, prefix: &str, range: std::ops::Range<u32>) {
    let mut tx = db.pool.begin().await.unwrap();
    for n in range {
        let _ = Note { n }
            .enqueue_with(
                &mut *tx,
                EnqueueOptions::new()
                    .group(group)
                    .idempotency_key(format!("{prefix}{n}")),
            )
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
}

/// One group's progress, read through the admin API.
async fn group(db: &TestDb, name: &str) -> outbox::GroupProgress {
    Admin::new(db.backend())
        .groups()
        .show(name)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no group {name}"))
}

/// Clicks a bulk form's button without its "sure" tick: the browser refuses to submit
/// (the tick is required), so the page stays and nothing changes.
async fn click_unconfirmed(b: &Browser, form: &str) {
    let url_before = b.client.current_url().await.unwrap();
    let missing = b
        .client
        .execute(
            &format!(
                "return document.querySelector(\"{form} input[name=confirm]\").validity.valueMissing"
            ),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        missing,
        serde_json::Value::Bool(true),
        "{form}: the tick is required"
    );
    b.client
        .find(Locator::Css(&format!("{form} button")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        b.client.current_url().await.unwrap(),
        url_before,
        "{form}: not submitted without the tick"
    );
}

/// Submits a bulk form with its tick's `required` removed and unticked: the server
/// refuses too.
async fn submit_unticked(b: &Browser, form: &str) {
    b.client
        .execute(
            &format!(
                "document.querySelector(\"{form} input[name=confirm]\").removeAttribute('required')"
            ),
            vec![],
        )
        .await
        .unwrap();
    b.click(&format!("{form} button")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_are_paused_resumed_and_cancelled_from_their_page() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    // spring: 6 delivered, 4 waiting; autumn: 2 dead, 3 waiting.
    let mut tx = db.pool.begin().await.unwrap();
    for n in 0..6 {
        let _ = Counted { n }
            .enqueue_with(&mut *tx, EnqueueOptions::new().group("spring"))
            .await
            .unwrap();
    }
    for order in 0..2 {
        let _ = Failing { order }
            .enqueue_with(&mut *tx, EnqueueOptions::new().group("autumn"))
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register::<Counted, _>(|_m: Counted, _ctx: MessageContext<()>| async move {
            Ok::<(), HandlerError>(())
        })
        .register::<Failing, _>(|_m: Failing, _ctx: MessageContext<()>| async move {
            Err::<(), _>(HandlerError::permanent("550 5.1.1 mailbox unknown"))
        })
        .drain()
        .await
        .unwrap();
    enqueue_group_notes(&db, "spring", "spring-", 0..4).await;
    enqueue_group_notes(&db, "autumn", "autumn-", 0..3).await;
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;

    b.client.goto(&format!("{url}/groups")).await.unwrap();
    assert_eq!(b.client.title().await.unwrap(), "Groups · outbox admin");
    let cell =
        |g: &str, col: &str| format!(r#"#group-progress tr[data-group="{g}"] [data-col="{col}"]"#);
    for (g, col, want) in [
        ("spring", "pending", "4"),
        ("spring", "delivered", "6"),
        ("spring", "dead", "0"),
        ("autumn", "pending", "3"),
        ("autumn", "dead", "2"),
        ("autumn", "delivered", "0"),
    ] {
        assert_eq!(b.text(&cell(g, col)).await, want, "{g} {col}");
    }
    let bar = b
        .client
        .find(Locator::Css(r#"tr[data-group="spring"] .bar"#))
        .await
        .unwrap()
        .attr("aria-label")
        .await
        .unwrap();
    assert_eq!(
        bar.as_deref(),
        Some("6 delivered, 0 dead, 0 cancelled, 4 remaining of 10")
    );
    assert_eq!(
        b.text(&cell("spring", "finished")).await,
        "6 of 10 finished (60%)"
    );
    assert_ne!(
        b.text(&cell("spring", "rate")).await,
        "–",
        "six deliveries just now"
    );
    b.screenshot("web-groups").await;

    // Pause with a reason, then resume.
    b.fill(r#"tr[data-group="spring"] input[name=reason]"#, "copy typo")
        .await;
    b.click(r#"tr[data-group="spring"] form[action$='/pause'] button"#)
        .await;
    assert_eq!(b.text(".flash").await, "Paused group spring: copy typo");
    assert_eq!(b.text(&cell("spring", "state")).await, "paused copy typo");
    assert_eq!(b.text(&cell("spring", "paused")).await, "4");
    assert_eq!(b.text(&cell("spring", "pending")).await, "0");
    let g = group(&db, "spring").await;
    assert_eq!(g.pause_reason.as_deref(), Some("copy typo"));
    b.client.goto(&url).await.unwrap();
    assert_eq!(
        b.text(r#"#counts tr[data-type="web.note"] td[data-col="paused"]"#)
            .await,
        "4",
        "the overview shows the held messages"
    );
    b.client.goto(&format!("{url}/groups")).await.unwrap();
    b.click(r#"tr[data-group="spring"] form[action$='/resume'] button"#)
        .await;
    assert_eq!(b.text(".flash").await, "Resumed group spring.");
    assert!(!group(&db, "spring").await.is_paused());
    assert_eq!(b.text(&cell("spring", "pending")).await, "4");

    // The group's page refreshes its figures and links to its messages.
    b.client
        .goto(&format!("{url}/groups/spring"))
        .await
        .unwrap();
    assert_eq!(
        b.text("#group-figures dd[data-col=finished]").await,
        "6 of 10 finished (60%)"
    );
    enqueue_group_notes(&db, "spring", "spring-", 4..5).await;
    b.wait_text(
        "#group-figures dd[data-col=pending]",
        "5",
        Duration::from_secs(10),
    )
    .await;
    let link = b
        .client
        .find(Locator::Css("#group-messages"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link, "/outbox/messages?group=spring");

    // Cancel needs the tick, in the browser and on the server.
    let cancel = r#"form[action$='/groups/spring/cancel']"#;
    click_unconfirmed(&b, cancel).await;
    submit_unticked(&b, cancel).await;
    assert_eq!(b.text(".flash.err").await, "Tick \"sure\" to cancel.");
    assert_eq!(
        group(&db, "spring").await.remaining(),
        5,
        "nothing cancelled"
    );
    b.client
        .find(Locator::Css(&format!("{cancel} input[name=confirm]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.click(&format!("{cancel} button")).await;
    assert_eq!(
        b.text(".flash").await,
        "Cancelled 5 messages of group spring."
    );
    let g = group(&db, "spring").await;
    assert_eq!((g.remaining(), g.cancelled, g.delivered), (0, 5, 6));
    assert_eq!(b.text("#group-figures dd[data-col=cancelled]").await, "5");
    assert_eq!(db.count("web.note").await, 3, "autumn's notes stay");
    b.client.goto(&format!("{url}/groups/nope")).await.unwrap();
    assert!(b
        .client
        .source()
        .await
        .unwrap()
        .contains("There is no group nope"));
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_messages_are_filtered_paged_retried_and_cancelled() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    // 55 due notes in `bulk`; in `newsletter` 3 scheduled notes and one retrying message.
    enqueue_group_notes(&db, "bulk", "bulk-", 0..55).await;
    let mut tx = db.pool.begin().await.unwrap();
    for n in 0..3 {
        let _ = Note { n: 100 + n }
            .enqueue_with(
                &mut *tx,
                EnqueueOptions::new()
                    .group("newsletter")
                    .idempotency_key(format!("later-{n}"))
                    .after(Duration::from_secs(3600)),
            )
            .await
            .unwrap();
    }
    let flaky = Counted { n: 7 }
        .enqueue_with(&mut *tx, EnqueueOptions::new().group("newsletter"))
        .await
        .unwrap()
        .id()
        .clone();
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register::<Counted, _>(|_m: Counted, _ctx: MessageContext<()>| async move {
            Err::<(), _>(HandlerError::retry("503 service busy, try later"))
        })
        .drain()
        .await
        .unwrap();
    let admin = Admin::new(db.backend());
    let due_at = |id: outbox::MessageId| {
        let admin = admin.clone();
        async move {
            admin
                .messages()
                .show(&id)
                .await
                .unwrap()
                .expect("queued")
                .message
                .due_at
        }
    };
    assert!(due_at(flaky.clone()).await > std::time::SystemTime::now());
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;

    // Keyset pages: 50, then 9, each message once, in id order.
    b.client.goto(&format!("{url}/messages")).await.unwrap();
    assert_eq!(b.text("#messages-total").await, "59 queued messages match");
    let row_ids = || async {
        let mut ids = Vec::new();
        for row in b
            .client
            .find_all(Locator::Css("#messages tbody tr"))
            .await
            .unwrap()
        {
            ids.push(row.attr("data-id").await.unwrap().unwrap());
        }
        ids
    };
    let first = row_ids().await;
    assert_eq!(first.len(), 50);
    let next = b
        .client
        .find(Locator::Css("#next-page"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    assert!(
        next.ends_with(&format!("after={}", first[49])) && !next.contains("page="),
        "the cursor, not an offset: {next}"
    );
    b.click("#next-page").await;
    let second = row_ids().await;
    assert_eq!(second.len(), 9);
    assert!(
        b.client.find(Locator::Css("#next-page")).await.is_err(),
        "the last page"
    );
    let mut all: Vec<String> = first.iter().chain(&second).cloned().collect();
    let listed = all.clone();
    all.sort();
    all.dedup();
    assert_eq!(all, listed, "by id, no repeats");
    assert_eq!(all.len(), 59);

    // The filter form: the retrying one by its error.
    b.client.goto(&format!("{url}/messages")).await.unwrap();
    b.fill("#message-filter input[name=error]", "503 service")
        .await;
    b.click("#message-filter button").await;
    assert_eq!(row_ids().await, [flaky.to_string()]);
    assert_eq!(
        b.text(&format!(r#"tr[data-id="{flaky}"] td[data-col="state"]"#))
            .await,
        "retrying"
    );
    b.client
        .goto(&format!("{url}/messages?group=newsletter"))
        .await
        .unwrap();
    assert_eq!(row_ids().await.len(), 4);
    b.screenshot("web-messages").await;

    // One message's page, and retry now from it.
    b.click(&format!(
        r#"tr[data-id="{flaky}"] td a[href$="/messages/{flaky}"]"#
    ))
    .await;
    assert_eq!(b.text("#message dd[data-col=state]").await, "retrying");
    assert_eq!(b.text("#message dd[data-col=attempts]").await, "1 of 3");
    assert_eq!(
        b.text("#message dd[data-col=lease-owner]").await,
        "none (not running)"
    );
    assert!(b.text("#last-error").await.contains("503 service busy"));
    assert_eq!(
        b.client
            .find_all(Locator::Css("#attempts tbody tr"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(b.text("#payload").await.contains("\"n\": 7"));
    b.click("form[action$='/retry'] button").await;
    assert_eq!(b.text(".flash").await, format!("Made {flaky} due now."));
    assert!(due_at(flaky.clone()).await <= std::time::SystemTime::now());
    b.click("form[action$='/retry'] button").await;
    assert!(b.text(".flash.err").await.contains("already due"));

    // Bulk retry now for a filter: needs the tick.
    b.client
        .goto(&format!("{url}/messages?state=scheduled"))
        .await
        .unwrap();
    assert_eq!(b.text("#messages-total").await, "3 queued messages match");
    let retry = "#bulk form[action$='/messages/retry']";
    click_unconfirmed(&b, retry).await;
    submit_unticked(&b, retry).await;
    assert_eq!(b.text(".flash.err").await, "Tick \"sure\" to retry now.");
    let scheduled = LiveFilter::all().state(outbox::LiveState::Scheduled);
    assert_eq!(admin.messages().count(&scheduled).await.unwrap(), 3);
    b.client
        .find(Locator::Css(&format!("{retry} input[name=confirm]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.click(&format!("{retry} button")).await;
    assert_eq!(
        b.text(".flash").await,
        "Made 3 messages in state scheduled due now."
    );
    assert_eq!(admin.messages().count(&scheduled).await.unwrap(), 0);

    // Cancel one row, then the rest of the filter (with the tick).
    b.client
        .goto(&format!("{url}/messages?key_prefix=later-"))
        .await
        .unwrap();
    let rows = row_ids().await;
    assert_eq!(rows.len(), 3);
    b.click(&format!(
        r#"tr[data-id="{}"] form[action$='/cancel'] button"#,
        rows[0]
    ))
    .await;
    assert_eq!(b.text(".flash").await, format!("Cancelled {}.", rows[0]));
    assert_eq!(db.count_id(&rows[0]).await, 0);
    assert_eq!(row_ids().await, rows[1..]);
    let cancel = "#bulk form[action$='/messages/cancel']";
    click_unconfirmed(&b, cancel).await;
    assert_eq!(db.count_id(&rows[1]).await, 1, "nothing cancelled");
    b.client
        .find(Locator::Css(&format!("{cancel} input[name=confirm]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.click(&format!("{cancel} button")).await;
    assert_eq!(
        b.text(".flash").await,
        "Cancelled 2 messages with a key starting \"later-\"."
    );
    let prefix = LiveFilter::all().key_prefix("later-");
    assert_eq!(admin.messages().count(&prefix).await.unwrap(), 0);
    assert_eq!(
        admin.messages().count(&LiveFilter::all()).await.unwrap(),
        56,
        "the bulk group and the retrying one stay"
    );
    assert_eq!(group(&db, "newsletter").await.cancelled, 3);

    // A message that left the queue, and an unknown state.
    b.client
        .goto(&format!("{url}/messages/{}", rows[0]))
        .await
        .unwrap();
    assert!(b
        .client
        .source()
        .await
        .unwrap()
        .contains("it may have been delivered or cancelled"));
    b.client
        .goto(&format!("{url}/messages?state=stuck"))
        .await
        .unwrap();
    assert!(b
        .client
        .source()
        .await
        .unwrap()
        .contains("There is no state \"stuck\""));
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_message_shows_its_lease_and_no_actions() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let mut conn = db.pool.acquire().await.unwrap();
    let id = Counted { n: 1 }
        .enqueue_with(&mut *conn, EnqueueOptions::new().group("slow"))
        .await
        .unwrap()
        .id()
        .clone();
    drop(conn);
    let release = Arc::new(tokio::sync::Notify::new());
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&release))
        .register_with::<Counted, _>(
            |_m: Counted, ctx: MessageContext<Arc<tokio::sync::Notify>>| async move {
                ctx.state().notified().await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new(),
        );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(async move {
        outbox
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let admin = Admin::new(db.backend());
    let running = LiveFilter::all().state(outbox::LiveState::Running);
    assert!(
        common::eventually(Duration::from_secs(10), || async {
            admin.messages().count(&running).await.unwrap() == 1
        })
        .await,
        "the worker claims the message"
    );
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;
    b.client
        .goto(&format!("{url}/messages/{id}"))
        .await
        .unwrap();
    assert_eq!(b.text("#message dd[data-col=state]").await, "running");
    let owner = b.text("#message dd[data-col=lease-owner]").await;
    assert!(!owner.is_empty() && !owner.starts_with("none"), "{owner}");
    assert!(
        b.client
            .find_all(Locator::Css(
                "form[action$='/retry'], form[action$='/cancel']"
            ))
            .await
            .unwrap()
            .is_empty(),
        "no retry or cancel for a running message"
    );
    b.client.goto(&format!("{url}/messages")).await.unwrap();
    assert_eq!(
        b.text(&format!(r#"tr[data-id="{id}"] td[data-col="state"]"#))
            .await,
        "running"
    );
    assert_eq!(
        b.text(&format!(r#"tr[data-id="{id}"] .actions"#)).await,
        "running"
    );
    release.notify_one();
    assert!(
        common::eventually(Duration::from_secs(10), || async {
            admin.messages().count(&LiveFilter::all()).await.unwrap() == 0
        })
        .await,
        "delivered once released"
    );
    let _ = stop.send(());
    worker.await.unwrap().unwrap();
    b.client.clone().close().await.unwrap();
}

/// The suppressions page: an address suppressed from its form is listed, stops the next
/// email to it (shown under "Stopped messages" and counted on the overview), and is
/// removed with its button; a bad address is refused with what to write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suppressions_are_added_shown_and_removed_from_the_page() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{url}/suppressions")).await.unwrap();
    assert_eq!(b.text("#suppression-total").await, "0 entries match.");
    b.fill(
        "form[action$='/suppressions/add'] input[name=address]",
        "not-an-address",
    )
    .await;
    b.click("form[action$='/suppressions/add'] button").await;
    assert!(b.text(".flash").await.contains("user@example.com"));
    b.fill(
        "form[action$='/suppressions/add'] input[name=address]",
        "Ann@Example.com",
    )
    .await;
    b.fill(
        "form[action$='/suppressions/add'] input[name=scope]",
        "list:weekly",
    )
    .await;
    b.click("form[action$='/suppressions/add'] button").await;
    assert_eq!(
        b.text(".flash").await,
        "Suppressed ann@example.com (list:weekly, manual)."
    );
    assert_eq!(
        b.text(r#"tr[data-address="ann@example.com"] td:nth-child(2)"#)
            .await,
        "list:weekly"
    );

    let email = Email::builder()
        .from("news@example.com")
        .to("ann@example.com")
        .subject("Weekly")
        .text("News.")
        .list("weekly")
        .build()
        .unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let id = email.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    b.client.goto(&format!("{url}/suppressions")).await.unwrap();
    assert!(b.text("#stopped").await.contains(id.id().as_str()));
    b.client.goto(&url).await.unwrap();
    assert_eq!(
        b.text(r#"tr[data-type="outbox.email"] td[data-col="suppressed"]"#)
            .await,
        "1"
    );

    b.client.goto(&format!("{url}/suppressions")).await.unwrap();
    b.click(r#"tr[data-address="ann@example.com"] form button"#)
        .await;
    assert_eq!(
        b.text(".flash").await,
        "Removed the suppression of ann@example.com in list:weekly."
    );
    assert_eq!(b.text("#suppression-total").await, "0 entries match.");
    let all = outbox::SuppressionFilter::default();
    assert_eq!(admin.suppressions().count(&all).await.unwrap(), 0);
    b.client.clone().close().await.unwrap();
}

/// The traffic shaping page: a site a rule slowed is listed with its state and reason and
/// resumed with its button; a stored rule is listed and removed with its button.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shaped_sites_and_rules_are_shown_resumed_and_removed() {
    use outbox::{
        store::{Now, ShapingStore},
        RuleAction, ShapingRule,
    };
    use std::time::Duration;

    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{url}/shaping")).await.unwrap();
    assert!(b.text("#no-sites").await.starts_with("No site is shaped"));

    let slow = RuleAction::Slow {
        per_second: 1.0 / 60.0,
        duration: Duration::from_secs(5400),
    };
    let rule = ShapingRule::new("gmail-rate", r"\b4\.7\.28\b", slow.clone())
        .unwrap()
        .threshold(3, Duration::from_secs(3600));
    admin.shaping().put_rule(&rule).await.unwrap();
    db.backend()
        .act_on_site(
            "google",
            &slow,
            "rule `gmail-rate`: 421 4.7.28 rate limited",
            Now::Database,
        )
        .await
        .unwrap();
    b.client.goto(&format!("{url}/shaping")).await.unwrap();
    let row = r#"tr[data-site="google"]"#;
    assert!(b
        .text(&format!("{row} td:nth-child(4)"))
        .await
        .starts_with("slowed to 1/min until"));
    assert!(b
        .text(&format!("{row} td:nth-child(5)"))
        .await
        .contains("4.7.28"));
    assert_eq!(
        b.text(r#"tr[data-rule="gmail-rate"] td:nth-child(4)"#)
            .await,
        "slow to 1/min for 1h 30m"
    );
    b.click(&format!("{row} form button")).await;
    assert_eq!(
        b.text(".flash").await,
        "Site google resumed: its slowdown and suspension are over."
    );
    assert_eq!(b.text(&format!("{row} td:nth-child(4)")).await, "normal");
    let site = &admin.shaping().sites().await.unwrap()[0];
    assert_eq!(site.slowed_until, None);

    b.click(r#"tr[data-rule="gmail-rate"] form button"#).await;
    assert_eq!(b.text(".flash").await, "Removed rule gmail-rate.");
    assert!(admin.shaping().rules().await.unwrap().is_empty());
    b.client.clone().close().await.unwrap();
}

/// The overview says so when messages have been due for minutes and no worker has been
/// seen, with what to run; once a worker heartbeats, it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_says_when_no_worker_runs() {
    let db = TestDb::new().await;
    enqueue_notes(&db, 0..3).await;
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let overview = || async {
        let r = reqwest::get(&url).await.unwrap();
        assert_eq!(r.status(), 200);
        r.text().await.unwrap()
    };
    assert!(!overview().await.contains("unattended"), "due just now");

    // An enqueue clamps a past due time to now: move them back ten minutes.
    sqlx::query("UPDATE outbox_messages SET due_at = due_at - 600000")
        .execute(&db.pool)
        .await
        .unwrap();
    let page = overview().await;
    let warning = page
        .split(r#"id="unattended""#)
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .unwrap_or_else(|| panic!("a warning on the overview: {page}"));
    assert!(
        warning.contains("3 message(s) due, the oldest for 10m")
            && warning.contains("no worker running")
            && warning.contains("outbox work")
            && warning.contains("outbox drain"),
        "{warning}"
    );

    // A worker heartbeats (of another type: the notes stay due).
    let admin = Admin::new(db.backend());
    Outbox::new(db.backend())
        .register::<Counted, _>(|_: Counted, _: MessageContext| async {
            Ok::<(), HandlerError>(())
        })
        .run_until(async {
            let registered = common::eventually(Duration::from_secs(5), || async {
                admin.workers_seen().await.unwrap().last_seen.is_some()
            })
            .await;
            assert!(registered, "the worker registered");
            let page = overview().await;
            assert!(!page.contains("unattended"), "a worker runs: {page}");
            assert_eq!(counts(&db, "web.note").await.pending, 3, "still due");
        })
        .await
        .unwrap();
}

/// A note that names its recipient, so the live messages can be searched by address.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "web.letter", recipient = "letter_recipient")]
struct Letter {
    to: String,
}

fn letter_recipient(letter: &Letter) -> Option<outbox::Recipient> {
    Some(outbox::Recipient::transactional(&letter.to))
}

/// The messages page filters by recipient, whatever the case of the address typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_messages_page_filters_by_recipient() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let mut ids = Vec::new();
    for to in ["Ann@Example.com", "bob@example.com", "ann@example.com"] {
        let e = Letter { to: to.into() }.enqueue(&mut *tx).await.unwrap();
        ids.push(e.id().to_string());
    }
    tx.commit().await.unwrap();
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let page = reqwest::get(format!("{url}/messages?recipient=ANN%40example.COM"))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.contains(&ids[0]) && page.contains(&ids[2]) && !page.contains(&ids[1]),
        "{page}"
    );
    assert!(
        page.contains(r#"name="recipient""#) && page.contains(r#"value="ANN@example.COM""#),
        "the filter field keeps what was typed: {page}"
    );
}

/// The one-click unsubscribe pages carry the admin's security headers (GET, POST and a
/// refusal), and a signed token that names a whole domain (`@example.com`) instead of one
/// address is refused and suppresses nothing.
#[tokio::test]
async fn the_unsubscribe_pages_carry_the_security_headers_and_refuse_domain_tokens() {
    use outbox::smtp::{UnsubscribeKeys, UnsubscribeToken};
    use outbox::web::UnsubscribeEndpoint;
    let db = TestDb::new().await;
    let keys = UnsubscribeKeys::new("2026-11", [7u8; 32]).unwrap();
    let app = axum::Router::new().nest(
        "/u",
        UnsubscribeEndpoint::new(Admin::new(db.backend()), keys.clone()).into_router(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();
    let id = "01JD5Z3Q4V8W6X7Y8Z9A0B1C2D";
    let one = keys.sign(&UnsubscribeToken::new(id, "weekly", "ann@example.com"));
    let domain = keys.sign(&UnsubscribeToken::new(id, "weekly", "@example.com"));
    let check = |r: &reqwest::Response, what: &str| {
        let h = r.headers();
        let csp = h
            .get("content-security-policy")
            .unwrap_or_else(|| panic!("{what}: no Content-Security-Policy"))
            .to_str()
            .unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
        assert!(csp.contains("default-src 'none'"), "{what}: {csp}");
        assert_eq!(h["x-frame-options"], "DENY", "{what}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{what}");
    };
    let r = http
        .get(format!("http://{addr}/u/{one}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    check(&r, "GET");
    let r = http
        .get(format!("http://{addr}/u/not-a-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    check(&r, "a refusal");

    for method in [reqwest::Method::GET, reqwest::Method::POST] {
        let r = http
            .request(method.clone(), format!("http://{addr}/u/{domain}"))
            .body("List-Unsubscribe=One-Click")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{method} of a token naming a domain");
        check(&r, "a domain token");
        let body = r.text().await.unwrap();
        assert!(body.contains("whole domain"), "{body}");
    }
    let suppressions = Admin::new(db.backend()).suppressions();
    let all = outbox::SuppressionFilter::default();
    assert_eq!(suppressions.count(&all).await.unwrap(), 0);

    let r = http
        .post(format!("http://{addr}/u/{one}"))
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    check(&r, "POST");
    assert_eq!(suppressions.count(&all).await.unwrap(), 1);
}

/// A page number past the end of the numbers (`u64::MAX`) shows an empty page instead of
/// overflowing; a NUL character in a filter (a query value) or a form field is refused with
/// 400 naming the field, not passed to the database.
#[tokio::test]
async fn an_overflowing_page_and_a_nul_in_a_filter_get_clear_answers() {
    let db = TestDb::new().await;
    let http = reqwest::Client::new();
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let max = u64::MAX;
    let r = http
        .get(format!("{url}/suppressions?page={max}"))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body = r.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("0 entries match"), "{body}");
    for path in [
        "/suppressions?address=ann%00@example.com",
        "/messages?group=spring%00x",
        "/dead?type=web.note%00",
        "/suppressions?reason=manual&address=%00",
    ] {
        let r = http.get(format!("{url}{path}")).send().await.unwrap();
        let status = r.status();
        let body = r.text().await.unwrap();
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains("NUL"), "{path}: {body}");
        assert!(!body.to_lowercase().contains("database"), "{path}: {body}");
    }
    let (cookie, token) = session(&http, &url).await;
    let r = http
        .post(format!("{url}/suppressions/add"))
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "csrf={token}&address=ann%00%40example.com&scope=*&reason=manual&back=%2Foutbox%2Fsuppressions"
        ))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body = r.text().await.unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("`address`"), "{body}");
}

/// Webhook endpoints `orders` (HMAC, one webhook queued for it) and `ledger` (Ed25519,
/// failing), stored through `admin`.
async fn make_webhook_endpoints(
    db: &TestDb,
    admin: &Admin<SqliteBackend>,
) -> outbox::webhook::WebhookEndpoints<SqliteBackend> {
    use outbox::webhook::{SigningKey, Webhook, WebhookEndpoints};
    let endpoints = WebhookEndpoints::new(admin);
    endpoints
        .create("orders", "https://hooks.example.com/in")
        .await
        .unwrap();
    endpoints
        .create_with(
            "ledger",
            "https://ledger.example:8443/hook",
            SigningKey::generate_ed25519(),
        )
        .await
        .unwrap();
    endpoints.health("ledger", true).await.unwrap();
    let orders = endpoints.get("orders").await.unwrap().unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let _ = Webhook::new(
        &orders,
        "invoice.paid",
        serde_json::json!({ "invoice": 42 }),
    )
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    endpoints
}

/// The state of the one queued message of group `webhook:orders`.
async fn orders_webhook_state(admin: &Admin<SqliteBackend>) -> outbox::LiveState {
    let page = admin
        .messages()
        .list(&LiveFilter::all().in_group("webhook:orders"), None, 10)
        .await
        .unwrap();
    assert_eq!(page.messages.len(), 1, "one webhook queued for orders");
    page.messages[0].state
}

/// The webhook endpoints' page: both endpoints listed with URL, state, failure clock and
/// secrets; `orders` disabled with a reason from its form (its queued webhook parked),
/// enabled again (pending), its secret rotated (the new key shown once, the one it now
/// signs with first) and its old secret retired; the link leads to its queued messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_endpoints_are_disabled_enabled_and_rotated_from_the_page() {
    use outbox::LiveState;

    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let endpoints = make_webhook_endpoints(&db, &admin).await;
    let url = serve(WebAdmin::new(admin.clone())).await;
    let b = Browser::start().await;
    b.client.goto(&format!("{url}/webhooks")).await.unwrap();
    assert_eq!(b.text("header a.on").await, "Webhooks");
    let orders = r#"tr[data-endpoint="orders"]"#;
    let ledger = r#"tr[data-endpoint="ledger"]"#;
    let cell = |row: &str, n: u32| format!("{row} td:nth-child({n})");
    assert_eq!(
        b.text(&cell(orders, 2)).await,
        "https://hooks.example.com/in"
    );
    assert_eq!(b.text(&cell(orders, 3)).await, "enabled");
    assert_eq!(b.text(&cell(orders, 4)).await, "-");
    assert_eq!(b.text(&cell(orders, 5)).await, "1");
    assert_eq!(b.text(&cell(orders, 6)).await, "no");
    assert_eq!(
        b.text(&cell(ledger, 2)).await,
        "https://ledger.example:8443/hook"
    );
    assert!(b.text(&cell(ledger, 4)).await.ends_with(" UTC"));

    // Disable with a reason: the queued webhook is parked.
    b.fill(
        &format!("{orders} input[name=reason]"),
        "receiver migrating",
    )
    .await;
    b.click(&format!(
        "{orders} form[action$='/webhooks/disable'] button"
    ))
    .await;
    assert_eq!(
        b.text(".flash").await,
        "Disabled webhook endpoint orders (receiver migrating): its messages wait in group \
         webhook:orders until it is enabled."
    );
    let state = b.text(&cell(orders, 3)).await;
    assert!(
        state.starts_with("disabled since ") && state.ends_with("UTC: receiver migrating"),
        "{state}"
    );
    assert_eq!(orders_webhook_state(&admin).await, LiveState::Paused);
    assert!(!endpoints.get("orders").await.unwrap().unwrap().is_enabled());

    // Enable: pending again.
    b.click(&format!("{orders} form[action$='/webhooks/enable'] button"))
        .await;
    assert_eq!(
        b.text(".flash").await,
        "Enabled webhook endpoint orders: its parked messages go out, and its failure clock \
         starts over."
    );
    assert_eq!(b.text(&cell(orders, 3)).await, "enabled");
    assert_eq!(orders_webhook_state(&admin).await, LiveState::Pending);

    // Rotate: the new key on the page the form leads to, the endpoint's newest.
    b.click(&format!("{orders} form[action$='/webhooks/rotate'] button"))
        .await;
    assert_eq!(
        b.client.title().await.unwrap(),
        "New secret for orders · outbox admin"
    );
    let key = b.text("#new-key").await;
    assert!(key.starts_with("whsec_"), "{key}");
    assert!(b.text("#rotated").await.contains("signed by its 2 key(s)"));
    let stored = endpoints.get("orders").await.unwrap().unwrap();
    assert_eq!(stored.secrets.len(), 2);
    assert_eq!(
        stored.signing_keys()[0].verifying_key().to_key_string(),
        key
    );
    b.click("a#back").await;
    assert_eq!(b.text(&cell(orders, 5)).await, "2");
    let listed = b.client.source().await.unwrap();
    assert!(!listed.contains(&key), "the key is shown once");

    // Retire the old secret: the new key alone.
    b.click(&format!("{orders} form[action$='/webhooks/retire'] button"))
        .await;
    assert_eq!(
        b.text(".flash").await,
        "Retired 1 old secret(s) of orders: deliveries are signed by its newest key alone."
    );
    assert_eq!(b.text(&cell(orders, 5)).await, "1");
    let stored = endpoints.get("orders").await.unwrap().unwrap();
    assert_eq!(
        stored.signing_keys()[0].verifying_key().to_key_string(),
        key
    );

    // Ordered delivery on, from its toggle.
    b.click(&format!(
        "{orders} form[action$='/webhooks/ordered'] button"
    ))
    .await;
    assert_eq!(
        b.text(".flash").await,
        "orders is ordered: its events enqueued from now on are delivered one at a time, in \
         enqueue order (a failing one holds the next)."
    );
    assert_eq!(b.text(&cell(orders, 6)).await, "yes");
    assert_eq!(
        b.text(&format!(
            "{orders} form[action$='/webhooks/ordered'] button"
        ))
        .await,
        "Stop ordering"
    );
    assert!(endpoints.get("orders").await.unwrap().unwrap().ordered);

    // Replay: nothing of `orders` was delivered (and kept), the banner says so.
    b.fill(&format!("{orders} input[name=since]"), "1h").await;
    b.click(&format!("{orders} form[action$='/webhooks/replay'] button"))
        .await;
    assert_eq!(
        b.text(".flash").await,
        "No event of orders delivered in the last 1h was queued again: only delivered events \
         kept for the retention window (Retention::keep_for) can be replayed."
    );

    // Its queued messages.
    b.click(&format!("{orders} td:nth-child(7) a")).await;
    let here = b.client.current_url().await.unwrap();
    assert!(
        here.as_str().ends_with("/messages?group=webhook%3Aorders"),
        "{here}"
    );
    assert!(b.text("#messages").await.contains("outbox.webhook"));
    b.client.clone().close().await.unwrap();
}

/// The webhook endpoints' forms need the CSRF token like every other (nothing changes
/// without it); stored text is escaped; a rotation answers with the key itself (200, not
/// a redirect carrying it, and not cached); an unknown endpoint is refused with its name.
#[tokio::test]
async fn webhook_forms_check_csrf_escape_and_rotate_without_a_redirect() {
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let endpoints = make_webhook_endpoints(&db, &admin).await;
    endpoints
        .disable("ledger", "<script>alert('gone')</script> 410")
        .await
        .unwrap();
    let url = serve(WebAdmin::new(admin.clone())).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (cookie, token) = session(&http, &format!("{url}/webhooks")).await;
    let post = |action: &str, pairs: &[(&str, &str)]| {
        http.post(format!("{url}{action}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", cookie.clone())
            .body(form_urlencoded_pairs(pairs))
            .send()
    };
    for action in [
        "/webhooks/disable",
        "/webhooks/enable",
        "/webhooks/rotate",
        "/webhooks/retire",
        "/webhooks/replay",
        "/webhooks/ordered",
    ] {
        for csrf in [None, Some("AAAA")] {
            let mut pairs = vec![("back", "/webhooks"), ("name", "orders"), ("reason", "x")];
            if let Some(t) = csrf {
                pairs.push(("csrf", t));
            }
            let r = post(action, &pairs).await.unwrap();
            assert_eq!(r.status(), 403, "{action} with {csrf:?}");
            assert!(r.text().await.unwrap().contains("CSRF token"), "{action}");
        }
    }
    let orders = endpoints.get("orders").await.unwrap().unwrap();
    assert!(orders.is_enabled(), "nothing changed");
    assert_eq!(orders.secrets.len(), 1, "nothing changed");
    assert!(!orders.ordered, "nothing changed");

    let page = http
        .get(format!("{url}/webhooks"))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("<script>alert"), "the reason is escaped");
    assert!(page.contains("&lt;script&gt;alert('gone')&lt;/script&gt; 410"));
    assert!(page.contains(r#"href="/outbox/messages?group=webhook%3Aledger""#));

    let r = post(
        "/webhooks/rotate",
        &[("csrf", &token), ("back", "/webhooks"), ("name", "orders")],
    )
    .await
    .unwrap();
    assert_eq!(
        r.status(),
        200,
        "the key is on this response, not behind a redirect"
    );
    assert!(r.headers().get("location").is_none());
    assert_eq!(r.headers()["cache-control"], "no-store");
    let shown = r.text().await.unwrap();
    let orders = endpoints.get("orders").await.unwrap().unwrap();
    let key = orders.signing_keys()[0].verifying_key().to_key_string();
    assert!(
        shown.contains(&format!(r#"<pre id="new-key">{key}</pre>"#)),
        "{shown}"
    );
    let r = post(
        "/webhooks/rotate",
        &[("csrf", &token), ("back", "/webhooks"), ("name", "ledger")],
    )
    .await
    .unwrap();
    let shown = r.text().await.unwrap();
    let ledger = endpoints.get("ledger").await.unwrap().unwrap();
    let public = ledger.signing_keys()[0].verifying_key().to_key_string();
    assert!(public.starts_with("whpk_"));
    assert!(
        shown.contains(&public) && shown.contains("Ed25519"),
        "{shown}"
    );
    assert!(
        !shown.contains(&ledger.secrets[0].key),
        "the Ed25519 secret key is never shown"
    );

    for action in [
        "/webhooks/disable",
        "/webhooks/enable",
        "/webhooks/rotate",
        "/webhooks/retire",
        "/webhooks/replay",
        "/webhooks/ordered",
    ] {
        let r = post(
            action,
            &[("csrf", &token), ("back", "/webhooks"), ("name", "nope")],
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 303, "{action}");
        let location = r.headers()["location"].to_str().unwrap().to_string();
        assert!(
            location.starts_with("/outbox/webhooks?err=There+is+no+webhook+endpoint+nope."),
            "{action}: {location}"
        );
    }
}

/// A webhook dead letter's page shows the webhook kind's view: endpoint, event type, host
/// and the data pretty-printed (escaped), its attempts headed as the receiver's answers;
/// the dead letters by error group it as `HTTP 422 <host>`. The receiver is a real one on
/// loopback answering 422.
#[tokio::test]
async fn a_webhook_dead_letter_shows_the_webhook() {
    use outbox::webhook::{AddressPolicy, Webhook, WebhookClient, WebhookEndpoints, WebhookSender};

    let receiver = axum::Router::new().route(
        "/in",
        axum::routing::post(|| async {
            (
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "field <b>invoice</b> is unknown",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });

    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let endpoints = WebhookEndpoints::new(&admin);
    endpoints
        .create("orders", &format!("http://127.0.0.1:{port}/in"))
        .await
        .unwrap();
    let endpoint = endpoints.get("orders").await.unwrap().unwrap();
    let data = serde_json::json!({ "invoice": 42, "note": "<script>alert(1)</script>" });
    let mut tx = db.pool.begin().await.unwrap();
    let id = Webhook::new(&endpoint, "invoice.paid", data)
        .enqueue(&mut *tx)
        .await
        .unwrap()
        .id()
        .clone();
    tx.commit().await.unwrap();
    let client = WebhookClient::builder()
        .policy(
            AddressPolicy::new()
                .allow("127.0.0.1/32".parse().unwrap())
                .allow_http(true),
        )
        .build()
        .unwrap();
    let report = Outbox::new(db.backend())
        .register::<Webhook, _>(WebhookSender::new(&admin, client))
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.given_up, 1, "a 422 is final: {report:?}");

    let url = serve(WebAdmin::new(admin.clone())).await;
    let http = reqwest::Client::new();
    let get = |path: String| {
        let http = http.clone();
        async move {
            let r = http.get(path).send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.text().await.unwrap()
        }
    };
    let page = get(format!("{url}/dead/{}", id.as_str())).await;
    assert!(
        page.contains(r#"<section id="webhook"><h2>Webhook</h2>"#),
        "{page}"
    );
    for (name, value) in [
        ("Endpoint", "orders".to_string()),
        ("Event type", "invoice.paid".to_string()),
        ("Host", format!("127.0.0.1:{port}")),
    ] {
        assert!(
            page.contains(&format!(
                r#"<th style="width:140px">{name}</th><td>{value}</td>"#
            )),
            "{name}: {page}"
        );
    }
    assert!(
        page.contains(r#"<td class="muted">webhook:orders</td>"#),
        "{page}"
    );
    assert!(
        page.contains(
            "<pre id=\"webhook-data\">{\n  &quot;invoice&quot;: 42,\n  &quot;note&quot;: \
             &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;\n}</pre>"
        ),
        "{page}"
    );
    assert!(!page.contains("<script>alert"), "the data is escaped");
    assert!(page.contains("<th>Error (the receiver"), "{page}");
    assert!(
        page.contains(&format!(
            "<dt>Error signature</dt><dd>HTTP 422 127.0.0.1:{port}</dd>"
        )),
        "{page}"
    );
    assert!(
        page.contains("field &lt;b&gt;invoice&lt;/b&gt; is unknown"),
        "the receiver's answer, escaped: {page}"
    );
    let groups = get(format!("{url}/dead/groups")).await;
    assert!(
        groups.contains(&format!("<strong>HTTP 422 127.0.0.1:{port}</strong>")),
        "{groups}"
    );
}

/// Replay and ordered delivery from the webhook endpoints' page, over HTTP, with a real
/// delivery to a loopback receiver by an outbox keeping delivered messages for an hour:
/// the page has both forms per endpoint; without the CSRF token they are refused (403)
/// and nothing is queued again or changed; with it, *Replay* with `since` = `1h` queues
/// the delivered event again in place (same id, pending; the banner says how many) and it
/// arrives again with the same `webhook-id`; an empty `since` replays every kept event,
/// none while it is queued (the banner says only kept events can be); a `since` that is
/// not a time is refused; the ordered toggle turns ordered delivery on and off.
#[tokio::test]
async fn webhook_events_are_replayed_and_ordered_from_the_page() {
    use outbox::{
        webhook::{AddressPolicy, Webhook, WebhookClient, WebhookEndpoints, WebhookSender},
        LiveState, Retention,
    };

    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&seen);
    let receiver = axum::Router::new().route(
        "/in",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let sink = Arc::clone(&sink);
            async move {
                let id = headers
                    .get("webhook-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                sink.lock().unwrap().push(id);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });

    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let endpoints = WebhookEndpoints::new(&admin);
    endpoints
        .create("orders", &format!("http://127.0.0.1:{port}/in"))
        .await
        .unwrap();
    let endpoint = endpoints.get("orders").await.unwrap().unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let id = Webhook::new(
        &endpoint,
        "invoice.paid",
        serde_json::json!({ "invoice": 7 }),
    )
    .enqueue(&mut *tx)
    .await
    .unwrap()
    .id()
    .to_string();
    tx.commit().await.unwrap();
    let drain = || async {
        let client = WebhookClient::builder()
            .policy(
                AddressPolicy::new()
                    .allow("127.0.0.1/32".parse().unwrap())
                    .allow_http(true),
            )
            .build()
            .unwrap();
        Outbox::new(db.backend())
            .retention(Retention::keep_for(Duration::from_secs(3600)))
            .register::<Webhook, _>(WebhookSender::new(&admin, client))
            .drain()
            .await
            .unwrap()
    };
    assert_eq!(drain().await.counts.delivered, 1);
    assert_eq!(*seen.lock().unwrap(), [id.as_str()]);
    let queued = || async {
        admin
            .messages()
            .list(&LiveFilter::all().in_group("webhook:orders"), None, 10)
            .await
            .unwrap()
            .messages
            .into_iter()
            .map(|m| (m.id.to_string(), m.state))
            .collect::<Vec<_>>()
    };
    assert!(queued().await.is_empty(), "delivered, kept as done");

    let url = serve(WebAdmin::new(admin.clone())).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (cookie, token) = session(&http, &format!("{url}/webhooks")).await;
    let page = http
        .get(format!("{url}/webhooks"))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for form in [
        r#"<form method="post" action="/outbox/webhooks/replay" class="inline">"#,
        r#"<input type="text" name="since" placeholder="since, e.g. 1h""#,
        r#"<form method="post" action="/outbox/webhooks/ordered" class="inline">"#,
        r#"<input type="hidden" name="ordered" value="on">"#,
        "Deliver in order</button>",
    ] {
        assert!(page.contains(form), "{form}: {page}");
    }
    let post = |action: &str, pairs: &[(&str, &str)]| {
        http.post(format!("{url}{action}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", cookie.clone())
            .body(form_urlencoded_pairs(pairs))
            .send()
    };
    /// The banner a redirect carries.
    fn banner(r: &reqwest::Response) -> (String, String) {
        let location = r.headers()["location"].to_str().unwrap();
        let query = location.split_once('?').expect("a banner in the URL").1;
        let (key, text) = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "msg" || k == "err")
            .expect("msg or err");
        (key.into_owned(), text.into_owned())
    }

    // Without the token (or with a wrong one): refused, nothing queued or changed.
    for csrf in [None, Some("AAAA")] {
        for (action, extra) in [
            ("/webhooks/replay", ("since", "1h")),
            ("/webhooks/ordered", ("ordered", "on")),
        ] {
            let mut pairs = vec![("back", "/webhooks"), ("name", "orders"), extra];
            if let Some(t) = csrf {
                pairs.push(("csrf", t));
            }
            let r = post(action, &pairs).await.unwrap();
            assert_eq!(r.status(), 403, "{action} with {csrf:?}");
            assert!(r.text().await.unwrap().contains("CSRF token"), "{action}");
        }
    }
    assert!(queued().await.is_empty(), "nothing queued again");
    assert!(!endpoints.get("orders").await.unwrap().unwrap().ordered);

    // A `since` that is not a time.
    let r = post(
        "/webhooks/replay",
        &[
            ("csrf", &token),
            ("back", "/webhooks"),
            ("name", "orders"),
            ("since", "soon"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(
        banner(&r),
        (
            "err".into(),
            "soon is not a time: write e.g. 30m, 1h, 2d (or nothing for every kept event).".into()
        )
    );
    assert!(queued().await.is_empty());

    // Delivered within the hour: queued again, in place.
    let r = post(
        "/webhooks/replay",
        &[
            ("csrf", &token),
            ("back", "/webhooks"),
            ("name", "orders"),
            ("since", "1h"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 303);
    let (key, text) = banner(&r);
    assert_eq!(
        (key.as_str(), text.as_str()),
        (
            "msg",
            "Queued again 1 event(s) of orders delivered in the last 1h: they go out with \
             their webhook-id."
        )
    );
    assert_eq!(queued().await, [(id.clone(), LiveState::Pending)]);
    // The page the form leads to shows the banner.
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let shown = http
        .get(format!("{}{location}", url.trim_end_matches("/outbox")))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        shown.contains("Queued again 1 event(s) of orders"),
        "{shown}"
    );

    // Every kept event (empty `since`): none while it is queued.
    let r = post(
        "/webhooks/replay",
        &[
            ("csrf", &token),
            ("back", "/webhooks"),
            ("name", "orders"),
            ("since", ""),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        banner(&r).1,
        "No delivered event of orders was queued again: only delivered events kept for the \
         retention window (Retention::keep_for) can be replayed."
    );
    assert_eq!(drain().await.counts.delivered, 1);
    assert_eq!(
        *seen.lock().unwrap(),
        [id.clone(), id.clone()],
        "sent again with the same webhook-id"
    );
    // Delivered again, kept again: an empty `since` replays it.
    let r = post(
        "/webhooks/replay",
        &[("csrf", &token), ("back", "/webhooks"), ("name", "orders")],
    )
    .await
    .unwrap();
    assert_eq!(
        banner(&r).1,
        "Queued again 1 delivered event(s) of orders: they go out with their webhook-id."
    );
    assert_eq!(queued().await, [(id.clone(), LiveState::Pending)]);

    // The ordered toggle.
    let r = post(
        "/webhooks/ordered",
        &[
            ("csrf", &token),
            ("back", "/webhooks"),
            ("name", "orders"),
            ("ordered", "on"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(banner(&r).0, "msg");
    assert!(endpoints.get("orders").await.unwrap().unwrap().ordered);
    let page = http
        .get(format!("{url}/webhooks"))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"<input type="hidden" name="ordered" value="off">"#)
            && page.contains("Stop ordering</button>"),
        "{page}"
    );
    let r = post(
        "/webhooks/ordered",
        &[
            ("csrf", &token),
            ("back", "/webhooks"),
            ("name", "orders"),
            ("ordered", "off"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        banner(&r).1,
        "orders is not ordered: its events enqueued from now on go out as fast as its host's \
         limits allow."
    );
    assert!(!endpoints.get("orders").await.unwrap().unwrap().ordered);
    let r = post(
        "/webhooks/ordered",
        &[
            ("csrf", &token),
            ("back", "/webhooks"),
            ("name", "orders"),
            ("ordered", "maybe"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        banner(&r),
        ("err".into(), "Ordered is on or off, not maybe.".into())
    );
}

/// A step of a keyed sequence; the first step of key `k-0` fails for good.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "web.step", max_attempts = 1, ordered)]
struct Step {
    key: String,
    n: u32,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_page_shows_the_order_keys_a_dead_letter_holds() {
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    for n in 0..3 {
        for key in ["k-0", "k-1"] {
            let step = Step { key: key.into(), n };
            let _ = step
                .enqueue_with(&mut *tx, outbox::EnqueueOptions::new().order_key(key))
                .await
                .unwrap();
        }
    }
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register::<Step, _>(|s: Step, _ctx: MessageContext<()>| async move {
            if s.key == "k-0" && s.n == 0 {
                return Err(HandlerError::permanent("422 step refused"));
            }
            Ok(())
        })
        .drain()
        .await
        .unwrap();
    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    b.client
        .goto(&format!("{url}/types/web.step"))
        .await
        .unwrap();
    let row = b.text("#held tbody tr").await;
    for text in ["k-0", "dead", "2", "422 step refused"] {
        assert!(row.contains(text), "{text}: {row}");
    }
    let rows = b
        .client
        .find_all(Locator::Css("#held tbody tr"))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "only k-0 is held");
    // Its message links to the dead letter; purging it there frees the key.
    b.click("#held tbody tr a").await;
    b.click("form[action$='/purge'] button").await;
    b.client
        .goto(&format!("{url}/types/web.step"))
        .await
        .unwrap();
    assert!(b
        .client
        .find_all(Locator::Css("#held"))
        .await
        .unwrap()
        .is_empty());
    b.client.clone().close().await.unwrap();
}

/// The relay's page in the browser, after a relay to the machine's NATS (127.0.0.1:4222, a
/// stream of the test's own) published four events and refused a poisoned key's first one
/// for good (a `$` subject): what waits, what went out, the breaker, the held key with its
/// dead letter; the nav leads there and the page links to the type's page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relays_page_shows_what_waits_what_went_out_and_what_holds() {
    use outbox::publish::{
        nats::{async_nats, ensure_stream, NatsRelay, StreamSettings},
        Event,
    };
    let _one = BROWSER.lock().await;
    let db = TestDb::new().await;
    let client = async_nats::connect("nats://127.0.0.1:4222")
        .await
        .expect("the machine's NATS server at 127.0.0.1:4222 (with -js) must run");
    let js = async_nats::jetstream::new(client);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let tag = format!("webrelay{}x{nanos}", std::process::id());
    let stream = format!("OUTBOX_WEB_{tag}");
    ensure_stream(
        &js,
        StreamSettings::new(stream.clone(), [format!("{tag}.>")]),
    )
    .await
    .unwrap();
    let mut events: Vec<Event> = (0..4)
        .map(|n| {
            Event::json(format!("{tag}.k{n}"), &serde_json::json!({ "n": n }))
                .unwrap()
                .key(format!("k{n}"))
        })
        .collect();
    events.push(
        Event::json(format!("${tag}.poison"), &serde_json::json!({ "n": 0 }))
            .unwrap()
            .key("poison"),
    );
    events.push(
        Event::json(format!("{tag}.poison"), &serde_json::json!({ "n": 1 }))
            .unwrap()
            .key("poison"),
    );
    let mut tx = db.pool.begin().await.unwrap();
    outbox::enqueue_many(&mut *tx, &events).await.unwrap();
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register_with::<Event, _>(NatsRelay::new(js.clone()), QueueOptions::new())
        .drain()
        .await
        .unwrap();

    let url = serve(WebAdmin::new(Admin::new(db.backend()))).await;
    let b = Browser::start().await;
    b.client.goto(&url).await.unwrap();
    b.click("header a[href$='/relays']").await;
    assert_eq!(b.text("#waiting").await, "1");
    assert_eq!(b.text("#breaker").await, "closed");
    let failed = b.text("#relay").await;
    assert!(failed.contains("1 dead letter(s) then"), "{failed}");
    // Four published in the window (the page's rate is per minute of ten).
    assert!(failed.contains("4 in the last 10m"), "{failed}");
    let row = b.text("#held tbody tr").await;
    for text in ["poison", "dead", "1"] {
        assert!(row.contains(text), "{text}: {row}");
    }
    b.click("main > p a[href*='/types/']").await;
    assert!(b.text("h1").await.contains("outbox.publish"));
    b.client.clone().close().await.unwrap();
    let _ = js.delete_stream(&stream).await;
}
