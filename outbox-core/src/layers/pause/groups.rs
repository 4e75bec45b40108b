//! The groups paused or cancelled across processes, as this process last read them.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, RwLock,
    },
    time::SystemTime,
};

use crate::store::CancelledGroup;

/// The names of the paused groups and the recently cancelled ones with their cancel times,
/// shared by every worker of a process: a worker gives back a claimed message of a paused
/// group, or of a group cancelled after the message was enqueued, instead of starting it.
#[derive(Debug, Default)]
pub struct PausedGroups {
    names: RwLock<Arc<HashSet<String>>>,
    cancelled: RwLock<Arc<HashMap<String, SystemTime>>>,
    /// A message of a cancelled group was given back since the last [`Self::take_given_back`].
    given_back: AtomicBool,
}

/// Why a claimed message is held back instead of started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldBack {
    /// Its group is paused: it goes out after the resume.
    Paused,
    /// Its group was cancelled after it was enqueued: it is deleted as cancelled.
    Cancelled,
}

impl PausedGroups {
    /// Whether group `name` is paused.
    pub fn contains(&self, name: &str) -> bool {
        let names = self.names.read().unwrap_or_else(|e| e.into_inner());
        !names.is_empty() && names.contains(name)
    }

    /// Whether a claimed message of `group` enqueued at `enqueued_at` must not start, and
    /// why. A message held back as cancelled is remembered for [`Self::take_given_back`].
    pub fn holds_back(&self, group: &str, enqueued_at: SystemTime) -> Option<HeldBack> {
        let cancelled = {
            let cancelled = self.cancelled.read().unwrap_or_else(|e| e.into_inner());
            !cancelled.is_empty() && cancelled.get(group).is_some_and(|at| enqueued_at <= *at)
        };
        if cancelled {
            self.given_back.store(true, Ordering::SeqCst);
            Some(HeldBack::Cancelled)
        } else if self.contains(group) {
            Some(HeldBack::Paused)
        } else {
            None
        }
    }

    /// Replaces the recently cancelled groups; says whether one is new (or cancelled again).
    pub fn set_cancelled(&self, groups: &[CancelledGroup]) -> bool {
        let mut current = self.cancelled.write().unwrap_or_else(|e| e.into_inner());
        let fresh = groups
            .iter()
            .any(|g| current.get(&g.name) != Some(&g.cancelled_at));
        if fresh || groups.len() != current.len() {
            let map = groups.iter().map(|g| (g.name.clone(), g.cancelled_at));
            *current = Arc::new(map.collect());
        }
        fresh
    }

    /// The names of the recently cancelled groups.
    pub fn cancelled_names(&self) -> Vec<String> {
        let cancelled = self.cancelled.read().unwrap_or_else(|e| e.into_inner());
        cancelled.keys().cloned().collect()
    }

    /// Whether a message of a cancelled group was given back since the last call.
    pub fn take_given_back(&self) -> bool {
        self.given_back.swap(false, Ordering::SeqCst)
    }

    /// Replaces the set with `names`; says whether a group is paused now that was not
    /// before, and whether one was resumed.
    pub fn set(&self, names: HashSet<String>) -> Changed {
        let mut current = self.names.write().unwrap_or_else(|e| e.into_inner());
        let changed = Changed {
            paused: names.iter().any(|n| !current.contains(n)),
            resumed: current.iter().any(|n| !names.contains(n)),
        };
        *current = Arc::new(names);
        changed
    }
}

/// What a new read of the paused groups changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    /// A group is paused that was not.
    pub paused: bool,
    /// A group that was paused is not any more.
    pub resumed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_says_what_changed() {
        let groups = PausedGroups::default();
        assert!(!groups.contains("a"));
        let both = |paused, resumed| Changed { paused, resumed };
        assert_eq!(groups.set(["a".to_owned()].into()), both(true, false));
        assert!(groups.contains("a") && !groups.contains("b"));
        assert_eq!(groups.set(["a".to_owned()].into()), both(false, false));
        assert_eq!(groups.set(["b".to_owned()].into()), both(true, true));
        assert_eq!(groups.set(HashSet::new()), both(false, true));
        assert!(!groups.contains("a"));
    }

    #[test]
    fn a_cancel_holds_back_what_was_enqueued_before_it() {
        let groups = PausedGroups::default();
        let at = |s| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let cancel = |s| CancelledGroup {
            name: "c".into(),
            cancelled_at: at(s),
        };
        assert_eq!(groups.holds_back("c", at(5)), None);
        assert!(groups.set_cancelled(&[cancel(10)]));
        assert!(!groups.set_cancelled(&[cancel(10)]), "nothing new");
        assert!(!groups.take_given_back());
        assert_eq!(groups.holds_back("c", at(10)), Some(HeldBack::Cancelled));
        assert!(groups.take_given_back() && !groups.take_given_back());
        assert_eq!(
            groups.holds_back("c", at(11)),
            None,
            "enqueued after the cancel"
        );
        assert_eq!(groups.holds_back("d", at(1)), None);
        groups.set(["c".to_owned()].into());
        assert_eq!(groups.holds_back("c", at(11)), Some(HeldBack::Paused));
        assert!(groups.set_cancelled(&[cancel(20)]), "cancelled again");
        assert_eq!(groups.cancelled_names(), ["c"]);
        assert!(!groups.set_cancelled(&[]));
        assert!(groups.cancelled_names().is_empty());
    }
}
