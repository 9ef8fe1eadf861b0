use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
struct Class;
struct Lecture {
    #[chain(children)]
    class: Arc<tokio::sync::Mutex<Class>>,
}
const _: () = {
    #[automatically_derived]
    impl ::chainlock::ChainNode for Lecture {}
    #[automatically_derived]
    impl ::chainlock::__private::Children<Class> for Lecture {
        type Key = <Arc<
            tokio::sync::Mutex<Class>,
        > as ::chainlock::__private::ChildContainer>::Key;
        type Lock = <Arc<
            tokio::sync::Mutex<Class>,
        > as ::chainlock::__private::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::assert_child_lock::<
                Class,
                <Arc<
                    tokio::sync::Mutex<Class>,
                > as ::chainlock::__private::ChildContainer>::Lock,
            >();
            <Arc<
                tokio::sync::Mutex<Class>,
            > as ::chainlock::__private::ChildContainer>::lookup(&self.class, key)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenRef<Class, __Q> for Lecture
    where
        Arc<tokio::sync::Mutex<Class>>: ::chainlock::__private::LookupRef<__Q>,
    {
        type Lock = <Arc<
            tokio::sync::Mutex<Class>,
        > as ::chainlock::__private::LookupRef<__Q>>::Lock;
        #[inline]
        fn child_ref<'__g>(
            &'__g self,
            key: &__Q,
            guard: &'__g ::chainlock::__private::EpochGuard,
        ) -> ::chainlock::__private::Option<
            &'__g ::chainlock::__private::Arc<Self::Lock>,
        > {
            ::chainlock::__private::LookupRef::<__Q>::lookup_ref(&self.class, key, guard)
        }
    }
    #[automatically_derived]
    impl<
        __Q: ?::chainlock::__private::Sized,
    > ::chainlock::__private::ChildrenBy<Class, __Q> for Lecture
    where
        Arc<tokio::sync::Mutex<Class>>: ::chainlock::__private::LookupBy<__Q>,
    {
        type Lock = <Arc<
            tokio::sync::Mutex<Class>,
        > as ::chainlock::__private::LookupBy<__Q>>::Lock;
        #[inline]
        fn child_by(
            &self,
            key: &__Q,
        ) -> ::chainlock::__private::Option<::chainlock::__private::Arc<Self::Lock>> {
            ::chainlock::__private::LookupBy::<__Q>::lookup_by(&self.class, key)
        }
    }
};
