//! The steps of a key path as the code `chain_locker!` and `#[derive(ChainNode)]` generate
//! them: [`Link`] (one step `P` → `C`, named through the chain's root lock) and its bounds,
//! the stages that look a key up, a node's child field by child type ([`ChildField`]) and the
//! check of its lock ([`ChildLock`]).
//! `Link` and its forms by level mode (`SharedLink`, ...), `LinkRef`, `ChildField` and
//! `ChildLock` are public in [`chain`](super), where rustc's messages name them (implemented
//! by the macros and chainlock, never by hand); the stages and the aliases reach generated
//! code through `__private` only.
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

/// One step of a key path, `P` → `C`: a `P` node's [`Children<C>`], named through the
/// chain's root lock `A` (any type). What the key-path methods of a generated locker
/// (`run_keys`, `descend_keys`, `lock_leaves`) require of each step; a compiler error that
/// says "required for `Mutex<.., Registry>` to implement `Link<Registry, Lecture>`" means
/// that `Registry` has no `Children<Lecture>` impl: derive it (`#[derive(ChainNode)]` with a
/// `#[chain(children)]` field of `Lecture` locks) or descend with closures (`run`,
/// `descend`).
///
/// Implemented for every type, whenever `P: Children<C>`: you never implement it.
///
/// The root lock is the methods' one generic parameter, so a bound `A: Link<P, C>` is checked
/// at the call and not where the locker is defined (a chain whose types have no `Children`
/// impls still compiles), and every later level's lock is the projection
/// `<A as Link<P, C>>::Lock`: the same node type spelled two ways (`Dir`, `self::Dir`, an
/// alias) is one type to the compiler, never two parameters to unify.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{ExclusiveLink, Link, TimedExclusiveLink};
/// use chainlock::parking_lot::Mutex;
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// #[derive(ChainNode)]
/// struct Registry {
///     #[chain(children)]
///     lectures: Vec<Arc<Mutex<Lecture>>>,
/// }
/// struct Lecture;
///
/// let registry = Registry { lectures: vec![Arc::new(Mutex::new(Lecture))] };
/// // The step a key path takes from a `Registry` to its `Lecture` under key 0:
/// assert!(<Mutex<Registry> as Link<Registry, Lecture>>::child(&registry, &0).is_some());
/// assert!(<Mutex<Registry> as Link<Registry, Lecture>>::child(&registry, &1).is_none());
///
/// // Into an exclusive `Lecture` level, with or without a deadline; not into a `shared`
/// // one, a `Mutex` having no read mode (`SharedLink` does not hold).
/// fn exclusive_step<A: ExclusiveLink<Registry, Lecture> + TimedExclusiveLink<Registry, Lecture>>() {}
/// exclusive_step::<Mutex<Registry>>();
/// ```
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
    /// [`Children::child`]: the lock of the child under `key`, if there is one.
    ///
    /// # Examples
    ///
    /// See [`Link`].
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
/// key-path method (`A: SharedLink<P, C>` for a `shared` child, ...); implied by and
/// implying `A: Link<P, C, Lock: Trait<Target = C>>`. `__private` names them `LinkX`,
/// `LinkS`, ... for the generated code.
macro_rules! links {
    ($($name:ident: $lock:ident, $level:literal;)*) => {$(
        #[doc = concat!(
            "A [`Link`] into ", $level, ": the step's child lock is a [`", stringify!($lock),
            "`] around `C` (`Link<P, C, Lock: ", stringify!($lock), "<Target = C>>`). What the \
             key-path methods of a generated locker require of such a step; a compiler error \
             that says \"required for `..` to implement `", stringify!($name), "<P, C>`\" \
             comes with the reason, the child lock's missing `", stringify!($lock), "`.\n\n\
             Implemented for every type whenever its `Link` is: you never implement it.\n\n\
             # Examples\n\nSee [`Link`]."
        )]
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
    ExclusiveLink: ExclusiveLock, "an exclusive level";
    SharedLink: SharedLock, "a `shared` level";
    TimedExclusiveLink: TimedExclusiveLock, "an exclusive level, with a deadline (`_until`)";
    TimedSharedLink: TimedSharedLock, "a `shared` level, with a deadline (`_until`)";
    AsyncExclusiveLink: AsyncExclusiveLock, "an exclusive level of an async descent";
    AsyncSharedLink: AsyncSharedLock, "a `shared` level of an async descent";
    UpgradableLink: UpgradableLock, "an `upgradable` level";
    TimedUpgradableLink: TimedUpgradableLock, "an `upgradable` level, with a deadline (`_until`)";
    OptimisticLink: OptimisticLock, "an `optimistic` level";
}

