//! The recording core behind the hooks (`probe.rs`) without the `telemetry` feature:
//! zero-sized types and `#[inline(always)]` empty functions with the signatures of the real
//! ones, so that the hooks (`hooks.rs`, the same file in both builds) and the locks calling
//! them need no `#[cfg]` and compile to exactly what they were without telemetry.
//!
//! One inline module per file of the recording core (`state.rs`, `naming.rs`, `sampling.rs`,
//! `probe.rs`), with the items `hooks.rs` uses, so that `hooks.rs` reads the same paths in
//! both builds. The items are `pub` (in these private modules) only so that `__private` can
//! re-export [`Held`](probe::Held) for macro-generated code, as it does with the feature on.
//! Items no call site uses yet are allowed to be dead.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unused_self,
    clippy::inline_always,
    clippy::needless_pass_by_value
)]

/// `state.rs`: whether the telemetry records.
pub(super) mod state {
    /// Whether telemetry records (never without the feature).
    #[inline(always)]
    pub fn recording() -> bool {
        false
    }
}

/// `naming.rs`: what a probe names.
pub(super) mod naming {
    /// The label of a named-lock instance (nothing without the feature).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct Label;

    impl Label {
        /// The caller's location (nothing without the feature).
        #[inline(always)]
        pub fn caller() -> Self {
            Label
        }
        /// A name given by the user (nothing without the feature).
        #[inline(always)]
        pub fn named(_: &str) -> Self {
            Label
        }
    }

    /// What lock names a probe builds (ignored without the feature).
    #[derive(Debug)]
    pub enum ProbeKind {
        /// A level of a chain locker.
        Level {
            /// The locker.
            locker: &'static str,
            /// The level.
            level: usize,
            /// The level's name.
            name: &'static str,
        },
        /// A walk; the depth is the key.
        Walk {
            /// The walk's label.
            walk: &'static str,
        },
        /// A keyed manager.
        Keyed {
            /// Its label.
            manager: Label,
        },
        /// A stripe set.
        Striped {
            /// Its label.
            set: Label,
        },
        /// A set of rooms.
        Rooms {
            /// Its label.
            rooms: Label,
        },
        /// A distributed backend.
        Distributed {
            /// The backend.
            backend: &'static str,
        },
        /// The hybrid locks taken by themselves.
        Hybrid,
    }

    /// Which lock within a probe's class (ignored without the feature).
    #[derive(Clone, Copy)]
    pub enum KeyRef<'a> {
        /// The probe's one lock.
        None,
        /// A lock by index.
        Index(usize),
        /// A lock by hash, with a way to name it.
        Hash(u64, &'a dyn Fn() -> String),
        /// A lock by the name of the type it protects.
        Type(&'static str),
    }

    /// Identity of a concrete lock.
    pub type LockAddr = usize;
}

/// `sampling.rs`: which acquisitions are recorded.
pub(super) mod sampling {
    /// Every acquisition skipped without the feature.
    #[inline(always)]
    pub fn skips_all(_: u32) -> bool {
        true
    }

    /// Nothing to count without the feature (a call's chances).
    #[inline(always)]
    pub fn level_chance() {}

    /// Nothing to spend without the feature (a call's unreached levels).
    #[inline(always)]
    pub fn spend_unreached(_: u32) {}

    /// A recording call's chances (never recording, without the feature).
    pub struct CallChances;

    impl CallChances {
        /// Nothing without the feature.
        #[inline(always)]
        pub fn start(_: u32) -> Self {
            CallChances
        }
    }

    /// A sampled acquisition (never, without the feature).
    #[derive(Clone, Copy, Debug)]
    pub struct Sampled;

    impl Sampled {
        /// Nothing without the feature.
        #[inline(always)]
        pub fn start(_: &'static std::panic::Location<'static>) -> Self {
            Sampled
        }

        /// Nothing without the feature.
        #[inline(always)]
        pub fn start_side(_: &'static std::panic::Location<'static>) -> Self {
            Sampled
        }
    }
}

/// `probe.rs`: the hooks' lifecycle.
pub(super) mod probe {
    use super::naming::{KeyRef, Label, LockAddr, ProbeKind};
    use super::sampling::Sampled;
    use std::marker::PhantomData;

