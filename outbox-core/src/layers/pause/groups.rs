//! The groups paused across processes, as this process last read them.

use std::{
    collections::HashSet,
    sync::{Arc, RwLock},
};

/// The names of the paused groups, shared by every worker of a process: a worker gives
/// back a claimed message of a paused group instead of starting it.
#[derive(Debug, Default)]
pub struct PausedGroups {
    names: RwLock<Arc<HashSet<String>>>,
}

impl PausedGroups {
    /// Whether group `name` is paused.
    pub fn contains(&self, name: &str) -> bool {
        let names = self.names.read().unwrap_or_else(|e| e.into_inner());
        !names.is_empty() && names.contains(name)
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
}
