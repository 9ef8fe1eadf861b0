//! How the telemetry names what it records: the [`Label`] of a named-lock instance, the
//! [`ProbeKind`] of a probe (which [`LockName`]s it makes), the [`KeyRef`] of one lock within
//! it, and [`Names`], the classes of one probe made on first use (by index without a lock for
//! stripes, rooms and depths; by hash among the hot keys for keys and names).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::panic::Location;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::class::{Class, Found, HotKeys, HotName};
use super::report::LockName;
use super::state::{hot_keys, register};

/// The label of a named-lock instance: the location of its constructor's caller, or a name
/// the user gave.
#[derive(Clone, Debug)]
pub(crate) enum Label {
    /// Where it was made.
    Site(&'static Location<'static>),
    /// What the user called it.
    Named(Arc<str>),
}

impl Label {
    /// The caller's location (`#[track_caller]`: the constructor's caller when the
    /// constructor is `#[track_caller]` too).
    #[track_caller]
    pub(crate) fn caller() -> Self {
        Self::Site(Location::caller())
    }
    /// A name given by the user.
    pub(crate) fn named(name: &str) -> Self {
        Self::Named(name.into())
    }
}

/// What lock names a probe builds: the class of locks it records.
#[derive(Debug)]
pub(crate) enum ProbeKind {
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
    #[cfg(feature = "distributed")]
    Distributed {
        /// The backend.
        backend: &'static str,
    },
    /// The hybrid locks taken by themselves, by the type they protect (key:
    /// `KeyRef::Hash(hash, type name)`).
    Hybrid,
}

/// Which lock within a probe's class.
#[derive(Clone, Copy)]
pub(crate) enum KeyRef<'a> {
    /// The probe's one lock.
    None,
    /// A lock by index (stripe, room, depth).
    Index(usize),
    /// A lock by the hash of its key, with a way to name it (called only when the key
    /// becomes one of the hot keys).
    Hash(u64, &'a dyn Fn() -> String),
    /// A lock by the name of the type it protects, hashed only when it is recorded (a hybrid
    /// lock taken by itself: its type's name is a constant, its hash would be work on every
    /// acquisition).
    Type(&'static str),
}

/// Identity of a concrete lock (an entry id, an `Arc` pointer, a stripe index): waiters
/// and holders of the same `LockAddr` within a probe are on the same lock.
pub(crate) type LockAddr = usize;

/// The classes of one probe: its [`ProbeKind`], and the classes made for it so far (on
/// first use while enabled).
pub(super) struct Names {
    kind: ProbeKind,
    classes: OnceLock<Classes>,
}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind.fmt(f)
    }
}

/// The classes of a probe, by the kind of key.
enum Classes {
    One(Arc<Class>),
    /// Stripes, rooms, depths: the first [`DIRECT`] by index without a lock.
    Indexed {
        label: Arc<str>,
        direct: Box<[OnceLock<Arc<Class>>]>,
        more: Mutex<HashMap<usize, Arc<Class>>>,
    },
    /// Keys and names by hash: the hot ones, the rest summed.
    Hashed(Mutex<HotKeys>),
}

/// Indexed classes reached without a lock.
const DIRECT: usize = 64;

fn label_text(label: &Label) -> Arc<str> {
    match label {
        Label::Site(site) => format!("{}:{}", site.file(), site.line()).into(),
        Label::Named(name) => name.clone(),
    }
}

impl Names {
    /// The names of the locks `kind` names; no class made yet.
    pub(super) const fn new(kind: ProbeKind) -> Self {
        Self {
            kind,
            classes: OnceLock::new(),
        }
    }

    /// Renames the probe's class (a manager's `telemetry_name`); only before its first
    /// recording (the statistics already recorded keep their name).
    pub(super) fn rename(&mut self, label: Label) {
        match &mut self.kind {
            ProbeKind::Keyed { manager: old }
            | ProbeKind::Striped { set: old }
            | ProbeKind::Rooms { rooms: old } => *old = label,
            ProbeKind::Level { .. } | ProbeKind::Walk { .. } | ProbeKind::Hybrid => {}
            #[cfg(feature = "distributed")]
            ProbeKind::Distributed { .. } => {}
        }
        self.classes = OnceLock::new();
    }

