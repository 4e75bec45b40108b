//! Property tests (proptest) of what a hostile or careless caller can put into an email, a
//! mailer URL or a queued payload: no line break or header reaches the wire from any field
//! (checked on the bytes the loopback SMTP server received, tests/common/smtp_sink.rs), no
//! SMTP command is smuggled in through a body, and no input makes the URL parser or the
//! payload decoder panic. The runs use a fixed seed, so CI is reproducible; a failure prints
//! the smallest input that breaks the property.

#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::sync::atomic::{AtomicUsize, Ordering};

use outbox::{
    smtp::{Attachment, Email, Header, Mailbox, Mailer, MailerConfig, SmtpConfig},
    OutboxMessage,
};
use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestRng, TestRunner},
};
use smtp_sink::{SinkOptions, SmtpSink};

/// A runner with a fixed seed and `cases` cases.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Line breaks and their look-alikes, as an attacker would put them between two headers.
fn separator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "\r\n", "\n", "\r", "\r\n\r\n", "\r\n ", "\r\n\t", "\0", "\u{85}", "\u{2028}", "\t", " ",
    ])
}

/// Any text, printable ASCII, or an attempt to inject an `X-Injected` header.
fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,24}",
        (any::<String>(), separator(), "[ -~]{0,12}")
            .prop_map(|(a, sep, b)| format!("{a}{sep}X-Injected: yes{sep}{b}")),
    ]
}

/// Each field of the email: `None` keeps a valid value, `Some` puts hostile text in it.
#[derive(Debug, Clone)]
struct Fields {
    from_name: Option<String>,
    from_address: Option<String>,
    to_name: Option<String>,
    to_address: Option<String>,
    cc_name: Option<String>,
    reply_to_name: Option<String>,
    subject: Option<String>,
    header_name: Option<String>,
    header_value: Option<String>,
    file_name: Option<String>,
    content_type: Option<String>,
    /// Tags, metadata and the idempotency key are never sent.
    unsent: String,
}

fn fields() -> impl Strategy<Value = Fields> {
    let f = || prop::option::weighted(0.2, hostile());
    let address = || {
        prop::option::weighted(
            0.2,
            prop_oneof![
                hostile().prop_map(|s| format!("{s}@example.com")),
                (separator(), "[a-z]{1,8}")
                    .prop_map(|(sep, s)| format!("a@example.com>{sep}RCPT TO:<{s}@evil.example")),
                hostile(),
            ],
        )
    };
    (
        (f(), address(), f(), address(), f(), f()),
        (f(), f(), f(), f(), f(), hostile()),
    )
        .prop_map(
            |(
                (from_name, from_address, to_name, to_address, cc_name, reply_to_name),
                (subject, header_name, header_value, file_name, content_type, unsent),
            )| Fields {
                from_name,
                from_address,
                to_name,
                to_address,
                cc_name,
                reply_to_name,
                subject,
                header_name,
                header_value,
                file_name,
                content_type,
                unsent,
            },
        )
}

/// Marks what must never reach the wire: tags, metadata and the idempotency key.
const UNSENT: &str = "never-sent-";

impl Fields {
    fn or<'a>(value: &'a Option<String>, valid: &'a str) -> &'a str {
        value.as_deref().unwrap_or(valid)
    }

    fn header_name(&self) -> &str {
        Self::or(&self.header_name, "X-Campaign")
    }

    /// The email through the builder (which checks it) ...
    fn build(&self) -> Result<Email, outbox::InvalidMessage> {
        let unsent = format!("{UNSENT}{}", self.unsent);
        Email::builder()
            .from(self.from())
            .to(self.to())
            .cc(self.cc())
            .bcc("audit@example.com")
            .reply_to(self.reply_to())
            .subject(Self::or(&self.subject, "Your order"))
            .text("Hello")
            .header(self.header_name(), Self::or(&self.header_value, "spring"))
            .attach(
                Self::or(&self.file_name, "invoice.pdf"),
                Self::or(&self.content_type, "application/pdf"),
                b"%PDF".to_vec(),
            )
            .tag(unsent.clone())
            .meta(unsent.clone(), &unsent)
            .idempotency_key(unsent)
            .build()
    }

