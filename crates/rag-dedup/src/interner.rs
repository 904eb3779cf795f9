//! String interning, so a repeated id is stored once.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;

/// Maps strings to small integers and back; each distinct string is stored once.
#[derive(Debug, Clone, Default)]
pub struct Interner {
    ids: HashMap<Arc<str>, u32, RandomState>,
    names: Vec<Arc<str>>,
}

impl Interner {
    /// The id of `name`, if it was interned.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The id of `name`, interning it if new.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let shared: Arc<str> = Arc::from(name);
        self.names.push(Arc::clone(&shared));
        self.ids.insert(shared, id);
        id
    }

    /// The string of an id.
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    /// Every interned string in id order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }

    /// Rebuilds an interner from its names in id order.
    pub fn from_names(names: Vec<String>) -> Self {
        let mut interner = Self::default();
        for name in names {
            interner.intern(&name);
        }
        interner
    }
}