    /// A lock class instance's recorder (nothing without the feature).
    #[derive(Debug, Default)]
    pub struct Probe;

    impl Probe {
        /// A probe (nothing without the feature).
        #[inline(always)]
        pub const fn new(_: ProbeKind) -> Self {
            Probe
        }
        /// Renames the probe's class (nothing without the feature).
        #[inline(always)]
        pub fn rename(&mut self, _: Label) {}
        /// An acquisition begins (nothing without the feature).
        #[inline(always)]
        pub fn begin(&self, _: KeyRef<'_>) -> Attempt<'_> {
            Attempt(PhantomData)
        }

        /// Never sampled without the feature.
        #[inline(always)]
        pub fn is_sampled(&self) -> bool {
            false
        }

        /// Never sampled without the feature.
        #[inline(always)]
        pub fn is_sampled_side(&self) -> bool {
            false
        }

        /// Every acquisition skipped without the feature.
        #[inline(always)]
        pub fn skips(&self) -> bool {
            true
        }

        /// Nothing to count without the feature.
        #[inline(always)]
        pub fn restarted(&self, _: KeyRef<'_>, _: Sampled, _: bool) {}

        /// Nothing to record without the feature.
        #[inline(always)]
        pub fn attempt(&self, _: KeyRef<'_>, _: Sampled) -> Attempt<'_> {
            Attempt(PhantomData)
        }
    }

    /// A probe over keys of type `K` (nothing without the feature).
    pub struct KeyProbe<K: ?Sized>(PhantomData<fn(&K)>);

    impl<K: ?Sized> std::fmt::Debug for KeyProbe<K> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("KeyProbe")
        }
    }

    impl<K: ?Sized> KeyProbe<K> {
        /// A probe (nothing without the feature).
        #[inline(always)]
        pub const fn new(_: ProbeKind) -> Self {
            Self(PhantomData)
        }
        /// Renames the class (nothing without the feature).
        #[inline(always)]
        pub fn rename(&mut self, _: Label) {}
        /// Names keys by `Debug` (nothing without the feature).
        #[inline(always)]
        pub fn key_debug(&mut self, _: fn(&K) -> String) {}
        /// Every acquisition skipped without the feature.
        #[inline(always)]
        pub fn skips(&self) -> bool {
            true
        }
        /// Never called without the feature (every acquisition is skipped).
        #[inline(always)]
        pub fn begin_unskipped(
            &self,
            _: &K,
            _: impl FnOnce(&K) -> u64,
            _: &'static std::panic::Location<'static>,
        ) -> Attempt<'_> {
            Attempt(PhantomData)
        }
    }

    /// An acquisition in progress (nothing without the feature).
    #[derive(Debug, Default)]
    pub struct Attempt<'a>(PhantomData<&'a ()>);

    impl Attempt<'_> {
        /// An attempt that records nothing.
        #[inline(always)]
        pub fn off() -> Self {
            Attempt(PhantomData)
        }
        /// The attempt without its lifetime (nothing without the feature).
        #[inline(always)]
        pub fn detach(self) -> Attempt<'static> {
            Attempt(PhantomData)
        }
        /// The acquisition belongs to a task (nothing without the feature).
        #[inline(always)]
        pub fn mark_async(&mut self) {}
        /// The slow path begins (nothing without the feature).
        #[inline(always)]
        pub fn waiting(&mut self, _: LockAddr) {}
        /// Whether this acquisition is recorded: never without the feature.
        #[inline(always)]
        pub fn is_recording(&self) -> bool {
            false
        }
        /// The lock was granted to a guard without a record (nothing without the feature).
        #[inline(always)]
        pub fn acquired_unheld(self, _: LockAddr) {}
        /// The lock was granted (nothing without the feature).
        #[inline(always)]
        pub fn acquired(self, _: LockAddr) -> Held {
            Held {}
        }
        /// The acquisition ended without the lock (nothing without the feature).
        #[inline(always)]
        pub fn gave_up(self) {}
    }

    /// A hold, stored in the guard (nothing without the feature).
    #[derive(Debug, Default)]
    pub struct Held {}

    impl Held {
        /// The hold ends (nothing without the feature).
        #[inline(always)]
        pub fn released(self) {}
        /// The hold belongs to a task (nothing without the feature).
        #[inline(always)]
        pub fn mark_async(&mut self) {}
    }
}