    /// ... and the same email put together field by field, as a row written by other code
    /// would be, so that only the mailer's own checks stand between it and the wire.
    fn unchecked(&self) -> Email {
        let mut email = Email::builder()
            .from("a@example.com")
            .to("b@example.com")
            .text("Hello")
            .build()
            .unwrap();
        let unsent = format!("{UNSENT}{}", self.unsent);
        email.from = self.from();
        email.to = vec![self.to()];
        email.cc = vec![self.cc()];
        email.bcc = vec![Mailbox::address("audit@example.com")];
        email.reply_to = Some(self.reply_to());
        email.subject = Self::or(&self.subject, "Your order").to_string();
        email.headers = vec![Header {
            name: self.header_name().to_string(),
            value: Self::or(&self.header_value, "spring").to_string(),
        }];
        email.attachments = vec![Attachment::new(
            Self::or(&self.file_name, "invoice.pdf"),
            Self::or(&self.content_type, "application/pdf"),
            b"%PDF".to_vec(),
        )];
        email.tags = vec![unsent.clone()];
        email.metadata.insert(unsent.clone(), unsent.clone());
        email.idempotency_key = Some(unsent);
        email
    }

    fn from(&self) -> Mailbox {
        Mailbox::named(
            Self::or(&self.from_name, "Shop"),
            Self::or(&self.from_address, "shop@example.com"),
        )
    }

    fn to(&self) -> Mailbox {
        Mailbox::named(
            Self::or(&self.to_name, "Ada Lovelace"),
            Self::or(&self.to_address, "ada@example.com"),
        )
    }

    fn cc(&self) -> Mailbox {
        Mailbox::named(Self::or(&self.cc_name, "Bob"), "bob@example.com")
    }

    fn reply_to(&self) -> Mailbox {
        Mailbox::named(Self::or(&self.reply_to_name, "Help"), "help@example.com")
    }
}

/// Header names the mailer writes at the top of a message.
const WRITTEN_BY_THE_MAILER: &[&str] = &[
    "from",
    "to",
    "cc",
    "reply-to",
    "subject",
    "message-id",
    "date",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
];

/// What must hold for any message on the wire: CRLF line ends only, no injected header
/// line anywhere (top level or in a MIME part), only the expected top-level headers.
fn check_wire(data: &[u8], extra_header: Option<&str>) -> Result<(), String> {
    for (i, b) in data.iter().enumerate() {
        let bare_cr = *b == b'\r' && data.get(i + 1) != Some(&b'\n');
        let bare_lf = *b == b'\n' && (i == 0 || data[i - 1] != b'\r');
        if bare_cr || bare_lf {
            return Err(format!("a bare CR or LF at byte {i}"));
        }
    }
    let text = String::from_utf8_lossy(data);
    if let Some(line) = text
        .split("\r\n")
        .find(|l| l.to_ascii_lowercase().starts_with("x-injected"))
    {
        return Err(format!("an injected header line: {line:?}"));
    }
    if text.contains(UNSENT) {
        return Err("a tag, metadata or the idempotency key was sent".into());
    }
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    for line in head.split("\r\n") {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
        let extra = extra_header.is_some_and(|h| h.eq_ignore_ascii_case(&name));
        if !WRITTEN_BY_THE_MAILER.contains(&name.as_str()) && !extra {
            return Err(format!("an unexpected top-level header line: {line:?}"));
        }
    }
    Ok(())
}

/// The command verbs of one transaction, without the connection's own (EHLO, RSET, ...).
fn transaction(commands: &[String]) -> Vec<&str> {
    commands
        .iter()
        .map(String::as_str)
        .filter(|c| matches!(*c, "MAIL" | "RCPT" | "DATA"))
        .collect()
}

