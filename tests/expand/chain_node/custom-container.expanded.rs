use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
struct Class;
/// A container of its own.
struct Shelf(Vec<Arc<Mutex<Class>>>);
impl chainlock::chain::ChildContainer for Shelf {
    type Key = usize;
    type Lock = Mutex<Class>;
    fn lookup(&self, key: &usize) -> Option<Arc<Mutex<Class>>> {
        self.0.get(*key).cloned()
    }
}
struct Lecture {
    #[chain(children, child = Class)]
    classes: Shelf,
}
const _: () = {
    #[automatically_derived]
    impl ::chainlock::ChainNode for Lecture {}
    #[automatically_derived]
    impl ::chainlock::__private::ChildField<Class> for Lecture {
        type Container = Shelf;
        #[inline]
        fn field(&self) -> &Self::Container {
            &self.classes
        }
        #[inline]
        #[allow(private_interfaces, private_bounds)]
        fn field_ref<'__g, __Q: ?::chainlock::__private::Sized>(
            &'__g self,
            key: &__Q,
            guard: &'__g ::chainlock::__private::EpochGuard,
        ) -> ::chainlock::__private::Option<
            &'__g ::chainlock::__private::Arc<
                <Shelf as ::chainlock::__private::LookupRef<__Q>>::Lock,
            >,
        >
        where
            Shelf: ::chainlock::__private::LookupRef<__Q>,
        {
            ::chainlock::__private::LookupRef::<
                __Q,
            >::lookup_ref(&self.classes, key, guard)
        }
    }
    #[automatically_derived]
    impl<__C: ?::chainlock::__private::Sized> ::chainlock::__private::Children<__C>
    for Lecture
    where
        Self: ::chainlock::__private::ChildField<__C>,
        <Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container: ::chainlock::__private::ChildContainer,
    {
        type Key = <<Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container as ::chainlock::__private::ChildContainer>::Key;
        type Lock = <<Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container as ::chainlock::__private::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::ChildContainer::lookup(
                <Self as ::chainlock::__private::ChildField<__C>>::field(self),
                key,
            )
        }
    }
    #[automatically_derived]
    impl<
        __C: ?::chainlock::__private::Sized,
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenRef<__C, __Q> for Lecture
    where
        Self: ::chainlock::__private::ChildField<__C>,
        <Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container: ::chainlock::__private::LookupRef<__Q>,
    {
        type Lock = <<Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container as ::chainlock::__private::LookupRef<__Q>>::Lock;
        #[inline]
        fn child_ref<'__g>(
            &'__g self,
            key: &__Q,
            guard: &'__g ::chainlock::__private::EpochGuard,
        ) -> ::chainlock::__private::Option<
            &'__g ::chainlock::__private::Arc<Self::Lock>,
        > {
            <Self as ::chainlock::__private::ChildField<
                __C,
            >>::field_ref(self, key, guard)
        }
    }
    #[automatically_derived]
    impl<
        __C: ?::chainlock::__private::Sized,
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenBy<__C, __Q> for Lecture
    where
        Self: ::chainlock::__private::ChildField<__C>,
        <Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container: ::chainlock::__private::LookupBy<__Q>,
    {
        type Lock = <<Self as ::chainlock::__private::ChildField<
            __C,
        >>::Container as ::chainlock::__private::LookupBy<__Q>>::Lock;
        #[inline]
        fn child_by(
            &self,
            key: &__Q,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::LookupBy::<
                __Q,
            >::lookup_by(
                <Self as ::chainlock::__private::ChildField<__C>>::field(self),
                key,
            )
        }
    }
};