/// A [`Link`] whose child is lent by reference ([`ChildrenRef`] by the same key): the step
/// of a key path out of an `optimistic` level, which clones no `Arc`.
///
/// Implemented for every type whenever `P` implements both `Children<C>` and
/// `ChildrenRef<C, Key>` by the same key (as `#[derive(ChainNode)]` does for a field whose
/// container lends by reference): you never implement it.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{EpochGuard, EpochMap, LinkRef};
/// use chainlock::hybrid::HybridLock;
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// #[derive(ChainNode)]
/// struct Registry {
///     #[chain(children)]
///     lectures: EpochMap<u32, HybridLock<Lecture>>,
/// }
/// struct Lecture;
///
/// let registry = Registry { lectures: EpochMap::new() };
/// registry.lectures.insert(7, Arc::new(HybridLock::new(Lecture)));
/// let guard = EpochGuard::pin();
/// let step = <HybridLock<Registry> as LinkRef<Registry, Lecture>>::child_ref;
/// assert!(step(&registry, &7, &guard).is_some());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{P}` has no children of type `{C}` lent by reference",
    label = "no `ChildrenRef<{C}, _>` impl for its key",
    note = "derive it: `#[derive(ChainNode)]` on `{P}` with `#[chain(children)]` on a field whose container lends by reference (`EpochMap`, `EpochVec`, or a `std` container that never changes while shared)"
)]
pub trait LinkRef<P: ?Sized, C: ?Sized>: Link<P, C> {
    /// [`ChildrenRef::child_ref`] by the step's key: the child's `Arc`, lent while `node`
    /// and `guard` are borrowed.
    ///
    /// # Examples
    ///
    /// See [`LinkRef`].
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
/// impl `#[derive(ChainNode)]` writes per child field, through which it implements the node's
/// [`Children<C>`], [`ChildrenBy<C, Q>`](super::ChildrenBy) and
/// [`ChildrenRef<C, Q>`](super::ChildrenRef) (once per node, generic over `C`). Implemented by
/// the derive: you never implement it (implement `Children` by hand instead).
///
/// **One field per child type.** A node has at most one `ChildField<C>` per child type `C`,
/// so two `#[chain(children)]` fields whose children are the same type conflict: "conflicting
/// implementations of trait `ChildField<Class>` for type `Lecture`", at the two fields. The
/// derive tells fields apart by how their child type is written, so it reports the same
/// spelling twice itself; it cannot see that an alias (`type Section = Class`) or another
/// path names the same type, nor that a generic child `T` may be the other field's `u32`.
/// Write the same child type on both fields (`#[chain(children, child = Class)]`) and mark
/// the one a descent by type uses `#[chain(children, default)]` (the other is reached by
/// name, `lecture.sections.lookup(&key)`), or give one field a child type of its own (a
/// newtype around it), or leave `#[chain(children)]` off one of them.
///
/// # Examples
///
/// ```
/// use chainlock::chain::{ChildField, Children};
/// use chainlock::parking_lot::Mutex;
/// use chainlock::ChainNode;
/// use std::sync::Arc;
///
/// #[derive(ChainNode)]
/// struct Lecture {
///     #[chain(children)]
///     classes: Vec<Arc<Mutex<Class>>>,
/// }
/// struct Class;
///
/// let lecture = Lecture { classes: vec![Arc::new(Mutex::new(Class))] };
/// // The derived field, and the `Children` impl that goes through it:
/// assert_eq!(ChildField::<Class>::field(&lecture).len(), 1);
/// assert!(Children::<Class>::child(&lecture, &0).is_some());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no children of type `{C}`",
    label = "no `#[chain(children)]` field of `{C}` locks",
    note = "`#[derive(ChainNode)]` implements `Children<{C}>` for `{Self}` when a `#[chain(children)]` field holds the `{C}` locks; or descend with closures (`run`/`descend`)"
)]
pub trait ChildField<C: ?Sized> {
    /// The field's container: a [`ChildContainer`](super::ChildContainer) of locks around
    /// `C` ([`ChildLock<C>`]), checked where the field is declared, so that `child = Lecture`
    /// on a field of `Class` locks, or a `Vec` taken for a lock, is reported at the field and
    /// not at a later call.
    type Container: ?Sized + super::ChildContainer<Lock: ChildLock<C>>;

    /// The field.
    ///
    /// # Examples
    ///
    /// See [`ChildField`].
    fn field(&self) -> &Self::Container;

    /// [`LookupRef::lookup_ref`] on the field (written per field, where the container's type
    /// is known to live as long as the node).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::chain::{ChildField, EpochGuard, EpochMap};
    /// use chainlock::hybrid::HybridLock;
    /// use chainlock::ChainNode;
    /// use std::sync::Arc;
    ///
    /// #[derive(ChainNode)]
    /// struct Dir {
    ///     #[chain(children)]
    ///     entries: EpochMap<String, HybridLock<Dir>>,
    /// }
    ///
    /// let root = Dir { entries: EpochMap::new() };
    /// root.entries.insert("usr".into(), Arc::new(HybridLock::new(Dir { entries: EpochMap::new() })));
    /// let guard = EpochGuard::pin();
    /// assert!(ChildField::<Dir>::field_ref(&root, "usr", &guard).is_some());
    /// ```
    fn field_ref<'g, Q: ?Sized>(
        &'g self,
        key: &Q,
        guard: &'g EpochGuard,
    ) -> Option<&'g Arc<<Self::Container as LookupRef<Q>>::Lock>>
    where
        Self::Container: LookupRef<Q>;
}

/// A lock around a `C`: what each `#[chain(children)]` field's locks must be
/// ([`ChildField::Container`]). A compiler error "`Vec<Student>` is not a lock around
/// `Student`" at a field means that the field's container does not hold `Arc`s of a chain
/// lock whose data is the child type.
///
/// Implemented for every [`ExclusiveLock`] (the parking_lot and lock_api `Mutex` and
/// `RwLock`; your own lock through `ExclusiveLock`) with `Target = C`, for
/// [`HybridLock<C>`](crate::hybrid::HybridLock), and with the `tokio` feature for tokio's
/// `Mutex<C>` and `RwLock<C>`: you never implement it.
///
/// # Examples
///
/// ```
/// use chainlock::chain::ChildLock;
/// use chainlock::hybrid::HybridLock;
/// use chainlock::parking_lot::{Mutex, RwLock};
///
/// fn locks_a<C, L: ChildLock<C>>() {}
/// locks_a::<u32, Mutex<u32>>();
/// locks_a::<u32, RwLock<u32>>();
/// locks_a::<u32, HybridLock<u32>>();
/// ```
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
