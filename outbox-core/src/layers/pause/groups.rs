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

    /// Replaces the set with `names`; true if a group is paused now that was not before.
    pub fn set(&self, names: HashSet<String>) -> bool {
        let mut current = self.names.write().unwrap_or_else(|e| e.into_inner());
        let newly = names.iter().any(|n| !current.contains(n));
        *current = Arc::new(names);
        newly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_says_when_a_group_was_newly_paused() {
        let groups = PausedGroups::default();
        assert!(!groups.contains("a"));
        assert!(groups.set(["a".to_owned()].into()));
        assert!(groups.contains("a") && !groups.contains("b"));
        assert!(!groups.set(["a".to_owned()].into()));
        assert!(!groups.set(HashSet::new()));
        assert!(!groups.contains("a"));
    }
}
