//! Paths used by the code that `chainlock-macros` generates. Not public API: anything
//! here may change in any release; the macros pin this crate's exact version.
//!
//! The one-line step helpers are `#[inline(always)]`: they stand for a few tokens of the
//! generated body, and the zero-cost benchmark is measured with them inlined (callgrind,
//! README "Zero cost").
#![expect(
    clippy::inline_always,
    reason = "generated code's steps must inline into the caller to cost nothing"
)]

pub use crate::chain::ChainNode;
pub use crate::chain::leaves::{lock_leaves, lock_leaves_until};
pub use crate::chain::observed::{
    Held, Level, exclusive, exclusive_async, exclusive_async_unheld, exclusive_unheld,
    exclusive_until, exclusive_until_async, exclusive_until_async_unheld, exclusive_until_unheld,
    leaf, no_hold, release, release_taken, shared, shared_async, shared_async_unheld,
    shared_unheld, shared_until, shared_until_async, shared_until_async_unheld,
    shared_until_unheld, upgradable, upgradable_unheld, upgradable_until, upgradable_until_unheld,
};
pub use crate::chain::{
    Absence, AsyncExclusiveLock, AsyncSharedLock, ChildContainer, Children, ChildrenBy,
    ExclusiveLock, Exit, LeavesExit, LookupBy, SharedLock, TimedExclusiveLock, TimedSharedLock,
    TimedUpgradableLock, Upgradable, UpgradableLock,
};
use crate::walk::Step;
pub use crate::walk::{
    AsyncMode as WalkAsyncMode, Exclusive as WalkExclusive, Mode as WalkMode, Shared as WalkShared,
    Step as WalkStep, Walker,
};
pub use core::borrow::Borrow;
pub use core::clone::Clone;
pub use core::default::Default;
pub use core::fmt::{Debug, Formatter, Result as FmtResult};
pub use core::iter::{IntoIterator, Iterator};
pub use core::marker::{Copy, Send, Sized, Sync};
pub use core::mem::drop;
pub use core::ops::{FnMut, FnOnce};
pub use core::option::Option::{self, None, Some};
pub use core::primitive::{bool, u32};
pub use core::result::Result::{self, Err, Ok};
pub use std::sync::Arc;
pub use std::time::Instant;
pub use std::vec::Vec;

/// What every generated descent returns.
pub type Res<T> = Result<T, Exit>;
/// The owned guard of an exclusive level.
pub type XGuard<L> = <L as ExclusiveLock>::Guard;
/// The owned guard of a shared level.
pub type SGuard<L> = <L as SharedLock>::Guard;
/// The owned guard of an exclusive level of an async descent.
pub type AXGuard<L> = <L as AsyncExclusiveLock>::Guard;
/// The owned guard of a shared level of an async descent.
pub type ASGuard<L> = <L as AsyncSharedLock>::Guard;

/// Keeps the items it is given when chainlock's `tokio` feature is on and drops them
/// otherwise: the generated `*_async*` methods are wrapped in it, so the macro crate needs
/// no feature of its own and a build without `tokio` pays nothing for them.
#[cfg(feature = "tokio")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_if_tokio {
    ($($items:tt)*) => { $($items)* };
}

/// See the `tokio` twin above: without the feature, the async methods are not emitted.
#[cfg(not(feature = "tokio"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_if_tokio {
    ($($items:tt)*) => {};
}

pub use crate::__chainlock_if_tokio as if_tokio;

/// Makes the generated method it wraps `#[track_caller]` when chainlock's `telemetry`
/// feature is on, so that the sites the telemetry records are the user's calls; without the
/// feature, the method as it is (no hidden location argument, nothing to pay).
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_tracked {
    ($($item:tt)*) => { #[track_caller] $($item)* };
}

/// See the `telemetry` twin above: without the feature, the method unchanged.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_tracked {
    ($($item:tt)*) => { $($item)* };
}

pub use crate::__chainlock_tracked as tracked;

