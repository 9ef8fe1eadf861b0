use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
struct Class;
struct Lecture {
    #[chain(children)]
    class: Option<Arc<Mutex<Class>>>,
}
const _: () = {
    #[automatically_derived]
    impl ::chainlock::ChainNode for Lecture {}
    #[automatically_derived]
    impl ::chainlock::chain::Children<Class> for Lecture {
        type Key = <Option<
            Arc<Mutex<Class>>,
        > as ::chainlock::chain::ChildContainer>::Key;
        type Lock = <Option<
            Arc<Mutex<Class>>,
        > as ::chainlock::chain::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::core::option::Option<::std::sync::Arc<Self::Lock>> {
            <Option<
                Arc<Mutex<Class>>,
            > as ::chainlock::chain::ChildContainer>::lookup(&self.class, key)
        }
    }
};
