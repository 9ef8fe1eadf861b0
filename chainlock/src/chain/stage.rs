//! A stage as the one generated body of a chain runs it: the user's closure (`descend`,
//! `run`, their `_until` and async flavors), or the key of a key path (`descend_keys`,
//! `run_keys`, `lock_leaves`, ...), written `(key,)` by the generated code. Either finds the
//! lock of the next level on its level's data, so that the key-path methods call the same
//! body as the closure methods with their keys as they are, instead of a closure built per
//! key. One trait per way a stage sees its level: [`StageS`] (`&P`), [`StageX`] (`&mut P`),
//! [`StageU`] (`&mut Upgradable<L>`). Reached by generated code through `__private`; not
//! public API.
#![expect(
    clippy::inline_always,
    reason = "the generated code's stages must inline into the caller to cost nothing"
)]

use super::link::Link;
use super::{Upgradable, UpgradableLock};
use std::sync::Arc;

/// A stage on a shared level `P` (it sees `&P`): finds the lock `L` of a child `C`, in a
/// chain whose root lock is `A`.
pub trait StageS<A: ?Sized, P: ?Sized, C: ?Sized, L: ?Sized> {
    /// The next level's lock, if there is one.
    fn find(self, node: &P) -> Option<Arc<L>>;
}

/// A stage on an exclusive level `P` (it sees `&mut P`; see [`StageS`]).
pub trait StageX<A: ?Sized, P: ?Sized, C: ?Sized, L: ?Sized> {
    /// The next level's lock, if there is one.
    fn find(self, node: &mut P) -> Option<Arc<L>>;
}

/// A stage on an upgradable level, whose guard `G` is an [`Upgradable`] (it sees `&mut G`;
/// see [`StageS`]).
pub trait StageU<A: ?Sized, G, C: ?Sized, L: ?Sized> {
    /// The next level's lock, if there is one.
    fn find(self, node: &mut G) -> Option<Arc<L>>;
}

impl<F, A: ?Sized, P: ?Sized, C: ?Sized, L: ?Sized> StageS<A, P, C, L> for F
where
    F: FnOnce(&P) -> Option<Arc<L>>,
{
    #[inline(always)]
    fn find(self, node: &P) -> Option<Arc<L>> {
        self(node)
    }
}

impl<F, A: ?Sized, P: ?Sized, C: ?Sized, L: ?Sized> StageX<A, P, C, L> for F
where
    F: FnOnce(&mut P) -> Option<Arc<L>>,
{
    #[inline(always)]
    fn find(self, node: &mut P) -> Option<Arc<L>> {
        self(node)
    }
}

impl<F, A: ?Sized, G, C: ?Sized, L: ?Sized> StageU<A, G, C, L> for F
where
    F: FnOnce(&mut G) -> Option<Arc<L>>,
{
    #[inline(always)]
    fn find(self, node: &mut G) -> Option<Arc<L>> {
        self(node)
    }
}

impl<A: ?Sized + Link<P, C>, P: ?Sized, C: ?Sized> StageS<A, P, C, A::Lock> for (&A::Key,) {
    #[inline(always)]
    fn find(self, node: &P) -> Option<Arc<A::Lock>> {
        A::child(node, self.0)
    }
}

impl<A: ?Sized + Link<P, C>, P: ?Sized, C: ?Sized> StageX<A, P, C, A::Lock> for (&A::Key,) {
    #[inline(always)]
    fn find(self, node: &mut P) -> Option<Arc<A::Lock>> {
        A::child(node, self.0)
    }
}

impl<A, L, C> StageU<A, Upgradable<L>, C, <A as Link<L::Target, C>>::Lock>
    for (&<A as Link<L::Target, C>>::Key,)
where
    A: ?Sized + Link<L::Target, C>,
    L: ?Sized + UpgradableLock,
    C: ?Sized,
{
    #[inline(always)]
    fn find(self, node: &mut Upgradable<L>) -> Option<Arc<<A as Link<L::Target, C>>::Lock>> {
        A::child(node, self.0)
    }
}