pub use crate::chain::observed::{Off as RecOff, On as RecOn, Rec, out_of_line};
pub use crate::telemetry::recording;

/// Runs a generated descent's body with `$rec` bound to [`RecOn`] when this call may record,
/// with [`RecOff`] otherwise: the telemetry is asked once per call, and with `RecOff` every
/// level's helper is its lock's own call (the body, duplicated, compiles to what it is
/// without the feature). The call may record when the telemetry is enabled and this
/// thread's sampling countdown ends within the call's `$levels` acquisitions
/// ([`records`]): else the countdown moves past them all at once and the call runs
/// without hooks, so that a call costs one check, not one per level, unless one of its
/// acquisitions is sampled. Without chainlock's `telemetry` feature: the body with
/// `RecOff`, once.
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_recording_branches {
    // A blocking body: its recording copy runs out of line (`out_of_line`), the site taken
    // here, in the `#[track_caller]` method.
    ($rec:ident, $levels:expr => $body:block) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            $crate::__private::out_of_line(move || $body)
        } else {
            let $rec = $crate::__private::RecOff;
            let _ = $rec;
            $body
        }
    };
    // An async body: both copies in the future (`async fn`s are not `#[track_caller]`).
    (async $rec:ident, $levels:expr => $body:block) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            $body
        } else {
            let $rec = $crate::__private::RecOff;
            let _ = $rec;
            $body
        }
    };
}

/// See the `telemetry` twin above: without the feature, the body once, not recording.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_recording_branches {
    (async $rec:ident, $levels:expr => $body:block) => {
        $crate::__private::recording_branches!($rec, $levels => $body)
    };
    ($rec:ident, $levels:expr => $body:block) => {{
        let $rec = $crate::__private::RecOff;
        let _ = $rec;
        $body
    }};
}

/// Whether a generated call of (at most) `levels` acquisitions may record: the telemetry
/// is enabled and this thread's sampling countdown ends within them. If not, the countdown
/// moves past all of them (none is sampled; each real acquisition still had its chance of
/// one in `sample_every`, so the estimates stay unbiased: a call that exits early only
/// spends the chances of acquisitions that did not happen). `u32::MAX`: the count is not
/// known (records whenever enabled).
#[inline(always)]
#[must_use]
pub fn records(levels: u32) -> bool {
    crate::telemetry::recording() && !crate::telemetry::skips_all(levels)
}

pub use crate::__chainlock_recording_branches as recording_branches;

/// Asks the node at level `.1` whether it is closed, when its type implements
/// [`ChainNode`], and answers "no" at compile time otherwise (autoref specialization: the
/// generated code calls `(&ClosedProbe(node, level)).open()?` on a concrete level type, and
/// method resolution prefers [`ProbeNode`] over [`ProbeOther`] when both apply).
pub struct ClosedProbe<'a, T: ?Sized>(pub &'a T, pub usize);

/// The [`ClosedProbe`] answer for level types that implement [`ChainNode`].
pub trait ProbeNode {
    /// Whether the probed node is closed.
    fn level_is_closed(&self) -> bool;
    /// `Ok` unless the node is closed: then [`Exit::Absent`] (closed) at its level.
    ///
    /// # Errors
    ///
    /// When the node is closed.
    fn open(&self) -> Result<(), Exit>;
}

impl<T: ?Sized + ChainNode> ProbeNode for ClosedProbe<'_, T> {
    #[inline]
    fn level_is_closed(&self) -> bool {
        self.0.is_closed()
    }

    #[inline]
    fn open(&self) -> Result<(), Exit> {
        open(self.0.is_closed(), self.1)
    }
}

/// The [`ClosedProbe`] answer for all other level types: never closed.
pub trait ProbeOther {
    /// Always `false`.
    fn level_is_closed(&self) -> bool;
    /// Always `Ok`.
    ///
    /// # Errors
    ///
    /// Never.
    fn open(&self) -> Result<(), Exit>;
}

