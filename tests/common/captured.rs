//! A tracing subscriber whose output a test can read back.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

/// What a `fmt` subscriber writes, kept for the test to read.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// A plain-text subscriber writing here the events `filter` (an `EnvFilter`) lets
    /// through. Install it with `tracing::subscriber::set_default` on a test whose runtime
    /// runs every task on the test's thread.
    pub fn subscriber(&self, filter: &str) -> impl tracing::Subscriber + Send + Sync {
        let c = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || c.clone())
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .finish()
    }

    /// Everything written since the last call, which empties it.
    pub fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }
}
