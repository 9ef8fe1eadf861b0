//! The hooks the locks call (begin → waiting → acquired / gave up → released), with the
//! feature on. Their twins without the feature are in `off.rs`.

use std::marker::PhantomData;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Config, Cycle, Live, Report};

/// Whether recording is on: the one load of an acquire while telemetry is off at run time.
static ENABLED: AtomicBool = AtomicBool::new(false);

pub(super) fn enable(_config: Config) {
    ENABLED.store(true, Ordering::Relaxed);
}

pub(super) fn disable() {
    ENABLED.store(false, Ordering::Relaxed);
}

pub(super) fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub(super) fn reset() {}

pub(super) fn report() -> Report {
    Report::default()
}

pub(super) fn live() -> Live {
    Live::default()
}

pub(super) fn cycles() -> Vec<Cycle> {
    Vec::new()
}

/// The label of a named-lock instance: the location of its constructor's caller, or a name
/// the user gave.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub enum Label {
    /// Where it was made.
    Site(&'static Location<'static>),
    /// What the user called it.
    Named(Arc<str>),
}

impl Label {
    /// The caller's location (`#[track_caller]`: the constructor's caller when the
    /// constructor is `#[track_caller]` too).
    #[track_caller]
    pub fn caller() -> Self {
        Self::Site(Location::caller())
    }
    /// A name given by the user.
    pub fn named(name: &str) -> Self {
        Self::Named(name.into())
    }
}

/// What lock names a probe builds: the class of locks it records.
#[doc(hidden)]
#[derive(Debug)]
pub enum ProbeKind {
    /// A level of a chain locker (key: `KeyRef::None`).
    Level {
        /// The locker.
        locker: &'static str,
        /// The level.
        level: usize,
        /// The level's name.
        name: &'static str,
    },
    /// A walk (key: `KeyRef::Index(depth)`).
    Walk {
        /// The walk's label.
        walk: &'static str,
    },
    /// A keyed manager (key: `KeyRef::Hash(hash, describe)`).
    Keyed {
        /// Its label.
        manager: Label,
    },
    /// A stripe set (key: `KeyRef::Index(stripe)`).
    Striped {
        /// Its label.
        set: Label,
    },
    /// A set of rooms (key: `KeyRef::Index(room)`).
    Rooms {
        /// Its label.
        rooms: Label,
    },
    /// A distributed backend (key: `KeyRef::Hash(hash, name)`).
    Distributed {
        /// The backend.
        backend: &'static str,
    },
}

/// Which lock within a probe's class.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum KeyRef<'a> {
    /// The probe's one lock.
    None,
    /// A lock by index (stripe, room, depth).
    Index(usize),
    /// A lock by the hash of its key, with a way to name it (called only when the key
    /// becomes one of the hot keys).
    Hash(u64, &'a dyn Fn() -> String),
}

/// Identity of a concrete lock (an entry id, an `Arc` pointer, a stripe index): waiters
/// and holders of the same `LockAddr` within a probe are on the same lock.
#[doc(hidden)]
pub type LockAddr = usize;

/// The recorder of one lock class instance (a manager, a stripe set, a room set, a
/// locker level): cheap to make, allocates on first use while enabled.
#[doc(hidden)]
#[derive(Debug)]
pub struct Probe {
    kind: ProbeKind,
}

impl Probe {
    /// A probe for the locks `kind` names.
    pub const fn new(kind: ProbeKind) -> Self {
        Self { kind }
    }

    /// Renames the probe's class (a manager's `telemetry_name`).
    pub fn rename(&mut self, label: Label) {
        match &mut self.kind {
            ProbeKind::Keyed { manager: old }
            | ProbeKind::Striped { set: old }
            | ProbeKind::Rooms { rooms: old } => *old = label,
            ProbeKind::Level { .. } | ProbeKind::Walk { .. } | ProbeKind::Distributed { .. } => {}
        }
    }

    /// An acquisition of the lock `key` begins: the first thing in an acquire, at the
    /// caller's site (`#[track_caller]`).
    #[track_caller]
    #[inline]
    pub fn begin(&self, key: KeyRef<'_>) -> Attempt<'_> {
        let _ = key;
        Attempt {
            _probe: PhantomData,
        }
    }
}

/// An acquisition in progress, from [`Probe::begin`].
#[doc(hidden)]
#[derive(Debug)]
pub struct Attempt<'a> {
    _probe: PhantomData<&'a Probe>,
}

impl Attempt<'_> {
    /// The slow path begins: the thread (or task) waits for the lock `on`.
    #[inline]
    pub fn waiting(&mut self, on: LockAddr) {
        let _ = on;
    }

    /// The lock `lock` was granted; the [`Held`] goes into the guard.
    #[inline]
    pub fn acquired(self, lock: LockAddr) -> Held {
        let _ = lock;
        Held {}
    }

    /// The acquisition ended without the lock (timed out, cancelled, absent).
    #[inline]
    pub fn gave_up(self) {}
}

/// A hold, stored in the guard: released explicitly by the guard before it unlocks, or
/// when dropped.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Held {}

impl Held {
    /// The hold ends (call just before the lock is given back; dropping does it too).
    #[inline]
    pub fn released(self) {}

    /// The hold belongs to a task: its time counts in `hold_across_await`.
    #[inline]
    pub fn mark_async(&mut self) {}
}