impl<T: ?Sized> ProbeOther for &ClosedProbe<'_, T> {
    #[inline]
    fn level_is_closed(&self) -> bool {
        false
    }

    #[inline]
    fn open(&self) -> Result<(), Exit> {
        Ok(())
    }
}

/// One step of a key path, `P` → `C`, named through the chain's root lock `A` (any type):
/// what the generated key-path methods bound and call. The root lock is the methods' one
/// generic parameter, so a bound `A: Link<P, C>` is checked at the call and not where the
/// locker is defined (a chain whose types have no `Children` impls still compiles), and
/// every later level's lock is the projection `<A as Link<P, C>>::Lock`: the same node type
/// spelled two ways (`Dir`, `self::Dir`, an alias) is one type to the compiler, never two
/// parameters to unify.
#[diagnostic::on_unimplemented(
    message = "`{P}` has no children of type `{C}`",
    label = "no `Children<{C}>` impl",
    note = "derive it: `#[derive(ChainNode)]` on `{P}` with `#[chain(children)]` on the field that holds the `{C}` locks; or descend with closures (`run`/`descend`)"
)]
pub trait Link<P: ?Sized, C: ?Sized> {
    /// `<P as Children<C>>::Key`.
    type Key: ?Sized;
    /// `<P as Children<C>>::Lock`.
    type Lock: ?Sized;
    /// [`Children::child`].
    fn child(node: &P, key: &Self::Key) -> Option<Arc<Self::Lock>>;
}

impl<A: ?Sized, P: ?Sized + Children<C>, C: ?Sized> Link<P, C> for A {
    type Key = P::Key;
    type Lock = P::Lock;

    #[inline(always)]
    fn child(node: &P, key: &P::Key) -> Option<Arc<P::Lock>> {
        node.child(key)
    }
}

/// `Link<P, C>` whose child lock has the given lock trait, one bound per step of a generated
/// key-path method (`A: LinkX<P, C>` for an exclusive child, ...); implied by and implying
/// `A: Link<P, C, Lock: Trait<Target = C>>`.
macro_rules! links {
    ($($name:ident: $lock:ident;)*) => {$(
        #[doc = concat!("`Link<P, C, Lock: ", stringify!($lock), "<Target = C>>`.")]
        pub trait $name<P: ?Sized, C: ?Sized>: Link<P, C, Lock: $lock<Target = C>> {}

        impl<A, P, C> $name<P, C> for A
        where
            A: ?Sized + Link<P, C, Lock: $lock<Target = C>>,
            P: ?Sized,
            C: ?Sized,
        {
        }
    )*};
}

links! {
    LinkX: ExclusiveLock;
    LinkS: SharedLock;
    LinkTX: TimedExclusiveLock;
    LinkTS: TimedSharedLock;
    LinkAX: AsyncExclusiveLock;
    LinkAS: AsyncSharedLock;
    LinkU: UpgradableLock;
    LinkTU: TimedUpgradableLock;
}

/// A key-path stage on a shared level: looks `key` up in the node (see [`Link`]).
#[inline(always)]
pub fn key_ref<A, P, C>(key: &A::Key) -> impl FnOnce(&P) -> Option<Arc<A::Lock>>
where
    A: ?Sized + Link<P, C>,
    P: ?Sized,
    C: ?Sized,
{
    move |node| A::child(node, key)
}

/// A key-path stage on an exclusive level (its stage gets `&mut P`).
#[inline(always)]
pub fn key_mut<A, P, C>(key: &A::Key) -> impl FnOnce(&mut P) -> Option<Arc<A::Lock>>
where
    A: ?Sized + Link<P, C>,
    P: ?Sized,
    C: ?Sized,
{
    move |node| A::child(node, key)
}

/// A key-path stage on an upgradable level `L` (its stage gets `&mut Upgradable<L>`).
#[inline(always)]
pub fn key_up<A, P, C, L>(key: &A::Key) -> impl FnOnce(&mut Upgradable<L>) -> Option<Arc<A::Lock>>
where
    A: ?Sized + Link<P, C>,
    P: ?Sized,
    C: ?Sized,
    L: ?Sized + UpgradableLock<Target = P>,
{
    move |node| A::child(node, key)
}

