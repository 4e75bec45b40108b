//! `outbox::cli::Command` inside an application's own clap binary, run in-process on the
//! application's outbox.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use clap::{Parser, Subcommand};
use outbox::{cli::Outcome, prelude::*};

use super::{cases::Mail, harness::Harness};

/// An application's command line with the outbox's commands under `outbox`.
#[derive(Parser)]
struct App {
    #[command(subcommand)]
    command: AppCommand,
}

#[derive(Subcommand)]
enum AppCommand {
    /// The application's own command.
    Serve,
    /// The outbox's commands.
    Outbox(outbox::cli::Command),
}

/// `myapp ARGS…` parsed; panics unless it is an outbox command.
fn parse(args: &[&str]) -> outbox::cli::Command {
    let argv = std::iter::once("myapp").chain(args.iter().copied());
    match App::try_parse_from(argv).expect("valid arguments").command {
        AppCommand::Outbox(c) => c,
        AppCommand::Serve => panic!("not an outbox command"),
    }
}

async fn enqueue<H: Harness>(h: &H, ns: std::ops::RangeInclusive<i64>) {
    let mut tx = h.pool().begin().await.unwrap();
    for n in ns {
        let _ = Mail {
            n,
            to: format!("user{n}@example.com"),
        }
        .enqueue(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

pub async fn drain_exit_code_and_work<H: Harness>() {
    let h = H::new().await;
    assert!(matches!(
        App::try_parse_from(["myapp", "serve"]).unwrap().command,
        AppCommand::Serve
    ));
    let delivered = Arc::new(AtomicUsize::new(0));
    let app = Outbox::with_state(h.backend(), Arc::clone(&delivered)).register::<Mail, _>(
        |_: Mail, ctx: MessageContext<Arc<AtomicUsize>>| async move {
            ctx.state().fetch_add(1, Ordering::SeqCst);
            Ok::<(), HandlerError>(())
        },
    );
    let rejecting =
        Outbox::new(h.backend()).register::<Mail, _>(|_: Mail, _: MessageContext| async {
            Err::<(), _>(HandlerError::permanent("550 rejected"))
        });

    assert_eq!(parse(&["outbox", "migrate"]).run(&app).await, Outcome::Done);
    enqueue(&h, 1..=2).await;
    assert_eq!(parse(&["outbox", "drain"]).run(&app).await, Outcome::Done);
    assert_eq!(
        delivered.load(Ordering::SeqCst),
        2,
        "drain ran the application's handler"
    );

    enqueue(&h, 3..=3).await;
    let failed = parse(&["outbox", "drain", "--json"]).run(&rejecting).await;
    assert_eq!(failed, Outcome::SomeAttemptsFailed);
    assert_eq!(failed.code(), 3);
    assert_eq!(parse(&["outbox", "status"]).run(&app).await, Outcome::Done);
    assert_eq!(
        parse(&["outbox", "dead", "list", "--json"]).run(&app).await,
        Outcome::Done
    );
    let unknown = parse(&["outbox", "dead", "show", "01ARZ3NDEKTSV4RRFFQ69G5FAV"])
        .run(&app)
        .await;
    assert_eq!((unknown, unknown.code()), (Outcome::Failed, 1));
    assert_eq!(
        parse(&["outbox", "dead", "requeue", "--all", "--yes"])
            .run(&app)
            .await,
        Outcome::Done
    );

    // `work` is the daemon: it delivers (the requeued mail and two new ones) and keeps
    // running until it is stopped.
    enqueue(&h, 4..=5).await;
    let work = parse(&["outbox", "work"]).run(&app);
    let all_delivered = async {
        while delivered.load(Ordering::SeqCst) < 5 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        outcome = work => panic!("work returned {outcome:?} before it was stopped"),
        _ = tokio::time::timeout(Duration::from_secs(30), all_delivered) => {}
    }
    assert_eq!(
        delivered.load(Ordering::SeqCst),
        5,
        "work delivered within 30 s"
    );

    // `drain --while-tokens` under 60 per hour (burst 2): sends the two tokens' worth and
    // exits, leaving the rest queued for the next run.
    let limited = Outbox::with_state(h.backend(), Arc::clone(&delivered))
        .rate_limit("cli.cron", outbox::RateLimit::per_hour(60.0).burst(2))
        .register_with::<Mail, _>(
            |_: Mail, ctx: MessageContext<Arc<AtomicUsize>>| async move {
                ctx.state().fetch_add(1, Ordering::SeqCst);
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new().rate_limit("cli.cron"),
        );
    enqueue(&h, 10..=14).await;
    let started = std::time::Instant::now();
    assert_eq!(
        parse(&["outbox", "drain", "--while-tokens"])
            .run(&limited)
            .await,
        Outcome::Done
    );
    let took = started.elapsed();
    assert_eq!(
        delivered.load(Ordering::SeqCst),
        7,
        "two more, the bucket's burst"
    );
    assert!(took < Duration::from_secs(2), "exited after {took:?}");
    let left = Admin::new(h.backend()).status_counts().await.unwrap();
    let mail = left.iter().find(|c| c.type_tag == "cli.mail").unwrap();
    assert_eq!(mail.pending, 3, "{left:?}");
}
