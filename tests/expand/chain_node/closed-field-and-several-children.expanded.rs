use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
struct Class;
struct Room;
struct Lecture {
    #[chain(closed)]
    cancelled: bool,
    #[chain(children, default)]
    classes: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    waitlists: Vec<Arc<Mutex<Class>>>,
    #[chain(children)]
    room: Option<Arc<Mutex<Room>>>,
}
const _: () = {
    #[automatically_derived]
    impl ::chainlock::ChainNode for Lecture {
        #[inline]
        fn is_closed(&self) -> ::chainlock::__private::bool {
            self.cancelled
        }
    }
    #[automatically_derived]
    impl ::chainlock::__private::ChildField<Class> for Lecture {
        type Container = Vec<Arc<Mutex<Class>>>;
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
                <Vec<Arc<Mutex<Class>>> as ::chainlock::__private::LookupRef<__Q>>::Lock,
            >,
        >
        where
            Vec<Arc<Mutex<Class>>>: ::chainlock::__private::LookupRef<__Q>,
        {
            ::chainlock::__private::LookupRef::<
                __Q,
            >::lookup_ref(&self.classes, key, guard)
        }
    }
    #[automatically_derived]
    impl ::chainlock::__private::ChildField<Room> for Lecture {
        type Container = Option<Arc<Mutex<Room>>>;
        #[inline]
        fn field(&self) -> &Self::Container {
            &self.room
        }
        #[inline]
        #[allow(private_interfaces, private_bounds)]
        fn field_ref<'__g, __Q: ?::chainlock::__private::Sized>(
            &'__g self,
            key: &__Q,
            guard: &'__g ::chainlock::__private::EpochGuard,
        ) -> ::chainlock::__private::Option<
            &'__g ::chainlock::__private::Arc<
                <Option<
                    Arc<Mutex<Room>>,
                > as ::chainlock::__private::LookupRef<__Q>>::Lock,
            >,
        >
        where
            Option<Arc<Mutex<Room>>>: ::chainlock::__private::LookupRef<__Q>,
        {
            ::chainlock::__private::LookupRef::<__Q>::lookup_ref(&self.room, key, guard)
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
