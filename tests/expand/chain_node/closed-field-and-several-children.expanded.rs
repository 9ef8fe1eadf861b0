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
    impl ::chainlock::__private::Children<Class> for Lecture {
        type Key = <Vec<
            Arc<Mutex<Class>>,
        > as ::chainlock::__private::ChildContainer>::Key;
        type Lock = <Vec<
            Arc<Mutex<Class>>,
        > as ::chainlock::__private::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::assert_child_lock::<
                Class,
                <Vec<Arc<Mutex<Class>>> as ::chainlock::__private::ChildContainer>::Lock,
            >();
            <Vec<
                Arc<Mutex<Class>>,
            > as ::chainlock::__private::ChildContainer>::lookup(&self.classes, key)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenRef<Class, __Q> for Lecture
    where
        Vec<Arc<Mutex<Class>>>: ::chainlock::__private::LookupRef<__Q>,
    {
        type Lock = <Vec<
            Arc<Mutex<Class>>,
        > as ::chainlock::__private::LookupRef<__Q>>::Lock;
        #[inline]
        fn child_ref<'__g>(
            &'__g self,
            key: &__Q,
            guard: &'__g ::chainlock::__private::EpochGuard,
        ) -> ::chainlock::__private::Option<
            &'__g ::chainlock::__private::Arc<Self::Lock>,
        > {
            ::chainlock::__private::LookupRef::<
                __Q,
            >::lookup_ref(&self.classes, key, guard)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenBy<Class, __Q> for Lecture
    where
        Vec<Arc<Mutex<Class>>>: ::chainlock::__private::LookupBy<__Q>,
    {
        type Lock = <Vec<
            Arc<Mutex<Class>>,
        > as ::chainlock::__private::LookupBy<__Q>>::Lock;
        #[inline]
        fn child_by(
            &self,
            key: &__Q,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::LookupBy::<__Q>::lookup_by(&self.classes, key)
        }
    }
    #[automatically_derived]
    impl ::chainlock::__private::Children<Room> for Lecture {
        type Key = <Option<
            Arc<Mutex<Room>>,
        > as ::chainlock::__private::ChildContainer>::Key;
        type Lock = <Option<
            Arc<Mutex<Room>>,
        > as ::chainlock::__private::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::assert_child_lock::<
                Room,
                <Option<
                    Arc<Mutex<Room>>,
                > as ::chainlock::__private::ChildContainer>::Lock,
            >();
            <Option<
                Arc<Mutex<Room>>,
            > as ::chainlock::__private::ChildContainer>::lookup(&self.room, key)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenRef<Room, __Q> for Lecture
    where
        Option<Arc<Mutex<Room>>>: ::chainlock::__private::LookupRef<__Q>,
    {
        type Lock = <Option<
            Arc<Mutex<Room>>,
        > as ::chainlock::__private::LookupRef<__Q>>::Lock;
        #[inline]
        fn child_ref<'__g>(
            &'__g self,
            key: &__Q,
            guard: &'__g ::chainlock::__private::EpochGuard,
        ) -> ::chainlock::__private::Option<
            &'__g ::chainlock::__private::Arc<Self::Lock>,
        > {
            ::chainlock::__private::LookupRef::<__Q>::lookup_ref(&self.room, key, guard)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenBy<Room, __Q> for Lecture
    where
        Option<Arc<Mutex<Room>>>: ::chainlock::__private::LookupBy<__Q>,
    {
        type Lock = <Option<
            Arc<Mutex<Room>>,
        > as ::chainlock::__private::LookupBy<__Q>>::Lock;
        #[inline]
        fn child_by(
            &self,
            key: &__Q,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::LookupBy::<__Q>::lookup_by(&self.room, key)
        }
    }
};
