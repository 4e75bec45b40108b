//! Worker names: unique per process, type and restart. The name is the lease owner of the
//! messages a worker holds, so a restarted worker never settles its predecessor's claims.

/// Builds worker names `{host}-{pid}-{instance}-{queue}-{restart}`.
#[derive(Debug, Clone)]
pub(crate) struct WorkerNames {
    prefix: String,
}

impl WorkerNames {
    /// Names for one `Outbox` in this process; `instance` tells apart several outboxes
    /// (and a restarted container that kept its pid).
    pub(crate) fn new() -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "host".to_owned());
        let instance = ulid::Ulid::generate().to_string();
        let instance = &instance[instance.len() - 6..];
        Self {
            prefix: format!("{host}-{}-{instance}-", std::process::id()),
        }
    }

    /// The part every worker name of this outbox starts with.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The name of the `restart`-th worker of `queue`.
    pub(crate) fn worker(&self, queue: &str, restart: usize) -> String {
        format!("{}{queue}-{restart}", self.prefix)
    }
}
