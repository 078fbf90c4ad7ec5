//! `--rlimit NAME=SOFT[:HARD]`, as prlimit(1) takes it, pure: the names,
//! the values (bytes with units for sizes, seconds for cpu, counts for
//! files and processes, `unlimited`), and the checks that let a limit be
//! refused before anything runs. `sys::set_rlimit` applies them in the
//! helper, before exec.

use std::fmt;

use serde::Serialize;

use crate::units;

/// The resources that may be limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// Address space, bytes.
    As,
    /// Core file size, bytes.
    Core,
    /// CPU time, seconds.
    Cpu,
    /// Data segment, bytes.
    Data,
    /// Largest file written, bytes.
    Fsize,
    /// Open files.
    Nofile,
    /// Processes (threads) of the user.
    Nproc,
    /// Stack, bytes.
    Stack,
}

impl Resource {
    pub const ALL: [Resource; 8] = [
        Resource::As,
        Resource::Core,
        Resource::Cpu,
        Resource::Data,
        Resource::Fsize,
        Resource::Nofile,
        Resource::Nproc,
        Resource::Stack,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Resource::As => "as",
            Resource::Core => "core",
            Resource::Cpu => "cpu",
            Resource::Data => "data",
            Resource::Fsize => "fsize",
            Resource::Nofile => "nofile",
            Resource::Nproc => "nproc",
            Resource::Stack => "stack",
        }
    }

    /// Sizes take byte units (`64MiB`); the others plain numbers.
    fn in_bytes(self) -> bool {
        matches!(
            self,
            Resource::As | Resource::Core | Resource::Data | Resource::Fsize | Resource::Stack
        )
    }
}

/// One limit; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    pub resource: Resource,
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// As the record has it: null is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RlimitRecord {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

impl fmt::Display for Rlimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
        write!(
            f,
            "{}={}:{}",
            self.resource.name(),
            show(self.soft),
            show(self.hard)
        )
    }
}

fn value(resource: Resource, text: &str) -> Result<Option<u64>, String> {
    if matches!(text, "unlimited" | "infinity" | "inf") {
        return Ok(None);
    }
    if resource.in_bytes() {
        units::parse_bytes(text).map(Some)
    } else {
        text.parse::<u64>()
            .map(Some)
            .map_err(|_| format!("'{text}' is not a number (or 'unlimited')"))
    }
}

/// `NAME=SOFT[:HARD]`; without HARD both are SOFT, as prlimit sets them.
pub(crate) fn parse(text: &str) -> Result<Rlimit, String> {
    let (name, values) = text
        .split_once('=')
        .ok_or("expected NAME=SOFT[:HARD], e.g. nofile=1024 or as=2GiB:4GiB")?;
    let resource = Resource::ALL
        .into_iter()
        .find(|r| r.name() == name.to_ascii_lowercase())
        .ok_or_else(|| {
            let names: Vec<&str> = Resource::ALL.iter().map(|r| r.name()).collect();
            format!("unknown limit '{name}' (one of {})", names.join(", "))
        })?;
    let (soft, hard) = match values.split_once(':') {
        Some((soft, hard)) => (value(resource, soft)?, value(resource, hard)?),
        None => {
            let both = value(resource, values)?;
            (both, both)
        }
    };
    let over = match (soft, hard) {
        (None, Some(_)) => true,
        (Some(soft), Some(hard)) => soft > hard,
        (_, None) => false,
    };
    if over {
        return Err(format!("{name}: the soft limit is above the hard limit"));
    }
    Ok(Rlimit {
        resource,
        soft,
        hard,
    })
}

/// Whether `wanted` raises the hard limit, where it is `current_hard`
/// (None: unlimited). Only then is privilege needed (CAP_SYS_RESOURCE).
pub(crate) fn raises_hard(wanted: &Rlimit, current_hard: Option<u64>) -> bool {
    match (wanted.hard, current_hard) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(want), Some(have)) => want > have,
    }
}

/// Whether `wanted` can be set where the current hard limit is
/// `current_hard`; `may_raise` says whether this process may raise it
/// (asked only when it would).
pub(crate) fn check(
    wanted: &Rlimit,
    current_hard: Option<u64>,
    may_raise: impl FnOnce() -> bool,
) -> Result<(), String> {
    if raises_hard(wanted, current_hard) && !may_raise() {
        let have = current_hard.map_or("unlimited".to_string(), |v| v.to_string());
        return Err(format!(
            "--rlimit {wanted}: cannot raise the hard limit above {have} without CAP_SYS_RESOURCE"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_values_and_units_as_prlimit_takes_them() {
        let nofile = parse("nofile=64").unwrap();
        assert_eq!((nofile.soft, nofile.hard), (Some(64), Some(64)));
        let space = parse("AS=1MiB:unlimited").unwrap();
        assert_eq!(space.resource, Resource::As);
        assert_eq!((space.soft, space.hard), (Some(1 << 20), None));
        assert_eq!(parse("cpu=2:3").unwrap().hard, Some(3));
        for bad in [
            "nofile",
            "files=3",
            "nofile=ten",
            "nofile=9:3",
            "cpu=unlimited:3",
            "nproc=1KiB",
        ] {
            assert!(parse(bad).is_err(), "{bad} refused");
        }
        assert_eq!(
            parse("as=1MiB:2MiB").unwrap().to_string(),
            "as=1048576:2097152"
        );
    }

    #[test]
    fn raising_a_hard_limit_needs_privilege_and_only_then_is_it_asked() {
        let wanted = parse("nofile=100:5000").unwrap();
        assert!(check(&wanted, Some(4096), || false).is_err());
        assert!(check(&wanted, Some(4096), || true).is_ok());
        let not_asked = || panic!("not raised: not asked");
        assert!(check(&wanted, None, not_asked).is_ok());
        assert!(check(&parse("nofile=10:4096").unwrap(), Some(4096), not_asked).is_ok());
        assert!(
            check(&parse("nofile=100:unlimited").unwrap(), Some(4096), || {
                false
            })
            .is_err()
        );
    }
}
