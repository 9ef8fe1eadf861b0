use chainlock::chain_locker;
struct Registry;
pub struct RegistryLocker;
#[automatically_derived]
#[doc(hidden)]
unsafe impl ::core::clone::TrivialClone for RegistryLocker {}
#[automatically_derived]
impl ::core::clone::Clone for RegistryLocker {
    #[inline]
    fn clone(&self) -> RegistryLocker {
        *self
    }
}
#[automatically_derived]
impl ::core::marker::Copy for RegistryLocker {}
#[automatically_derived]
impl ::core::fmt::Debug for RegistryLocker {
    #[inline]
    fn fmt(&self, f: &mut ::core::fmt::Formatter) -> ::core::fmt::Result {
        ::core::fmt::Formatter::write_str(f, "RegistryLocker")
    }
}
#[automatically_derived]
impl ::core::default::Default for RegistryLocker {
    #[inline]
    fn default() -> RegistryLocker {
        RegistryLocker {}
    }
}
const _: () = {
    use ::chainlock::__private as __chainlock;
    #[allow(unused_imports)]
    use __chainlock::{ProbeNode as _, ProbeOther as _};
    #[allow(
        clippy::too_many_arguments,
        clippy::type_complexity,
        clippy::needless_pass_by_value
    )]
    impl RegistryLocker {
        /// The number of levels of this chain, root included.
        pub const DEPTH: usize = 1usize;
        /**Locks `Registry` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
        #[inline]
        pub fn descend<__L0>(
            &self,
            root: &__chainlock::Arc<__L0>,
        ) -> __chainlock::Result<
            <__L0 as __chainlock::ExclusiveLock>::Guard,
            __chainlock::Exit,
        >
        where
            __L0: __chainlock::ExclusiveLock<Target = Registry> + ?::core::marker::Sized,
        {
            let __guard0 = <__L0 as __chainlock::ExclusiveLock>::lock_exclusive(root);
            __chainlock::Ok(__guard0)
        }
        ///Locks `Registry` hand over hand like [`descend`](Self::descend), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
        #[inline]
        pub fn run<__L0, __F, __R>(
            &self,
            root: &__chainlock::Arc<__L0>,
            leaf: __F,
        ) -> __chainlock::Result<__R, __chainlock::Exit>
        where
            __L0: __chainlock::ExclusiveLock<Target = Registry> + ?::core::marker::Sized,
            __F: __chainlock::FnOnce(&mut Registry) -> __R,
        {
            let mut __guard0 = self.descend(root)?;
            __chainlock::Ok(leaf(&mut *__guard0))
        }
        /**Locks `Registry` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]; a lock not taken by `deadline` with [`Exit::TimedOut`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
        #[inline]
        pub fn descend_until<__L0>(
            &self,
            root: &__chainlock::Arc<__L0>,
            deadline: __chainlock::Instant,
        ) -> __chainlock::Result<
            <__L0 as __chainlock::ExclusiveLock>::Guard,
            __chainlock::Exit,
        >
        where
            __L0: __chainlock::TimedExclusiveLock<Target = Registry>
                + ?::core::marker::Sized,
        {
            let __guard0 = match <__L0 as __chainlock::TimedExclusiveLock>::try_lock_exclusive_until(
                root,
                deadline,
            ) {
                __chainlock::Some(guard) => guard,
                __chainlock::None => {
                    return __chainlock::Err(__chainlock::Exit::TimedOut {
                        level: 0usize,
                    });
                }
            };
            __chainlock::Ok(__guard0)
        }
        ///Locks `Registry` hand over hand like [`descend_until`](Self::descend_until), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
        #[inline]
        pub fn run_until<__L0, __F, __R>(
            &self,
            root: &__chainlock::Arc<__L0>,
            deadline: __chainlock::Instant,
            leaf: __F,
        ) -> __chainlock::Result<__R, __chainlock::Exit>
        where
            __L0: __chainlock::TimedExclusiveLock<Target = Registry>
                + ?::core::marker::Sized,
            __F: __chainlock::FnOnce(&mut Registry) -> __R,
        {
            let mut __guard0 = self.descend_until(root, deadline)?;
            __chainlock::Ok(leaf(&mut *__guard0))
        }
        /**Locks `Registry` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
        #[inline]
        pub async fn descend_async<__L0>(
            &self,
            root: &__chainlock::Arc<__L0>,
        ) -> __chainlock::Result<
            <__L0 as __chainlock::AsyncExclusiveLock>::Guard,
            __chainlock::Exit,
        >
        where
            __L0: __chainlock::AsyncExclusiveLock<Target = Registry>
                + ?::core::marker::Sized,
        {
            let __guard0 = <__L0 as __chainlock::AsyncExclusiveLock>::lock_exclusive_async(
                    __chainlock::Arc::clone(root),
                )
                .await;
            __chainlock::Ok(__guard0)
        }
        ///Locks `Registry` hand over hand like [`descend_async`](Self::descend_async), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
        #[inline]
        pub async fn run_async<__L0, __F, __R>(
            &self,
            root: &__chainlock::Arc<__L0>,
            leaf: __F,
        ) -> __chainlock::Result<__R, __chainlock::Exit>
        where
            __L0: __chainlock::AsyncExclusiveLock<Target = Registry>
                + ?::core::marker::Sized,
            __F: __chainlock::FnOnce(&mut Registry) -> __R,
        {
            let mut __guard0 = self.descend_async(root).await?;
            __chainlock::Ok(leaf(&mut *__guard0))
        }
        /**Locks `Registry` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]; a lock not taken by `deadline` with [`Exit::TimedOut`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
        #[inline]
        pub async fn descend_async_until<__L0>(
            &self,
            root: &__chainlock::Arc<__L0>,
            deadline: __chainlock::Instant,
        ) -> __chainlock::Result<
            <__L0 as __chainlock::AsyncExclusiveLock>::Guard,
            __chainlock::Exit,
        >
        where
            __L0: __chainlock::AsyncExclusiveLock<Target = Registry>
                + ?::core::marker::Sized,
        {
            let __guard0 = match <__L0 as __chainlock::AsyncExclusiveLock>::lock_exclusive_async_until(
                    __chainlock::Arc::clone(root),
                    deadline,
                )
                .await
            {
                __chainlock::Some(guard) => guard,
                __chainlock::None => {
                    return __chainlock::Err(__chainlock::Exit::TimedOut {
                        level: 0usize,
                    });
                }
            };
            __chainlock::Ok(__guard0)
        }
        ///Locks `Registry` hand over hand like [`descend_async_until`](Self::descend_async_until), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
        #[inline]
        pub async fn run_async_until<__L0, __F, __R>(
            &self,
            root: &__chainlock::Arc<__L0>,
            deadline: __chainlock::Instant,
            leaf: __F,
        ) -> __chainlock::Result<__R, __chainlock::Exit>
        where
            __L0: __chainlock::AsyncExclusiveLock<Target = Registry>
                + ?::core::marker::Sized,
            __F: __chainlock::FnOnce(&mut Registry) -> __R,
        {
            let mut __guard0 = self.descend_async_until(root, deadline).await?;
            __chainlock::Ok(leaf(&mut *__guard0))
        }
    }
};
