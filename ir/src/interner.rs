//! String interning: every repeated string in a graph (kernel, op and API names) is stored
//! once and referred to by a [`StrId`]. Invariant: `StrId(i)` is valid iff `i < len()`,
//! and equal strings always get the same id.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// A word-at-a-time multiply-rotate hash (the Fx hash of rustc): kernel names are long and
/// hashed once per event, where it is several times faster than SipHash, and a graph's
/// strings are not attacker-chosen hash-flooding input.
#[derive(Default)]
pub struct WordHash(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl WordHash {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(SEED);
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
        self.add(bytes.len() as u64);
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHash>>;

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
