//! Development transports: `.eml` files in a directory, or log lines — so that local
//! development and the quickstart need no SMTP server.
//!
//! Failure modes: a directory that cannot be created or written is a transient
//! [`SendError::File`](crate::SendError::File) (the message is retried). A file is written
//! under a temporary name and renamed, so a reader never sees half a message; a duplicate
//! delivery overwrites the same `<message id>.eml`.

use std::path::Path;

use crate::{render::Rendered, SendError};

/// Writes `message` as `<dir>/<outbox message id>.eml`; returns the file's path.
pub(crate) async fn write_file(
    dir: &Path,
    outbox_id: &str,
    message: &Rendered,
) -> Result<std::path::PathBuf, SendError> {
    let path = dir.join(format!("{outbox_id}.eml"));
    let error = |e: std::io::Error| SendError::File {
        path: path.clone(),
        reason: format!("{e}; check that the directory exists and is writable"),
    };
    tokio::fs::create_dir_all(dir).await.map_err(error)?;
    let tmp = dir.join(format!(".{outbox_id}.eml.tmp"));
    tokio::fs::write(&tmp, &message.bytes)
        .await
        .map_err(error)?;
    tokio::fs::rename(&tmp, &path).await.map_err(error)?;
    Ok(path)
}

/// Logs `message` at INFO (envelope and size) and its full text at DEBUG.
pub(crate) fn log(outbox_id: &str, subject: &str, message: &Rendered) {
    let to: Vec<String> = message.recipients.iter().map(|a| a.to_string()).collect();
    tracing::info!(
        message.id = %outbox_id,
        message_id = %message.message_id,
        from = %message.from,
        to = %to.join(", "),
        subject = %subject,
        bytes = message.bytes.len(),
        "email (log transport, not sent)"
    );
    tracing::debug!(
        message.id = %outbox_id,
        "email text:\n{}",
        String::from_utf8_lossy(&message.bytes)
    );
}
