//! The web admin on the quickstart's kind of database: a SQLite file with the
//! quickstart's welcome mails, a worker delivering them through a rate bucket, and the
//! admin pages at http://127.0.0.1:3000/outbox.
//!
//! Run it with `cargo run -p outbox-examples --example admin`. It needs no server: it opens
//! (or creates) `outbox-admin-demo.db` in the system's temp directory, or the SQLite file
//! given as `DATABASE_URL` (`sqlite://path/to/app.db`, e.g. your own quickstart copy), and
//! seeds a demo there when it holds no messages: welcome mails that trickle in every few
//! seconds, and some to `bad.example` that fail for good and become dead letters.
//!
//! `OUTBOX_ADMIN_ADDR` changes the address (`127.0.0.1:3000`). With
//! `OUTBOX_ADMIN_PASSWORD` set, the pages ask for user `admin` and that password;
//! without it, they are served to loopback requests only.

use std::{net::SocketAddr, time::Duration};

use outbox::{
    prelude::*,
    web::{axum, WebAdmin},
};
use serde::{Deserialize, Serialize};

/// The quickstart's welcome mail.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "quickstart.welcome_mail", key(email), max_attempts = 3)]
struct WelcomeMail {
    email: String,
    name: String,
}

/// The "mail" handler: addresses at bad.example fail for good, the rest are delivered.
async fn send_welcome(mail: WelcomeMail, _ctx: MessageContext<()>) -> Result<(), HandlerError> {
    if mail.email.ends_with("@bad.example") {
        return Err(HandlerError::permanent(format!(
            "550 5.1.1 <{}>: mailbox unavailable",
            mail.email
        )));
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| {
        let path = std::env::temp_dir().join("outbox-admin-demo.db");
        format!("sqlite://{}", path.display())
    });
    let pool = outbox::sqlite::connect(&url).await?;
    let backend = SqliteBackend::new(pool.clone());
    let outbox = Outbox::new(backend.clone())
        .rate_limit("welcome-mails", RateLimit::per_minute(30.0).burst(5))
        .register_with::<WelcomeMail, _>(
            send_welcome,
            QueueOptions::new().rate_limit("welcome-mails"),
        );
    outbox.migrate().await?;

    let admin = outbox.admin();
    let empty = admin.status_counts().await?.is_empty();
    if empty {
        seed(&pool).await?;
    }

    // The worker, and new registrations every few seconds so the counts move.
    let worker = tokio::spawn(async move { outbox.run().await });
    let trickle = tokio::spawn(trickle(pool.clone()));

    let mut web = WebAdmin::new(admin);
    web = match std::env::var("OUTBOX_ADMIN_PASSWORD") {
        Ok(password) if !password.is_empty() => web.basic_auth("admin", password),
        _ => web.allow_unauthenticated_loopback_without_proxy(),
    };
    let app = axum::Router::new().nest("/outbox", web.into_router());

    let addr: SocketAddr = std::env::var("OUTBOX_ADMIN_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:3000".into())
        .parse()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("Database: {url}");
    println!(
        "Outbox admin: http://{}/outbox  (Ctrl-C or SIGTERM stops)",
        listener.local_addr()?
    );
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    // Ctrl-C or a service manager's SIGTERM: the worker stops on the same signals.
    .with_graceful_shutdown(outbox::shutdown_signal())
    .await?;
    trickle.abort();
    worker.await??;
    Ok(())
}

/// A first batch: mails due now, one for later, and a few that will fail for good.
async fn seed(pool: &sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
    let mut tx = pool.begin().await?;
    for i in 0..20 {
        let mail = WelcomeMail {
            email: format!("user{i}@example.com"),
            name: format!("User {i}"),
        };
        let _ = mail.enqueue(&mut *tx).await?;
    }
    for i in 0..4 {
        let mail = WelcomeMail {
            email: format!("nobody{i}@bad.example"),
            name: format!("Nobody {i}"),
        };
        let _ = mail.enqueue(&mut *tx).await?;
    }
    let _ = WelcomeMail {
        email: "later@example.com".into(),
        name: "Later".into(),
    }
    .enqueue_with(
        &mut *tx,
        EnqueueOptions::new().after(Duration::from_secs(3600)),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A new registration every 3 seconds.
async fn trickle(pool: sqlx::SqlitePool) {
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for i in 0u64.. {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let mail = WelcomeMail {
            email: format!("visitor{start}-{i}@example.com"),
            name: format!("Visitor {i}"),
        };
        let Ok(mut conn) = pool.acquire().await else {
            continue;
        };
        let _ = mail.enqueue(&mut *conn).await;
    }
}
