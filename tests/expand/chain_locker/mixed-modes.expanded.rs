use chainlock::chain_locker;
struct Registry;
struct Lecture;
struct Class;
fn main() {
    let _locker = {
        struct __ChainLocker;
        #[automatically_derived]
        #[doc(hidden)]
        unsafe impl ::core::clone::TrivialClone for __ChainLocker {}
        #[automatically_derived]
        impl ::core::clone::Clone for __ChainLocker {
            #[inline]
            fn clone(&self) -> __ChainLocker {
                *self
            }
        }
        #[automatically_derived]
        impl ::core::marker::Copy for __ChainLocker {}
        #[automatically_derived]
        impl ::core::fmt::Debug for __ChainLocker {
            #[inline]
            fn fmt(&self, f: &mut ::core::fmt::Formatter) -> ::core::fmt::Result {
                ::core::fmt::Formatter::write_str(f, "__ChainLocker")
            }
        }
        #[automatically_derived]
        impl ::core::default::Default for __ChainLocker {
            #[inline]
            fn default() -> __ChainLocker {
                __ChainLocker {}
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
            impl __ChainLocker {
                /// The number of levels of this chain, root included.
                const DEPTH: usize = 3usize;
                /**Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
                #[inline]
                fn descend<__L0, __L1, __L2, __S0, __S1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    stage0: __S0,
                    stage1: __S1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::ExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::SharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::SharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::ExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                {
                    let __guard0 = <__L0 as __chainlock::SharedLock>::lock_shared(root);
                    let __next = match stage0(&*__guard0) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 0usize,
                            });
                        }
                    };
                    let __guard1 = <__L1 as __chainlock::SharedLock>::lock_shared(
                        &__next,
                    );
                    ::core::mem::drop(__guard0);
                    if (&__chainlock::ClosedProbe(&*__guard1)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 1usize,
                        });
                    }
                    let __next = match stage1(&*__guard1) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 1usize,
                            });
                        }
                    };
                    let __guard2 = <__L2 as __chainlock::ExclusiveLock>::lock_exclusive(
                        &__next,
                    );
                    ::core::mem::drop(__guard1);
                    if (&__chainlock::ClosedProbe(&*__guard2)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 2usize,
                        });
                    }
                    __chainlock::Ok(__guard2)
                }
                ///Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand like [`descend`](Self::descend), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
                #[inline]
                fn run<__L0, __L1, __L2, __S0, __S1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    stage0: __S0,
                    stage1: __S1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::SharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::SharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::ExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    let mut __guard2 = self.descend(root, stage0, stage1)?;
                    __chainlock::Ok(leaf(&mut *__guard2))
                }
                ///Like [`descend`](Self::descend), each stage looking the next level up by key (`key{i}` on level `i`, through [`Children`](::chainlock::chain::Children), which `#[derive(ChainNode)]` implements): locks `Registry` (shared) → `Lecture` (shared) → `Class` and returns the leaf's owned guard.
                #[inline]
                fn descend_keys<__L0, __L1, __L2, __K0, __K1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    key0: &__K0,
                    key1: &__K1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::ExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::SharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::SharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::ExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                {
                    self.descend(
                        root,
                        |node: &Registry| <<__L0 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Lecture,
                        >>::child(&*node, key0),
                        |node: &Lecture| <<__L1 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Class,
                        >>::child(&*node, key1),
                    )
                }
                ///Like [`run`](Self::run), each stage looking the next level up by key: locks `Registry` (shared) → `Lecture` (shared) → `Class`, runs `leaf` on the leaf and releases it.
                #[inline]
                fn run_keys<__L0, __L1, __L2, __K0, __K1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    key0: &__K0,
                    key1: &__K1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::SharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::SharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::ExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    self.run(
                        root,
                        |node: &Registry| <<__L0 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Lecture,
                        >>::child(&*node, key0),
                        |node: &Lecture| <<__L1 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Class,
                        >>::child(&*node, key1),
                        leaf,
                    )
                }
                /**Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]; a lock not taken by `deadline` with [`Exit::TimedOut`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
                #[inline]
                fn descend_until<__L0, __L1, __L2, __S0, __S1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    stage0: __S0,
                    stage1: __S1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::ExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::TimedSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::TimedSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::TimedExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                {
                    let __guard0 = match <__L0 as __chainlock::TimedSharedLock>::try_lock_shared_until(
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
                    let __next = match stage0(&*__guard0) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 0usize,
                            });
                        }
                    };
                    let __guard1 = match <__L1 as __chainlock::TimedSharedLock>::try_lock_shared_until(
                        &__next,
                        deadline,
                    ) {
                        __chainlock::Some(guard) => guard,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::TimedOut {
                                level: 1usize,
                            });
                        }
                    };
                    ::core::mem::drop(__guard0);
                    if (&__chainlock::ClosedProbe(&*__guard1)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 1usize,
                        });
                    }
                    let __next = match stage1(&*__guard1) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 1usize,
                            });
                        }
                    };
                    let __guard2 = match <__L2 as __chainlock::TimedExclusiveLock>::try_lock_exclusive_until(
                        &__next,
                        deadline,
                    ) {
                        __chainlock::Some(guard) => guard,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::TimedOut {
                                level: 2usize,
                            });
                        }
                    };
                    ::core::mem::drop(__guard1);
                    if (&__chainlock::ClosedProbe(&*__guard2)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 2usize,
                        });
                    }
                    __chainlock::Ok(__guard2)
                }
                ///Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand like [`descend_until`](Self::descend_until), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
                #[inline]
                fn run_until<__L0, __L1, __L2, __S0, __S1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    stage0: __S0,
                    stage1: __S1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::TimedSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::TimedSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::TimedExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    let mut __guard2 = self
                        .descend_until(root, deadline, stage0, stage1)?;
                    __chainlock::Ok(leaf(&mut *__guard2))
                }
                ///Like [`descend_until`](Self::descend_until), each stage looking the next level up by key (`key{i}` on level `i`, through [`Children`](::chainlock::chain::Children), which `#[derive(ChainNode)]` implements): locks `Registry` (shared) → `Lecture` (shared) → `Class` and returns the leaf's owned guard.
                #[inline]
                fn descend_keys_until<__L0, __L1, __L2, __K0, __K1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    key0: &__K0,
                    key1: &__K1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::ExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::TimedSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::TimedSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::TimedExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                {
                    self.descend_until(
                        root,
                        deadline,
                        |node: &Registry| <<__L0 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Lecture,
                        >>::child(&*node, key0),
                        |node: &Lecture| <<__L1 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Class,
                        >>::child(&*node, key1),
                    )
                }
                ///Like [`run_until`](Self::run_until), each stage looking the next level up by key: locks `Registry` (shared) → `Lecture` (shared) → `Class`, runs `leaf` on the leaf and releases it.
                #[inline]
                fn run_keys_until<__L0, __L1, __L2, __K0, __K1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    key0: &__K0,
                    key1: &__K1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::TimedSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::TimedSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::TimedExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    self.run_until(
                        root,
                        deadline,
                        |node: &Registry| <<__L0 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Lecture,
                        >>::child(&*node, key0),
                        |node: &Lecture| <<__L1 as __chainlock::SharedLock>::Target as __chainlock::Children<
                            Class,
                        >>::child(&*node, key1),
                        leaf,
                    )
                }
                /**Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
                #[inline]
                async fn descend_async<__L0, __L1, __L2, __S0, __S1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    stage0: __S0,
                    stage1: __S1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::AsyncExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                {
                    let __guard0 = <__L0 as __chainlock::AsyncSharedLock>::lock_shared_async(
                            __chainlock::Arc::clone(root),
                        )
                        .await;
                    let __next = match stage0(&*__guard0) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 0usize,
                            });
                        }
                    };
                    let __guard1 = <__L1 as __chainlock::AsyncSharedLock>::lock_shared_async(
                            __next,
                        )
                        .await;
                    ::core::mem::drop(__guard0);
                    if (&__chainlock::ClosedProbe(&*__guard1)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 1usize,
                        });
                    }
                    let __next = match stage1(&*__guard1) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 1usize,
                            });
                        }
                    };
                    let __guard2 = <__L2 as __chainlock::AsyncExclusiveLock>::lock_exclusive_async(
                            __next,
                        )
                        .await;
                    ::core::mem::drop(__guard1);
                    if (&__chainlock::ClosedProbe(&*__guard2)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 2usize,
                        });
                    }
                    __chainlock::Ok(__guard2)
                }
                ///Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand like [`descend_async`](Self::descend_async), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
                #[inline]
                async fn run_async<__L0, __L1, __L2, __S0, __S1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    stage0: __S0,
                    stage1: __S1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    let mut __guard2 = self.descend_async(root, stage0, stage1).await?;
                    __chainlock::Ok(leaf(&mut *__guard2))
                }
                ///Like [`descend_async`](Self::descend_async), each stage looking the next level up by key (`key{i}` on level `i`, through [`Children`](::chainlock::chain::Children), which `#[derive(ChainNode)]` implements): locks `Registry` (shared) → `Lecture` (shared) → `Class` and returns the leaf's owned guard.
                #[inline]
                async fn descend_keys_async<__L0, __L1, __L2, __K0, __K1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    key0: &__K0,
                    key1: &__K1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::AsyncExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                {
                    self.descend_async(
                            root,
                            |node: &Registry| <<__L0 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Lecture,
                            >>::child(&*node, key0),
                            |node: &Lecture| <<__L1 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Class,
                            >>::child(&*node, key1),
                        )
                        .await
                }
                ///Like [`run_async`](Self::run_async), each stage looking the next level up by key: locks `Registry` (shared) → `Lecture` (shared) → `Class`, runs `leaf` on the leaf and releases it.
                #[inline]
                async fn run_keys_async<__L0, __L1, __L2, __K0, __K1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    key0: &__K0,
                    key1: &__K1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    self.run_async(
                            root,
                            |node: &Registry| <<__L0 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Lecture,
                            >>::child(&*node, key0),
                            |node: &Lecture| <<__L1 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Class,
                            >>::child(&*node, key1),
                            leaf,
                        )
                        .await
                }
                /**Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand and returns the leaf's owned guard, with only the leaf still locked.

Stage `i` runs on level `i` and returns the lock of level `i + 1`, which is acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a closed level ([`ChainNode`]) with [`Exit::Closed`]; a lock not taken by `deadline` with [`Exit::TimedOut`]. Every lock taken is released before an `Err` is returned, and on panic.

[`Exit::Absent`]: ::chainlock::Exit::Absent
[`Exit::Closed`]: ::chainlock::Exit::Closed
[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut
[`ChainNode`]: ::chainlock::ChainNode*/
                #[inline]
                async fn descend_async_until<__L0, __L1, __L2, __S0, __S1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    stage0: __S0,
                    stage1: __S1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::AsyncExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                {
                    let __guard0 = match <__L0 as __chainlock::AsyncSharedLock>::lock_shared_async_until(
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
                    let __next = match stage0(&*__guard0) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 0usize,
                            });
                        }
                    };
                    let __guard1 = match <__L1 as __chainlock::AsyncSharedLock>::lock_shared_async_until(
                            __next,
                            deadline,
                        )
                        .await
                    {
                        __chainlock::Some(guard) => guard,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::TimedOut {
                                level: 1usize,
                            });
                        }
                    };
                    ::core::mem::drop(__guard0);
                    if (&__chainlock::ClosedProbe(&*__guard1)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 1usize,
                        });
                    }
                    let __next = match stage1(&*__guard1) {
                        __chainlock::Some(next) => next,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::Absent {
                                stage: 1usize,
                            });
                        }
                    };
                    let __guard2 = match <__L2 as __chainlock::AsyncExclusiveLock>::lock_exclusive_async_until(
                            __next,
                            deadline,
                        )
                        .await
                    {
                        __chainlock::Some(guard) => guard,
                        __chainlock::None => {
                            return __chainlock::Err(__chainlock::Exit::TimedOut {
                                level: 2usize,
                            });
                        }
                    };
                    ::core::mem::drop(__guard1);
                    if (&__chainlock::ClosedProbe(&*__guard2)).level_is_closed() {
                        return __chainlock::Err(__chainlock::Exit::Closed {
                            level: 2usize,
                        });
                    }
                    __chainlock::Ok(__guard2)
                }
                ///Locks `Registry` (shared) → `Lecture` (shared) → `Class` hand over hand like [`descend_async_until`](Self::descend_async_until), runs `leaf` on the leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that ended the descent early.
                #[inline]
                async fn run_async_until<__L0, __L1, __L2, __S0, __S1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    stage0: __S0,
                    stage1: __S1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __S0: __chainlock::FnOnce(
                        &Registry,
                    ) -> __chainlock::Option<__chainlock::Arc<__L1>>,
                    __S1: __chainlock::FnOnce(
                        &Lecture,
                    ) -> __chainlock::Option<__chainlock::Arc<__L2>>,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    let mut __guard2 = self
                        .descend_async_until(root, deadline, stage0, stage1)
                        .await?;
                    __chainlock::Ok(leaf(&mut *__guard2))
                }
                ///Like [`descend_async_until`](Self::descend_async_until), each stage looking the next level up by key (`key{i}` on level `i`, through [`Children`](::chainlock::chain::Children), which `#[derive(ChainNode)]` implements): locks `Registry` (shared) → `Lecture` (shared) → `Class` and returns the leaf's owned guard.
                #[inline]
                async fn descend_keys_async_until<__L0, __L1, __L2, __K0, __K1>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    key0: &__K0,
                    key1: &__K1,
                ) -> __chainlock::Result<
                    <__L2 as __chainlock::AsyncExclusiveLock>::Guard,
                    __chainlock::Exit,
                >
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                {
                    self.descend_async_until(
                            root,
                            deadline,
                            |node: &Registry| <<__L0 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Lecture,
                            >>::child(&*node, key0),
                            |node: &Lecture| <<__L1 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Class,
                            >>::child(&*node, key1),
                        )
                        .await
                }
                ///Like [`run_async_until`](Self::run_async_until), each stage looking the next level up by key: locks `Registry` (shared) → `Lecture` (shared) → `Class`, runs `leaf` on the leaf and releases it.
                #[inline]
                async fn run_keys_async_until<__L0, __L1, __L2, __K0, __K1, __F, __R>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    key0: &__K0,
                    key1: &__K1,
                    leaf: __F,
                ) -> __chainlock::Result<__R, __chainlock::Exit>
                where
                    __L0: __chainlock::AsyncSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::AsyncSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::AsyncExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::AsyncSharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                    __F: __chainlock::FnOnce(&mut Class) -> __R,
                {
                    self.run_async_until(
                            root,
                            deadline,
                            |node: &Registry| <<__L0 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Lecture,
                            >>::child(&*node, key0),
                            |node: &Lecture| <<__L1 as __chainlock::AsyncSharedLock>::Target as __chainlock::Children<
                                Class,
                            >>::child(&*node, key1),
                            leaf,
                        )
                        .await
                }
                /**Locks the leaves at the end of several key paths of `Registry` (shared) → `Lecture` (shared) → `Class` at once, all or nothing, and returns their guards in the order of `paths`.

Each leaf's lock is found hand over hand and its parents released; then the leaves are locked in one global order (by address), holding nothing else, so that threads locking overlapping sets in any order never deadlock. If any path is absent or closed, nothing stays locked and the [`PathExit`](::chainlock::chain::PathExit) names the path and why. Two paths to the same leaf give [`Exit::SameLeaf`](::chainlock::Exit::SameLeaf).*/
                fn lock_leaves<'__path, __L0, __L1, __L2, __K0, __K1, __P>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    paths: __P,
                ) -> __chainlock::Result<
                    __chainlock::Vec<<__L2 as __chainlock::ExclusiveLock>::Guard>,
                    __chainlock::PathExit,
                >
                where
                    __L0: __chainlock::SharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::SharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::ExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                    __L2: __chainlock::ExclusiveLock,
                    __P: ::core::iter::IntoIterator<
                        Item = (&'__path __K0, &'__path __K1),
                    >,
                    __K0: '__path,
                    __K1: '__path,
                {
                    let mut handles = __chainlock::Vec::new();
                    let paths = ::core::iter::IntoIterator::into_iter(paths);
                    for (path, (key0, key1)) in ::core::iter::Iterator::enumerate(
                        paths,
                    ) {
                        let found = (|| {
                            let __guard0 = <__L0 as __chainlock::SharedLock>::lock_shared(
                                root,
                            );
                            let __next = match <<__L0 as __chainlock::SharedLock>::Target as __chainlock::Children<
                                Lecture,
                            >>::child(&*__guard0, key0) {
                                __chainlock::Some(next) => next,
                                __chainlock::None => {
                                    return __chainlock::Err(__chainlock::Exit::Absent {
                                        stage: 0usize,
                                    });
                                }
                            };
                            let __guard1 = <__L1 as __chainlock::SharedLock>::lock_shared(
                                &__next,
                            );
                            ::core::mem::drop(__guard0);
                            if (&__chainlock::ClosedProbe(&*__guard1)).level_is_closed()
                            {
                                return __chainlock::Err(__chainlock::Exit::Closed {
                                    level: 1usize,
                                });
                            }
                            match <<__L1 as __chainlock::SharedLock>::Target as __chainlock::Children<
                                Class,
                            >>::child(&*__guard1, key1) {
                                __chainlock::Some(handle) => __chainlock::Ok(handle),
                                __chainlock::None => {
                                    __chainlock::Err(__chainlock::Exit::Absent {
                                        stage: 1usize,
                                    })
                                }
                            }
                        })();
                        match found {
                            __chainlock::Ok(handle) => handles.push(handle),
                            __chainlock::Err(exit) => {
                                return __chainlock::Err(__chainlock::PathExit {
                                    path,
                                    exit,
                                });
                            }
                        }
                    }
                    let guards = __chainlock::lock_leaves(&handles, 2usize)?;
                    let closed = guards
                        .iter()
                        .position(|guard| {
                            (&__chainlock::ClosedProbe(&**guard)).level_is_closed()
                        });
                    if let __chainlock::Some(path) = closed {
                        let exit = __chainlock::Exit::Closed {
                            level: 2usize,
                        };
                        return __chainlock::Err(__chainlock::PathExit {
                            path,
                            exit,
                        });
                    }
                    __chainlock::Ok(guards)
                }
                /**Locks the leaves at the end of several key paths of `Registry` (shared) → `Lecture` (shared) → `Class` at once, all or nothing, and returns their guards in the order of `paths`.

Each leaf's lock is found hand over hand and its parents released; then the leaves are locked in one global order (by address), holding nothing else, so that threads locking overlapping sets in any order never deadlock. If any path is absent or closed, or the deadline passes, nothing stays locked and the [`PathExit`](::chainlock::chain::PathExit) names the path and why. Two paths to the same leaf give [`Exit::SameLeaf`](::chainlock::Exit::SameLeaf).*/
                fn lock_leaves_until<'__path, __L0, __L1, __L2, __K0, __K1, __P>(
                    &self,
                    root: &__chainlock::Arc<__L0>,
                    deadline: __chainlock::Instant,
                    paths: __P,
                ) -> __chainlock::Result<
                    __chainlock::Vec<<__L2 as __chainlock::ExclusiveLock>::Guard>,
                    __chainlock::PathExit,
                >
                where
                    __L0: __chainlock::TimedSharedLock<Target = Registry>
                        + ?::core::marker::Sized,
                    __L1: __chainlock::TimedSharedLock<Target = Lecture>
                        + ?::core::marker::Sized,
                    __L2: __chainlock::TimedExclusiveLock<Target = Class>
                        + ?::core::marker::Sized,
                    __K0: ?::core::marker::Sized,
                    <__L0 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Lecture,
                        Key = __K0,
                        Lock = __L1,
                    >,
                    __K1: ?::core::marker::Sized,
                    <__L1 as __chainlock::SharedLock>::Target: __chainlock::Children<
                        Class,
                        Key = __K1,
                        Lock = __L2,
                    >,
                    __L2: __chainlock::ExclusiveLock,
                    __P: ::core::iter::IntoIterator<
                        Item = (&'__path __K0, &'__path __K1),
                    >,
                    __K0: '__path,
                    __K1: '__path,
                {
                    let mut handles = __chainlock::Vec::new();
                    let paths = ::core::iter::IntoIterator::into_iter(paths);
                    for (path, (key0, key1)) in ::core::iter::Iterator::enumerate(
                        paths,
                    ) {
                        let found = (|| {
                            let __guard0 = match <__L0 as __chainlock::TimedSharedLock>::try_lock_shared_until(
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
                            let __next = match <<__L0 as __chainlock::SharedLock>::Target as __chainlock::Children<
                                Lecture,
                            >>::child(&*__guard0, key0) {
                                __chainlock::Some(next) => next,
                                __chainlock::None => {
                                    return __chainlock::Err(__chainlock::Exit::Absent {
                                        stage: 0usize,
                                    });
                                }
                            };
                            let __guard1 = match <__L1 as __chainlock::TimedSharedLock>::try_lock_shared_until(
                                &__next,
                                deadline,
                            ) {
                                __chainlock::Some(guard) => guard,
                                __chainlock::None => {
                                    return __chainlock::Err(__chainlock::Exit::TimedOut {
                                        level: 1usize,
                                    });
                                }
                            };
                            ::core::mem::drop(__guard0);
                            if (&__chainlock::ClosedProbe(&*__guard1)).level_is_closed()
                            {
                                return __chainlock::Err(__chainlock::Exit::Closed {
                                    level: 1usize,
                                });
                            }
                            match <<__L1 as __chainlock::SharedLock>::Target as __chainlock::Children<
                                Class,
                            >>::child(&*__guard1, key1) {
                                __chainlock::Some(handle) => __chainlock::Ok(handle),
                                __chainlock::None => {
                                    __chainlock::Err(__chainlock::Exit::Absent {
                                        stage: 1usize,
                                    })
                                }
                            }
                        })();
                        match found {
                            __chainlock::Ok(handle) => handles.push(handle),
                            __chainlock::Err(exit) => {
                                return __chainlock::Err(__chainlock::PathExit {
                                    path,
                                    exit,
                                });
                            }
                        }
                    }
                    let guards = __chainlock::lock_leaves_until(
                        &handles,
                        2usize,
                        deadline,
                    )?;
                    let closed = guards
                        .iter()
                        .position(|guard| {
                            (&__chainlock::ClosedProbe(&**guard)).level_is_closed()
                        });
                    if let __chainlock::Some(path) = closed {
                        let exit = __chainlock::Exit::Closed {
                            level: 2usize,
                        };
                        return __chainlock::Err(__chainlock::PathExit {
                            path,
                            exit,
                        });
                    }
                    __chainlock::Ok(guards)
                }
            }
        };
        __ChainLocker
    };
}
