use chainlock::ChainNode;
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
struct Class;
struct Lecture {
    #[chain(children)]
    classes: BTreeMap<String, Arc<RwLock<Class>>>,
}
const _: () = {
    #[automatically_derived]
    impl ::chainlock::ChainNode for Lecture {}
    #[automatically_derived]
    impl ::chainlock::chain::Children<Class> for Lecture {
        type Key = <BTreeMap<
            String,
            Arc<RwLock<Class>>,
        > as ::chainlock::chain::ChildContainer>::Key;
        type Lock = <BTreeMap<
            String,
            Arc<RwLock<Class>>,
        > as ::chainlock::chain::ChildContainer>::Lock;
        #[inline]
        fn child(
            &self,
            key: &Self::Key,
        ) -> ::core::option::Option<::std::sync::Arc<Self::Lock>> {
            <BTreeMap<
                String,
                Arc<RwLock<Class>>,
            > as ::chainlock::chain::ChildContainer>::lookup(&self.classes, key)
        }
    }
};