    fn classes(&self) -> &Classes {
        self.classes.get_or_init(|| {
            let indexed = |label: Arc<str>| Classes::Indexed {
                label,
                direct: (0..DIRECT).map(|_| OnceLock::new()).collect(),
                more: Mutex::new(HashMap::new()),
            };
            match &self.kind {
                ProbeKind::Level {
                    locker,
                    level,
                    name,
                } => {
                    let class = Arc::new(Class::new(LockName::Level {
                        locker,
                        level: *level,
                        name,
                    }));
                    register(&class);
                    Classes::One(class)
                }
                ProbeKind::Walk { walk } => indexed(Arc::from(*walk)),
                ProbeKind::Striped { set: label } | ProbeKind::Rooms { rooms: label } => {
                    indexed(label_text(label))
                }
                ProbeKind::Keyed { manager } => {
                    let hot = HotKeys::new(label_text(manager), HotName::Key);
                    register(&hot.other);
                    Classes::Hashed(Mutex::new(hot))
                }
                ProbeKind::Hybrid => {
                    let hot = HotKeys::new(Arc::from("HybridLock"), HotName::Hybrid);
                    register(&hot.other);
                    Classes::Hashed(Mutex::new(hot))
                }
                #[cfg(feature = "distributed")]
                ProbeKind::Distributed { backend } => {
                    let hot = HotKeys::new(Arc::from(*backend), HotName::Distributed(backend));
                    register(&hot.other);
                    Classes::Hashed(Mutex::new(hot))
                }
            }
        })
    }

    fn name_at(&self, label: &Arc<str>, index: usize) -> LockName {
        match &self.kind {
            ProbeKind::Walk { walk } => LockName::Depth { walk, depth: index },
            ProbeKind::Rooms { .. } => LockName::Room {
                rooms: label.clone(),
                room: index.to_string().into(),
            },
            _ => LockName::Stripe {
                set: label.clone(),
                index,
            },
        }
    }

    /// The class of the lock `key` names; `weight` is how many acquisitions the lookup
    /// stands for (the hot-key table counts by it).
    pub(super) fn class_of(&self, key: KeyRef<'_>, weight: u64) -> Arc<Class> {
        match (self.classes(), key) {
            (Classes::One(class), _) => class.clone(),
            (
                Classes::Indexed {
                    label,
                    direct,
                    more,
                },
                key,
            ) => {
                let index = match key {
                    KeyRef::Index(index) => index,
                    KeyRef::None | KeyRef::Hash(..) | KeyRef::Type(_) => 0,
                };
                let make = || {
                    let class = Arc::new(Class::new(self.name_at(label, index)));
                    register(&class);
                    class
                };
                match direct.get(index) {
                    Some(slot) => slot.get_or_init(make).clone(),
                    None => more.lock().entry(index).or_insert_with(make).clone(),
                }
            }
            (Classes::Hashed(hot), key) => {
                let capacity = hot_keys();
                match key {
                    KeyRef::Hash(hash, describe) => {
                        hot_class(hot, hash, capacity, weight, describe, register)
                    }
                    KeyRef::Index(index) => hot_class(
                        hot,
                        index as u64,
                        capacity,
                        weight,
                        &|| index.to_string(),
                        register,
                    ),
                    KeyRef::Type(name) => {
                        let hash = foldhash::fast::FixedState::default().hash_one(name);
                        hot_class(hot, hash, capacity, weight, &|| name.into(), register)
                    }
                    KeyRef::None => hot_class(hot, 0, capacity, weight, &|| "0".into(), register),
                }
            }
        }
    }
}

/// The class of a key of a keyed manager or distributed backend. The key's name is made
/// with the table unlocked: it is the user's `Debug`, which may itself lock (even a lock of
/// the same manager, whose acquisitions take this table).
fn hot_class(
    hot: &Mutex<HotKeys>,
    hash: u64,
    capacity: usize,
    weight: u64,
    describe: &dyn Fn() -> String,
    register: impl Fn(&Arc<Class>),
) -> Arc<Class> {
    let mut table = hot.lock();
    match table.class_of(hash, capacity, weight) {
        Found::Class(class) => class,
        Found::Promote { base } => {
            let key = parking_lot::MutexGuard::unlocked(&mut table, describe);
            table.promote(hash, base, key, &register)
        }
    }
}