/// The key of the step `P` → `C` of a chain whose root lock is `A` (see [`Link`]).
pub type KeyOf<A, P, C> = <A as Link<P, C>>::Key;
/// The lock of a `C` found in a `P`, in a chain whose root lock is `A` (see [`Link`]).
pub type LockOf<A, P, C> = <A as Link<P, C>>::Lock;

/// What the derive checks of each child field: its lock locks the child type. Checked where
/// the field is declared, so that `child = Lecture` on a field of `Class` locks, or a
/// `Vec` taken for a lock, is reported at the field and not at a later call.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a lock around `{C}`",
    label = "the children here are not `{C}`s behind a chain lock",
    note = "a child field holds `Arc<L>` (in a `Vec`, map, `Option`, ..) where `L` is a parking_lot/lock_api `Mutex`/`RwLock`, a tokio `Mutex`/`RwLock`, or implements `chainlock::chain::ExclusiveLock`, with `Target` the child type; `child = T` names the type inside the lock"
)]
pub trait ChildLock<C: ?Sized> {}

impl<L: ?Sized + ExclusiveLock> ChildLock<L::Target> for L {}

#[cfg(feature = "tokio")]
impl<T: ?Sized> ChildLock<T> for tokio::sync::Mutex<T> {}

#[cfg(feature = "tokio")]
impl<T: ?Sized> ChildLock<T> for tokio::sync::RwLock<T> {}

/// Compiles only when `L` locks a `C` (see [`ChildLock`]); free at run time.
#[inline(always)]
pub const fn assert_child_lock<C: ?Sized, L: ?Sized + ChildLock<C>>() {}

// The steps of a generated hand-over-hand body, one short call each; all inline away.

/// The lock a stage found for level `level`, or [`Exit::Absent`] (missing).
#[inline(always)]
pub fn found<T>(next: Option<T>, level: usize) -> Result<T, Exit> {
    next.ok_or(Exit::Absent {
        level,
        cause: Absence::Missing,
    })
}

/// `Ok` unless the node just locked at `level` is closed: then [`Exit::Absent`] (closed).
#[inline(always)]
pub fn open(closed: bool, level: usize) -> Result<(), Exit> {
    if closed {
        Err(Exit::Absent {
            level,
            cause: Absence::Closed,
        })
    } else {
        Ok(())
    }
}

/// The guard of a timed acquisition of level `level`, or [`Exit::TimedOut`].
#[inline(always)]
pub fn in_time<G>(guard: Option<G>, level: usize) -> Result<G, Exit> {
    guard.ok_or(Exit::TimedOut { level })
}

/// The leaf lock at the end of each path, in the order of `paths` (the first half of a
/// generated `lock_leaves`); the first path that fails names itself in the error.
///
/// # Errors
///
/// [`LeavesExit::Path`] with the [`Exit`] `find` returned.
#[inline]
pub fn find_leaves<P, L: ?Sized>(
    paths: impl IntoIterator<Item = P>,
    mut find: impl FnMut(P) -> Result<Arc<L>, Exit>,
) -> Result<Vec<Arc<L>>, LeavesExit> {
    let mut handles = Vec::new();
    for (path, keys) in paths.into_iter().enumerate() {
        handles.push(find(keys).map_err(|exit| LeavesExit::Path { path, exit })?);
    }
    Ok(handles)
}

/// `guards` unless one of the leaves is closed (`closed` asks the node): then none stays
/// locked and the error names its path.
///
/// # Errors
///
/// [`LeavesExit::Path`] with [`Exit::Absent`] (closed) at `level`.
#[inline]
pub fn leaves_open<G>(
    guards: Vec<G>,
    level: usize,
    closed: impl FnMut(&G) -> bool,
) -> Result<Vec<G>, LeavesExit> {
    match guards.iter().position(closed) {
        Some(path) => Err(LeavesExit::Path {
            path,
            exit: Exit::Absent {
                level,
                cause: Absence::Closed,
            },
        }),
        None => Ok(guards),
    }
}

