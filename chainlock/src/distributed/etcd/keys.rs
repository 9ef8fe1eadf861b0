//! Where the keys of a name lie (the layout `chainlock/docs/distributed.md` writes down, and
//! a leader election builds on).
//!
//! - A name's **range** is `NAME/`: every key of every hold of `NAME` lies in it, and nothing
//!   else of chainlock's does. An integer key's name is its display form (`advisory(42)`).
//! - An **exclusive** hold is `NAME/<lease id in lower-case hex>`, etcd's own layout (Go's
//!   `concurrency.Mutex`, `etcdctl lock NAME`), so that they and chainlock exclude each other.
//! - Every key chainlock adds under a name is `NAME/<tag><rest>`, with `<tag>` a lower-case
//!   letter past `f` (never a hex digit, so never an etcd lock key) and no `/` in `<rest>`:
//!   a **shared** hold is `NAME/r<lease id in hex>`. The leases are the client's (one per
//!   client, shared by its holds), so a client's second hold of a name at once has a key of its
//!   own: `NAME/x<lease id in hex>-<n>` (exclusive) or `NAME/r<lease id in hex>-<n>` (shared),
//!   `n` from 1. A **candidacy** of an election of `NAME` is `NAME/<lease id in hex>`, etcd's
//!   own layout again (Go's `concurrency.Election`, `etcdctl elect NAME`), and a client's
//!   further candidacies at once `NAME/l<lease id in hex>-<n>`. The other letters are
//!   reserved for what chainlock adds later.
//! - A key `NAME/<no '/'>` lies in the range of `NAME` and of no other name except `NAME`'s
//!   ancestors (`a` for `a/b`: the prefixes of `NAME` that end before one of its `/`): etcd's
//!   own nesting, which `etcdctl lock` has too. So no key of chainlock's lies in another name's
//!   range but by that nesting.

use super::super::LockKey;
use super::super::backend::Mode;

/// The tag of a shared hold's key (`NAME/r<lease>`).
const SHARED: u8 = b'r';

/// The tag of a client's further exclusive holds of a name (`NAME/x<lease>-<n>`).
const MORE_EXCLUSIVE: char = 'x';

/// The tag of a client's further candidacies in an election (`NAME/l<lease>-<n>`).
const MORE_CANDIDATES: char = 'l';

/// What a key under a name is: a hold of the lock in a mode, or a candidacy in the election.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// A hold of the lock of the name.
    Hold(Mode),
    /// A candidacy in the election of the name (it waits as an exclusive hold).
    Candidate,
}

impl Role {
    /// The mode the key waits in: a candidacy conflicts with every key before it.
    pub(super) fn mode(self) -> Mode {
        match self {
            Self::Hold(mode) => mode,
            Self::Candidate => Mode::Exclusive,
        }
    }
}

/// The keys of one name.
pub(super) struct Keys {
    /// `NAME/`.
    range: String,
}

impl Keys {
    pub(super) fn new(key: LockKey<'_>) -> Self {
        let mut range = match key {
            LockKey::Name(name) => name.to_owned(),
            other => other.to_string(),
        };
        range.push('/');
        Self { range }
    }

    /// `NAME/`: every key of every hold of the name (and of the names nested in it).
    pub(super) fn range(&self) -> &str {
        &self.range
    }

    /// The key of the `nth` key at once (from 0) in `role` on `lease` in one client.
    pub(super) fn own(&self, role: Role, lease: i64, nth: u32) -> String {
        let range = &self.range;
        match (role, nth) {
            (Role::Hold(Mode::Exclusive) | Role::Candidate, 0) => format!("{range}{lease:x}"),
            (Role::Hold(Mode::Exclusive), nth) => {
                format!("{range}{MORE_EXCLUSIVE}{lease:x}-{nth}")
            }
            (Role::Candidate, nth) => format!("{range}{MORE_CANDIDATES}{lease:x}-{nth}"),
            (Role::Hold(Mode::Shared), 0) => format!("{range}{}{lease:x}", char::from(SHARED)),
            (Role::Hold(Mode::Shared), nth) => {
                format!("{range}{}{lease:x}-{nth}", char::from(SHARED))
            }
        }
    }

    /// Whether `key` (a key in the range) is a shared hold of this very name: a shared hold
    /// conflicts with every other key in the range (exclusive holds of the name, etcd's and Go's
    /// lock keys, and the holds of nested names).
    pub(super) fn is_shared(&self, key: &[u8]) -> bool {
        key.strip_prefix(self.range.as_bytes())
            .is_some_and(|rest| rest.first() == Some(&SHARED) && !rest.contains(&b'/'))
    }
}

#[cfg(test)]
mod tests {
    use super::{Keys, Mode, Role};
    use crate::distributed::LockKey;

    #[test]
    fn a_shared_key_of_one_name_is_never_in_another_names_range_but_an_ancestors() {
        let a = Keys::new(LockKey::Name("a"));
        let a_read = Keys::new(LockKey::Name("a/read"));
        let shared = a.own(Role::Hold(Mode::Shared), 0x2a, 0);
        assert_eq!(shared, "a/r2a");
        assert_eq!(a.own(Role::Hold(Mode::Shared), 0x2a, 2), "a/r2a-2");
        assert!(a.is_shared(b"a/r2a-2"));
        assert_eq!(a.own(Role::Hold(Mode::Exclusive), 0x2a, 1), "a/x2a-1");
        assert!(!a.is_shared(b"a/x2a-1"), "an exclusive hold");
        assert!(a.is_shared(shared.as_bytes()));
        assert!(
            !shared.starts_with(a_read.range()),
            "a/read's range is a/read/"
        );
        assert_eq!(
            a.own(Role::Hold(Mode::Exclusive), 0x2a, 0),
            "a/2a",
            "etcd's own layout"
        );
        assert!(!a.is_shared(b"a/2a"));
        // A nested name's shared hold is not a's: a's readers wait for it (the nesting).
        assert!(
            !a.is_shared(
                Keys::new(LockKey::Name("a/x"))
                    .own(Role::Hold(Mode::Shared), 1, 0)
                    .as_bytes()
            )
        );
        assert!(!a.is_shared(b"a/r/1"));
        assert_eq!(Keys::new(LockKey::Int(42)).range(), "advisory(42)/");
        // A candidacy: etcd's election layout, then chainlock's own.
        assert_eq!(
            a.own(Role::Candidate, 0x2a, 0),
            "a/2a",
            "etcdctl elect's key"
        );
        assert_eq!(a.own(Role::Candidate, 0x2a, 1), "a/l2a-1");
        assert!(!a.is_shared(b"a/l2a-1"));
    }
}
