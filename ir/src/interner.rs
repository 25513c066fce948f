//! String interning: every repeated string in a graph (kernel, op and API names) is stored
//! once and referred to by a [`StrId`]. Invariant: `StrId(i)` is valid iff `i < len()`,
//! and equal strings always get the same id.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: interned keys are short strings, where it beats SipHash several times over,
/// and a graph's strings are not attacker-chosen hash-flooding input.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf29ce484222325 } else { self.0 };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// An index into an [`Interner`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub struct StrId(pub u32);

impl fmt::Display for StrId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "str{}", self.0)
    }
}

/// Interned strings. Serialises as the plain list of strings; the lookup map is rebuilt on
/// load so the file stays compact.
#[derive(Default, Clone, Debug)]
pub struct Interner {
    strings: Vec<Box<str>>,
    index: FnvMap<Box<str>, StrId>,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the id of `s`, adding it if it is new.
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = StrId(u32::try_from(self.strings.len()).expect("more than 2^32 strings"));
        self.strings.push(s.into());
        self.index.insert(s.into(), id);
        id
    }

    /// Returns the id of `s` if it was interned.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.index.get(s).copied()
    }

    /// The string behind `id`. Panics on an id from another interner; [`crate::verify`]
    /// checks every id a graph holds.
    pub fn get(&self, id: StrId) -> &str {
        &self.strings[id.0 as usize]
    }

    pub fn try_get(&self, id: StrId) -> Option<&str> {
        self.strings.get(id.0 as usize).map(|s| &**s)
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

impl Serialize for Interner {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.strings.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Interner {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let strings: Vec<Box<str>> = Vec::deserialize(d)?;
        let mut index = FnvMap::with_capacity_and_hasher(strings.len(), Default::default());
        for (i, s) in strings.iter().enumerate() {
            index.entry(s.clone()).or_insert(StrId(i as u32));
        }
        Ok(Self { strings, index })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_an_id() {
        let mut i = Interner::new();
        let a = i.intern("aten::mm");
        let b = i.intern("aten::add");
        assert_ne!(a, b);
        assert_eq!(i.intern("aten::mm"), a);
        assert_eq!(i.get(b), "aten::add");
        assert_eq!(i.lookup("nope"), None);
    }
}
