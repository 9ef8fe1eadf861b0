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
    impl ::chainlock::__private::Children<Class> for Lecture {
        type Key = <Shelf as ::chainlock::__private::ChildContainer>::Key;
        type Lock = <Shelf as ::chainlock::__private::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::assert_child_lock::<
                Class,
                <Shelf as ::chainlock::__private::ChildContainer>::Lock,
            >();
            <Shelf as ::chainlock::__private::ChildContainer>::lookup(&self.classes, key)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenRef<Class, __Q> for Lecture
    where
        Shelf: ::chainlock::__private::LookupRef<__Q>,
    {
        type Lock = <Shelf as ::chainlock::__private::LookupRef<__Q>>::Lock;
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
        Shelf: ::chainlock::__private::LookupBy<__Q>,
    {
        type Lock = <Shelf as ::chainlock::__private::LookupBy<__Q>>::Lock;
        #[inline]
        fn child_by(
            &self,
            key: &__Q,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::LookupBy::<__Q>::lookup_by(&self.classes, key)
        }
    }
};
