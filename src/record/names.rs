//! The names a record holds as `&'static str` (its schema, the system,
//! the rlimits), read back from a record's JSON (`contain` reads back its
//! own method).
//! Only the Windows watchdog reads a record back (the one it was handed,
//! once): a name this build knows is its own constant; another, which no
//! record of this build writes, is kept for the process's life.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// A name a record holds. (Spelt as an alias, so that serde's derive
/// does not take the field for one borrowed from the input.)
pub(super) type Name = &'static str;

/// Every name a record of this build writes in a `&'static str` field.
fn known() -> impl Iterator<Item = &'static str> {
    let rlimits = crate::rlimit::Resource::ALL.iter().map(|r| r.name());
    [super::SCHEMA, crate::sys::BACKEND.os]
        .into_iter()
        .chain(rlimits)
}

fn interned(text: String) -> &'static str {
    match known().find(|name| *name == text) {
        Some(name) => name,
        None => Box::leak(text.into_boxed_str()),
    }
}

/// `#[serde(deserialize_with)]` for a `&'static str` field.
pub(crate) fn name<'de, D: Deserializer<'de>>(from: D) -> Result<&'static str, D::Error> {
    String::deserialize(from).map(interned)
}

/// `#[serde(deserialize_with)]` for a map keyed by `&'static str`.
pub(crate) fn keyed<'de, D, V>(from: D) -> Result<BTreeMap<&'static str, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    let map = BTreeMap::<String, V>::deserialize(from)?;
    Ok(map.into_iter().map(|(k, v)| (interned(k), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_name_is_this_builds_own_constant() {
        assert!(known().any(|name| name == super::super::SCHEMA));
        assert_eq!(interned(super::super::SCHEMA.into()), super::super::SCHEMA);
        assert_eq!(interned("nofile".into()), "nofile");
        assert_eq!(interned("from-elsewhere".into()), "from-elsewhere");
    }
}