// The repeated level of a mixed chain (`Volume, Dir*, File`): a `Walker` walk from the
// first `Dir`, its depths counted from the chain's root.

/// The walk's exit as the chain's: its level offset by `first` (the level of the first
/// repetition, the walk's root), whatever the variant.
#[inline]
#[must_use]
pub fn walk_exit(exit: Exit, first: usize) -> Exit {
    match exit {
        Exit::Absent { level, cause } => Exit::Absent {
            level: first + level,
            cause,
        },
        Exit::TimedOut { level } => Exit::TimedOut {
            level: first + level,
        },
        Exit::Cycle { level } => Exit::Cycle {
            level: first + level,
        },
        Exit::TooDeep { level, max_depth } => Exit::TooDeep {
            level: first + level,
            max_depth,
        },
        // Not from the walks the macro generates (`Shared` or `Exclusive`, whose path is
        // their target), offset all the same.
        Exit::NotExclusive { level } => Exit::NotExclusive {
            level: first + level,
        },
    }
}

/// The depth of the walk's target if the step that answered `step` at `depth` is the last.
#[inline(always)]
pub fn walk_depth<C>(step: &Step<C>, depth: usize) -> usize {
    match step {
        Step::Descend(_) | Step::Target(_) => depth + 1,
        Step::Here | Step::Absent => depth,
    }
}

/// A key step of the repeated level: descend into the child found, or end absent.
#[inline(always)]
pub fn walk_child<C>(child: Option<C>) -> Step<C> {
    child.map_or(Step::Absent, Step::Descend)
}

/// What the stand-in `lock_leaves` of a chain whose leaf is not exclusive requires of its
/// `paths`: implemented by nothing, so that a call is one error in plain words.
#[diagnostic::on_unimplemented(
    message = "`lock_leaves` needs an exclusive leaf: this chain's leaf `{Leaf}` is `shared` or `upgradable`",
    label = "`lock_leaves` locks several leaves for writing at once",
    note = "make the leaf level exclusive (drop its `shared`/`upgradable` modifier), or lock the leaves one at a time with `run_keys`"
)]
pub trait ExclusiveLeaf<Leaf: ?Sized> {}

/// The body of the stand-in `lock_leaves`: never called, its bound cannot hold.
///
/// # Panics
///
/// Always; it cannot be reached, [`ExclusiveLeaf`] having no implementation.
#[cold]
pub fn no_exclusive_leaf<L: ?Sized, P>(root: &Arc<L>, paths: P) -> ! {
    let _ = (root, paths);
    unreachable!("`ExclusiveLeaf` has no implementation")
}

#[cfg(test)]
mod tests {
    use super::{Absence, Exit, walk_exit};

    #[test]
    fn a_walk_exit_becomes_the_chain_exit_at_its_level_from_the_chain_root() {
        let first = 2;
        for (walk, chain) in [
            (
                Exit::Absent {
                    level: 1,
                    cause: Absence::Closed,
                },
                Exit::Absent {
                    level: 3,
                    cause: Absence::Closed,
                },
            ),
            (Exit::TimedOut { level: 0 }, Exit::TimedOut { level: 2 }),
            (Exit::Cycle { level: 4 }, Exit::Cycle { level: 6 }),
            (
                Exit::TooDeep {
                    level: 9,
                    max_depth: 8,
                },
                Exit::TooDeep {
                    level: 11,
                    max_depth: 8,
                },
            ),
            (
                Exit::NotExclusive { level: 1 },
                Exit::NotExclusive { level: 3 },
            ),
        ] {
            assert_eq!(walk_exit(walk, first), chain);
            assert_eq!(walk_exit(walk, first).level(), walk.level() + first);
        }
    }
}
