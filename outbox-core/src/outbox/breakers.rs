//! The process's circuit breakers: one switch per breaker name, kept in step with the open
//! breakers the process's steering read returns, and their probes asked for when due.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::{Duration, Instant},
};

use crate::{
    clock::Clock,
    counters::names,
    layers::breaker::{Breaker, BreakerEvent, BreakerSwitch, Change, OnBreakerEvent, PROBE_LEASE},
    store::{Backend, BreakerState, BREAKER_POLL},
    worker::Hub,
};

/// The shortest wait between two reads (a probe due in a moment).
const MIN_WAIT: Duration = Duration::from_millis(5);

/// One switch per breaker name the registered types use: `types` is each type with its
/// breaker's name and settings (types sharing a name share the first one's settings).
pub(super) fn switches<B: Backend>(
    types: Vec<(&'static str, String, Breaker)>,
    hub: &Arc<Hub<B>>,
) -> HashMap<&'static str, Arc<BreakerSwitch>> {
    let mut by_name: BTreeMap<String, (Breaker, Vec<&'static str>)> = BTreeMap::new();
    for (type_tag, name, config) in types {
        by_name
            .entry(name)
            .or_insert_with(|| (config, Vec::new()))
            .1
            .push(type_tag);
    }
    let weak = Arc::downgrade(hub);
    let on_event: OnBreakerEvent = Arc::new(move |types, event| {
        let Some(hub) = weak.upgrade() else { return };
        match event {
            BreakerEvent::Held => {
                let released = hub.release_types(types);
                if released > 0 {
                    tracing::debug!(
                        released,
                        "gave back claimed messages behind an open circuit breaker"
                    );
                }
            }
            BreakerEvent::Released => hub.wake_types(types),
        }
    });
    let mut switches = HashMap::new();
    for (name, (config, types)) in by_name {
        let switch = Arc::new(BreakerSwitch::new(
            name,
            config,
            types.clone(),
            Arc::clone(&on_event),
        ));
        for t in types {
            switches.insert(t, Arc::clone(&switch));
        }
    }
    switches
}

/// Each breaker once (several types may share one).
pub(super) fn distinct(
    switches: &HashMap<&'static str, Arc<BreakerSwitch>>,
) -> Vec<Arc<BreakerSwitch>> {
    let mut distinct: Vec<Arc<BreakerSwitch>> = Vec::new();
    for s in switches.values() {
        if !distinct.iter().any(|d| Arc::ptr_eq(d, s)) {
            distinct.push(Arc::clone(s));
        }
    }
    distinct
}

/// The state versions of `switches` before a read: a read applies only to a breaker that
/// did not change here meanwhile.
pub(super) fn versions(switches: &[Arc<BreakerSwitch>]) -> Vec<u64> {
    switches.iter().map(|s| s.with(|l| l.version())).collect()
}

/// Applies a read of the open breakers (`open`, read from `versions` on): what other
/// processes opened or closed, and takes each due probe this process wants. Returns how
/// long to wait before the next read ([`BREAKER_POLL`], or less when a probe is due).
pub(super) async fn apply<B: Backend>(
    backend: &B,
    clock: &dyn Clock,
    switches: &[Arc<BreakerSwitch>],
    versions: &[u64],
    open: &[BreakerState],
    owner: &str,
) -> Duration {
    let mut wait = BREAKER_POLL;
    for (switch, version) in switches.iter().zip(versions) {
        let row = open.iter().find(|r| r.name == switch.name());
        match switch.with(|l| l.observe(*version, row.is_some(), Instant::now())) {
            Change::Opened => switch.notify(BreakerEvent::Held),
            Change::Closed => switch.notify(BreakerEvent::Released),
            Change::None => {}
        }
        metrics::gauge!(names::BREAKER_OPEN, "breaker" => switch.name().to_owned())
            .set(if switch.is_open() { 1.0 } else { 0.0 });
        let Some(row) = row else { continue };
        if !switch.with(|l| l.wants_probe(Instant::now())) {
            continue;
        }
        let due_in = row.next_probe_in.unwrap_or_default();
        if !due_in.is_zero() {
            wait = wait.min(due_in.max(MIN_WAIT));
            continue;
        }
        if row.probing {
            continue;
        }
        match backend
            .take_probe(switch.name(), owner, clock.database_now(), PROBE_LEASE)
            .await
        {
            Ok(Some(grant)) => {
                switch.with(|l| l.granted(grant, Instant::now() + PROBE_LEASE));
                tracing::debug!(breaker = switch.name(), "took the circuit breaker's probe");
                switch.notify(BreakerEvent::Released);
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(breaker = switch.name(), error = %e, "cannot take the probe"),
        }
    }
    wait
}