#[test]
fn no_field_can_put_a_line_break_or_a_header_on_the_wire() {
    let rt = runtime();
    let sink = rt.block_on(SmtpSink::start(SinkOptions::default()));
    let config = SmtpConfig::new("127.0.0.1").port(sink.port).pool_size(1);
    let mailer = {
        let _guard = rt.enter();
        Mailer::new(MailerConfig::smtp(config)).unwrap()
    };
    let (sent, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let result = runner(192).run(&fields(), |f| {
        let email = f.unchecked();
        let valid = email.validate();
        prop_assert_eq!(
            f.build().is_ok(),
            valid.is_ok(),
            "the builder and validate disagree: {:?}",
            valid
        );
        let (commands_before, received_before) = (sink.commands().len(), sink.received().len());
        let delivered = rt.block_on(mailer.deliver_now(&email));
        let commands = sink.commands()[commands_before..].to_vec();
        let received = sink.received()[received_before..].to_vec();
        match (valid, delivered) {
            (Err(_), Err(e)) => {
                prop_assert!(e.is_permanent(), "an invalid email is not retried: {e}");
                prop_assert!(
                    transaction(&commands).is_empty(),
                    "an invalid email reached the server: {:?}",
                    commands
                );
                refused.fetch_add(1, Ordering::Relaxed);
            }
            (Err(why), Ok(_)) => {
                prop_assert!(false, "sent although invalid ({why})");
            }
            (Ok(()), Err(e)) => {
                prop_assert!(false, "a valid email could not be sent: {e}");
            }
            (Ok(()), Ok(delivery)) => {
                prop_assert_eq!(
                    transaction(&commands),
                    ["MAIL", "RCPT", "RCPT", "RCPT", "DATA"],
                    "one sender and three recipients, nothing smuggled"
                );
                prop_assert_eq!(received.len(), 1);
                let message = &received[0];
                prop_assert_eq!(message.message_id.as_ref(), Some(&delivery.message_id));
                check_wire(&message.data, Some(f.header_name()))
                    .map_err(|why| TestCaseError::fail(format!("{why}; fields {f:?}")))?;
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (sent, refused) = (sent.into_inner(), refused.into_inner());
    println!("{sent} emails sent and checked on the wire, {refused} refused before sending");
    assert!(
        sent >= 30 && refused >= 30,
        "too few cases of each kind to mean anything: {sent} sent, {refused} refused"
    );
}

/// A body line that tries to end the message data early and start a transaction of its own.
fn smuggling_body() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        (any::<String>(), separator(), separator()).prop_map(|(a, s1, s2)| format!(
            "{a}{s1}.{s2}MAIL FROM:<evil@evil.example>{s1}RCPT TO:<victim@example.com>{s1}DATA{s1}\
             Subject: smuggled{s1}{s1}hi{s1}.{s1}"
        )),
        "(\\.|\r|\n|\r\n|[ -~]){0,64}",
    ]
}

#[test]
fn no_body_can_end_the_data_early_or_smuggle_a_command() {
    let rt = runtime();
    let sink = rt.block_on(SmtpSink::start(SinkOptions::default()));
    let config = SmtpConfig::new("127.0.0.1").port(sink.port).pool_size(1);
    let mailer = {
        let _guard = rt.enter();
        Mailer::new(MailerConfig::smtp(config)).unwrap()
    };
    let bodies = (smuggling_body(), prop::option::of(smuggling_body()));
    let result = runner(128).run(&bodies, |(text, html)| {
        let mut email = Email::builder()
            .from("shop@example.com")
            .to("ada@example.com")
            .subject("Bodies")
            .text(text);
        if let Some(html) = html {
            email = email.html(html);
        }
        let email = email.build().expect("a body is never refused");
        let (commands_before, received_before) = (sink.commands().len(), sink.received().len());
        rt.block_on(mailer.deliver_now(&email))
            .map_err(|e| TestCaseError::fail(format!("not sent: {e}")))?;
        let commands = sink.commands()[commands_before..].to_vec();
        let received = sink.received()[received_before..].to_vec();
        prop_assert_eq!(transaction(&commands), ["MAIL", "RCPT", "DATA"]);
        prop_assert_eq!(received.len(), 1, "exactly one message arrived");
        check_wire(&received[0].data, None).map_err(TestCaseError::fail)?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Mailer URLs: anything at all, and URLs close to valid ones with odd parts.
fn mailer_url() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec!["smtp", "smtps", "SMTP", "file", "log", "http", ""]);
    let key = prop::sample::select(vec![
        "tls",
        "pool",
        "helo",
        "connect_timeout",
        "timeout",
        "idle_timeout",
        "message_id_domain",
        "test_redirect",
        "test_redirect_domain",
        "test_redirect_only",
        "unknown",
    ]);
    let value = prop_oneof![
        any::<String>(),
        "[0-9]{1,25}(ms|s|m|h|d)?",
        any::<u64>().prop_map(|n| n.to_string()),
        "(opportunistic|required|none)",
        "[ -~]{0,16}",
    ];
    let query = prop::collection::vec((key, value), 0..4).prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", url_escape(v)))
            .collect::<Vec<_>>()
            .join("&")
    });
    prop_oneof![
        any::<String>(),
        // A valid server, so that every parameter is read.
        query
            .clone()
            .prop_map(|query| format!("smtp://mail.example.com:587?{query}")),
        (
            scheme,
            prop::option::of("[ -~]{0,12}"),
            prop_oneof![any::<String>(), "[a-z0-9.\\[\\]:-]{0,20}"],
            prop::option::of("[0-9]{0,7}"),
            query,
        )
            .prop_map(|(scheme, user, host, port, query)| {
                let user = user.map(|u| format!("{u}@")).unwrap_or_default();
                let port = port.map(|p| format!(":{p}")).unwrap_or_default();
                format!("{scheme}://{user}{host}{port}?{query}")
            }),
    ]
}

/// Percent-encodes what would end a query value.
fn url_escape(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            '&' | '=' | '#' | '%' | '+' => format!("%{:02X}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

#[test]
fn the_mailer_url_parser_never_panics_and_never_shows_the_password() {
    let rt = runtime();
    let _guard = rt.enter();
    let result = runner(512).run(&mailer_url(), |url| {
        // Any string: an error or a mailer, never a panic.
        let _ = Mailer::from_url(&url);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // With a password in it, the password shows in no output of the parse.
    let with_password = (mailer_url(), "[A-Za-z0-9]{12}").prop_map(|(url, password)| {
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
        (format!("smtp://user:{password}@{rest}"), password)
    });
    let result = runner(256).run(&with_password, |(url, password)| {
        let shown = match MailerConfig::from_url(&url) {
            Ok(config) => format!("{config} {config:?}"),
            Err(e) => format!("{e} {e:?}"),
        };
        prop_assert!(!shown.contains(&password), "the password shows: {shown}");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// JSON close to a queued email: each field usually of the right shape with hostile text
/// in it, sometimes any JSON at all; fields left out or unknown ones added.
fn email_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        hostile().prop_map(Value::String),
    ];
    let any_json = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let text = || prop_oneof![12 => hostile().prop_map(Value::String), 1 => any_json.clone()];
    let mailbox = || {
        prop_oneof![
            6 => Just(json!({"address": "ada@example.com"})),
            6 => (hostile(), prop::option::of(hostile()))
                .prop_map(|(a, n)| json!({"address": a, "name": n})),
            1 => any_json.clone(),
        ]
    };
    let list = |item: BoxedStrategy<Value>| {
        prop_oneof![
            12 => prop::collection::vec(item, 0..3).prop_map(Value::Array),
            1 => any_json.clone(),
        ]
    };
    let header = (hostile(), hostile())
        .prop_map(|(name, value)| json!({"name": name, "value": value}))
        .boxed();
    let attachment = (
        hostile(),
        prop_oneof![Just("text/plain".to_string()), hostile()],
        prop_oneof![3 => Just("aGVsbG8=".to_string()), 1 => hostile()],
    )
        .prop_map(|(f, c, b)| json!({"file_name": f, "content_type": c, "bytes": b}))
        .boxed();
    let fields = (
        (mailbox(), list(mailbox().boxed()), list(mailbox().boxed())),
        (list(mailbox().boxed()), mailbox(), text(), text(), text()),
        (
            list(header),
            list(attachment),
            list(hostile().prop_map(Value::String).boxed()),
        ),
        (
            prop::collection::btree_map(hostile(), hostile(), 0..3),
            text(),
            any_json.clone(),
        ),
        prop::collection::vec(any::<bool>(), 14),
    );
    fields.prop_map(
        |(
            (from, to, cc),
            (bcc, reply_to, subject, text, html),
            (headers, attachments, tags),
            (metadata, key, unknown),
            keep,
        )| {
            let all = [
                ("from", from),
                ("to", to),
                ("cc", cc),
                ("bcc", bcc),
                ("reply_to", reply_to),
                ("subject", subject),
                ("text", text),
                ("html", html),
                ("headers", headers),
                ("attachments", attachments),
                ("tags", tags),
                ("metadata", json!(metadata)),
                ("idempotency_key", key),
                ("unknown", unknown),
            ];
            Value::Object(
                all.into_iter()
                    .zip(keep)
                    .filter(|((name, _), keep)| *keep || *name == "from")
                    .map(|((name, value), _)| (name.to_string(), value))
                    .collect(),
            )
        },
    )
}

#[test]
fn decoding_any_payload_as_an_email_never_panics() {
    let rt = runtime();
    let mailer = {
        let _guard = rt.enter();
        Mailer::new(MailerConfig::log()).unwrap()
    };
    let decoded = AtomicUsize::new(0);
    let payload = prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..256),
        3 => email_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
    ];
    let result = runner(512).run(&payload, |bytes| {
        // As the worker decodes a queued row; then checks and renders what decoded.
        if let Ok(email) = serde_json::from_slice::<Email>(&bytes) {
            decoded.fetch_add(1, Ordering::Relaxed);
            let valid = email.validate();
            let rendered = rt.block_on(mailer.deliver_now(&email));
            prop_assert_eq!(
                valid.is_ok(),
                rendered.is_ok(),
                "validate and rendering disagree: {:?} / {:?}",
                valid,
                rendered
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let decoded = decoded.into_inner();
    println!("{decoded} of 512 payloads decoded as an email");
    assert!(
        decoded >= 50,
        "only {decoded} payloads decoded: the renderer was hardly exercised"
    );
}
