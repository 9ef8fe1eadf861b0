//! An optimistic walk's target waited for out of the pin: a pass that finds its target held
//! (a writer has it, or readers when it wants it exclusively) validates the target's parent
//! and ends ([`Failed::Wait`]); the walk unpins, waits for the target's lock (until granted
//! or the deadline), pins again and walks once more, using the target it carries if the
//! path still leads there ([`Carried::take_if`]) and letting it go otherwise. A deadline
//! that passed while it waited ends the walk with `Exit::TimedOut` at the target once a
//! pass validated the path to it. So a holder that keeps the target across I/O holds back no
//! epoch container's reclamation (as the chain lockers' `chain/optimistic/carry.rs`).
//!
//! The carried target is held across a pass's optimistic reads, which never wait (they
//! restart), and let go before the pessimistic pass, which waits for its path's locks.

use crate::hybrid::{HybridLock, Restart};
use std::sync::Arc;

/// Why an optimistic pass ended without an answer.
pub(super) enum Failed<N: ?Sized> {
    /// A version changed: the pass is thrown away (its restart recorded).
    Restart,
    /// The target (`depth`) is held: wait for it out of the pin. `carry`: keep it for the
    /// next pass (the target of a step's `Target`/`Descend`); else (a `Here` target, whose
    /// own version the next pass reads) let it go once granted.
    Wait {
        lock: Arc<HybridLock<N>>,
        depth: usize,
        carry: bool,
    },
}

impl<N: ?Sized> Failed<N> {
    /// A restart recorded by `at` (the telemetry, at the depth that failed); a wait as it is.
    pub(super) fn recorded(self, at: impl FnOnce(Restart) -> Restart) -> Self {
        match self {
            Failed::Restart => at(Restart).into(),
            wait @ Failed::Wait { .. } => wait,
        }
    }
}

impl<N: ?Sized> From<Restart> for Failed<N> {
    fn from(Restart: Restart) -> Self {
        Failed::Restart
    }
}

/// What a walk carries into its next pass (see the module docs).
pub(super) enum Carried<T> {
    /// Nothing.
    Clear,
    /// The target, taken by the walk while it was unpinned.
    Taken { target: T, address: usize },
    /// The deadline passed while the walk waited.
    Expired,
}

impl<T> Carried<T> {
    /// The carried target if it is `lock`; any other is let go (the path changed).
    pub(super) fn take_if<N: ?Sized>(&mut self, lock: &Arc<HybridLock<N>>) -> Option<T> {
        if !matches!(self, Carried::Taken { .. }) {
            return None;
        }
        match std::mem::replace(self, Carried::Clear) {
            Carried::Taken { target, address } if address == super::address(lock) => Some(target),
            _ => None,
        }
    }

    /// Whether the deadline passed while the walk waited.
    pub(super) fn expired(&self) -> bool {
        matches!(self, Carried::Expired)
    }
}
