//! The steps of a key path as the code `chain_locker!` and `#[derive(ChainNode)]` generate
//! them: [`Link`] (one step `P` → `C`, named through the chain's root lock) and its bounds,
//! the stages that look a key up, a node's child field by child type ([`ChildField`]) and the
//! check of its lock ([`ChildLock`]).
//! `__private` re-exports them; they are not public API.
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use super::{
    AsyncExclusiveLock, AsyncSharedLock, Children, ChildrenRef, EpochGuard, ExclusiveLock,
    LookupRef, OptimisticLock, SharedLock, TimedExclusiveLock, TimedSharedLock,
    TimedUpgradableLock, Upgradable, UpgradableLock,
};
use std::sync::Arc;

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
    LinkO: OptimisticLock;
}

/// A [`Link`] whose child is lent by reference ([`ChildrenRef`] by the same key): the step
/// of a key path out of an `optimistic` level, which clones no `Arc`.
#[diagnostic::on_unimplemented(
    message = "`{P}` has no children of type `{C}` lent by reference",
    label = "no `ChildrenRef<{C}, _>` impl for its key",
    note = "derive it: `#[derive(ChainNode)]` on `{P}` with `#[chain(children)]` on a field whose container lends by reference (`EpochMap`, `EpochVec`, or a `std` container that never changes while shared)"
)]
pub trait LinkRef<P: ?Sized, C: ?Sized>: Link<P, C> {
    /// [`ChildrenRef::child_ref`] by the step's key.
    fn child_ref<'g>(
        node: &'g P,
        key: &Self::Key,
        guard: &'g EpochGuard,
    ) -> Option<&'g Arc<Self::Lock>>;
}

impl<A, P, C> LinkRef<P, C> for A
where
    A: ?Sized,
    P: ?Sized
        + Children<C>
        + ChildrenRef<C, <P as Children<C>>::Key, Lock = <P as Children<C>>::Lock>,
    C: ?Sized,
{
    #[inline(always)]
    fn child_ref<'g>(
        node: &'g P,
        key: &<P as Children<C>>::Key,
        guard: &'g EpochGuard,
    ) -> Option<&'g Arc<<P as Children<C>>::Lock>> {
        ChildrenRef::child_ref(node, key, guard)
    }
}

/// A key-path stage on an `optimistic` level: lends the child found under `key` (see
/// [`LinkRef`]); it may run once per pass.
#[inline(always)]
pub fn key_opt<A, P, C>(
    key: &A::Key,
) -> impl for<'g> FnMut(&'g P, &'g EpochGuard) -> Option<&'g Arc<A::Lock>>
where
    A: ?Sized + LinkRef<P, C>,
    P: ?Sized,
    C: ?Sized,
{
    move |node, guard| A::child_ref(node, key, guard)
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

/// The `#[chain(children)]` field of a node that holds its children of type `C`: the one
/// impl `#[derive(ChainNode)]` writes per child field. The node's `Children`, `ChildrenBy`
/// and `ChildrenRef` impls are written once per node, generic over `C`, through it, so that
/// two fields of one child type (spelled two ways, or a generic child that may be the other
/// field's) are one conflict of this trait, reported at the two fields, and not one per
/// lookup trait.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no children of type `{C}`",
    label = "no `#[chain(children)]` field of `{C}` locks",
    note = "`#[derive(ChainNode)]` implements `Children<{C}>` for `{Self}` when a `#[chain(children)]` field holds the `{C}` locks; or descend with closures (`run`/`descend`)"
)]
pub trait ChildField<C: ?Sized> {
    /// The field's container (a [`ChildContainer`](super::ChildContainer), checked where the
    /// field is declared).
    type Container: ?Sized;
    /// The field.
    fn field(&self) -> &Self::Container;
    /// [`LookupRef::lookup_ref`] on the field (written per field, where the container's type
    /// is known to live as long as the node).
    fn field_ref<'g, Q: ?Sized>(
        &'g self,
        key: &Q,
        guard: &'g EpochGuard,
    ) -> Option<&'g Arc<<Self::Container as LookupRef<Q>>::Lock>>
    where
        Self::Container: LookupRef<Q>;
}

/// What the derive checks of each child field: its lock locks the child type. Checked where
/// the field is declared, so that `child = Lecture` on a field of `Class` locks, or a
/// `Vec` taken for a lock, is reported at the field and not at a later call.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a lock around `{C}`",
    label = "the children here are not `{C}`s behind a chain lock",
    note = "a child field holds `Arc<L>` (in a `Vec`, map, `Option`, ..) where `L` is a parking_lot/lock_api `Mutex`/`RwLock`, a tokio `Mutex`/`RwLock`, a `HybridLock`, or implements `chainlock::chain::ExclusiveLock`, with `Target` the child type; `child = T` names the type inside the lock"
)]
pub trait ChildLock<C: ?Sized> {}

impl<L: ?Sized + ExclusiveLock> ChildLock<L::Target> for L {}

// The children of an optimistic reader's node (`EpochMap<K, HybridLock<C>>`).
impl<T: ?Sized> ChildLock<T> for crate::hybrid::HybridLock<T> {}

#[cfg(feature = "tokio")]
impl<T: ?Sized> ChildLock<T> for tokio::sync::Mutex<T> {}

#[cfg(feature = "tokio")]
impl<T: ?Sized> ChildLock<T> for tokio::sync::RwLock<T> {}

/// Compiles only when `L` locks a `C` (see [`ChildLock`]); free at run time.
#[inline(always)]
pub const fn assert_child_lock<C: ?Sized, L: ?Sized + ChildLock<C>>() {}
