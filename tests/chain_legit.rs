//! Legitimate programs the macros must accept, and what they do: the runtime crate under
//! another name (`crate = "..."`), a `#![no_implicit_prelude]` module with user types named
//! like prelude items, a child lock written as a type alias, a closed root, and level types
//! named like the generated lock parameters and the expression form's locker, lockers under
//! `#[cfg(..)]` and `#[cfg_attr(.., cfg(..))]`.

extern crate chainlock as cl;

use std::collections::HashMap;
use std::sync::Arc;

/// The runtime crate reached only through the name `cl`: every generated path goes through
/// the `crate` argument (nothing in this module names `chainlock`).
mod renamed {
    use super::cl::chain::Absence;
    use super::cl::parking_lot::Mutex;
    use super::cl::{ChainNode, Exit};
    use std::sync::Arc;

    #[derive(ChainNode)]
    #[chain(crate = "cl")]
    pub(crate) struct Shelf {
        #[chain(children)]
        pub(crate) books: Vec<Arc<Mutex<Book>>>,
    }

    #[derive(ChainNode)]
    #[chain(crate = "cl", closed = is_lent)]
    pub(crate) struct Book {
        pub(crate) pages: u32,
        pub(crate) lent: bool,
    }

    impl Book {
        fn is_lent(&self) -> bool {
            self.lent
        }
    }

    cl::chain_locker! {
        #![chain(crate = "cl")]
        pub struct BookLocker(Shelf, Book);
    }

    #[test]
    fn renamed_crate_path_descends_by_keys_and_closes() {
        let book = |pages, lent| Arc::new(Mutex::new(Book { pages, lent }));
        let shelf = Arc::new(Mutex::new(Shelf {
            books: vec![book(120, false), book(80, true)],
        }));
        assert_eq!(BookLocker.run_keys(&shelf, &0, |b| b.pages), Ok(120));
        assert_eq!(
            BookLocker.run_keys(&shelf, &1, |b| b.pages),
            Err(Exit::Absent {
                level: 1,
                cause: Absence::Closed
            })
        );
        assert_eq!(
            BookLocker.run_keys(&shelf, &7, |b| b.pages),
            Err(Exit::Absent {
                level: 1,
                cause: Absence::Missing
            })
        );
        let pages = cl::chain_locker!(#![chain(crate = "cl")] Shelf, Book).run(
            &shelf,
            |s| s.books.first().cloned(),
            |b| b.pages,
        );
        assert_eq!(pages, Ok(120));
        assert!(shelf.try_lock().is_some(), "nothing stays locked");
    }
}

/// Generated code uses no prelude name: it compiles in a `#![no_implicit_prelude]` module
/// that also defines types called `Option`, `Result`, `Some`, `Ok`, `Vec`, `bool` and
/// `drop`, which would capture any unqualified use.
#[expect(
    dead_code,
    non_camel_case_types,
    reason = "types named like the prelude's, only to shadow them"
)]
mod no_prelude {
    #![no_implicit_prelude]

    pub(crate) struct Option;
    pub(crate) struct Result;
    pub(crate) struct Vec;
    pub(crate) struct bool;
    pub(crate) struct Some;
    pub(crate) struct Ok;
    pub(crate) struct Clone;
    pub(crate) fn drop() {}

    #[derive(::chainlock::ChainNode)]
    #[chain(closed = closed)]
    pub(crate) struct Root {
        #[chain(children)]
        pub(crate) leaves: ::std::vec::Vec<::std::sync::Arc<::chainlock::parking_lot::Mutex<Leaf>>>,
        pub(crate) shut: ::core::primitive::bool,
    }

    impl Root {
        fn closed(&self) -> ::core::primitive::bool {
            self.shut
        }
    }

    #[derive(::chainlock::ChainNode)]
    pub(crate) struct Leaf {
        pub(crate) value: u64,
    }

    ::chainlock::chain_locker! {
        pub struct LeafLocker(Root, Leaf);
    }
}

#[test]
fn no_implicit_prelude_module_compiles_and_runs() {
    use cl::parking_lot::Mutex;
    use no_prelude::{Leaf, LeafLocker, Root};
    let root = Arc::new(Mutex::new(Root {
        leaves: vec![Arc::new(Mutex::new(Leaf { value: 9 }))],
        shut: false,
    }));
    assert_eq!(LeafLocker.run_keys(&root, &0, |leaf| leaf.value), Ok(9));
    let guards = LeafLocker.lock_leaves(&root, [&0]).expect("one leaf");
    assert_eq!(guards[0].value, 9);
}

/// A child lock written as an alias: the child type is named with `child = ..`.
mod alias {
    use chainlock::ChainNode;
    use chainlock::parking_lot::{Mutex, RwLock};
    use std::collections::HashMap;
    use std::sync::Arc;

    pub(crate) type ClassLock = Mutex<Class>;
    pub(crate) type LectureLock = RwLock<Lecture>;

    #[derive(ChainNode)]
    pub(crate) struct Lecture {
        #[chain(children, child = Class)]
        pub(crate) classes: Vec<Arc<ClassLock>>,
    }

    #[derive(ChainNode)]
    pub(crate) struct Registry {
        #[chain(children, child = Lecture)]
        pub(crate) lectures: HashMap<u32, Arc<LectureLock>>,
    }

    #[derive(ChainNode)]
    pub(crate) struct Class {
        pub(crate) size: usize,
    }

    chainlock::chain_locker! {
        pub struct ClassLocker(shared Registry, shared Lecture, Class);
    }
}

#[test]
fn aliased_child_locks_descend_by_keys() {
    use alias::{Class, ClassLocker, Lecture, Registry};
    use cl::parking_lot::{Mutex, RwLock};
    let lecture = Lecture {
        classes: vec![Arc::new(Mutex::new(Class { size: 3 }))],
    };
    let registry = Arc::new(RwLock::new(Registry {
        lectures: HashMap::from([(5, Arc::new(RwLock::new(lecture)))]),
    }));
    assert_eq!(
        ClassLocker.run_keys(&registry, &5, &0, |class| class.size),
        Ok(3)
    );
}

/// A closed root behaves as absent (`level: 0`), in every flavor, and is released.
mod closed_root {
    use cl::chain::Absence;
    use cl::parking_lot::Mutex;
    use cl::{ChainNode, Exit, chain_locker};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[derive(ChainNode)]
    struct Root {
        #[chain(closed)]
        closed: bool,
        #[chain(children)]
        child: Option<Arc<Mutex<Leaf>>>,
    }

    #[derive(ChainNode)]
    struct Leaf {
        value: u8,
    }

    chain_locker! {
        struct LeafLocker(Root, Leaf);
        struct RootOnly(Root);
    }

    const CLOSED_ROOT: Exit = Exit::Absent {
        level: 0,
        cause: Absence::Closed,
    };

    #[test]
    fn closed_root_is_absent_and_released() {
        let root = Arc::new(Mutex::new(Root {
            closed: true,
            child: Some(Arc::new(Mutex::new(Leaf { value: 4 }))),
        }));
        assert_eq!(
            LeafLocker.run_keys(&root, &(), |l| l.value),
            Err(CLOSED_ROOT)
        );
        assert_eq!(
            LeafLocker.run(&root, |r| r.child.clone(), |l| l.value),
            Err(CLOSED_ROOT)
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        assert_eq!(
            LeafLocker
                .run_keys_until(&root, deadline, &(), |l| l.value)
                .map(|_| ()),
            Err(CLOSED_ROOT)
        );
        assert_eq!(RootOnly.run(&root, |r| r.closed), Err(CLOSED_ROOT));
        assert!(
            matches!(
                LeafLocker.lock_leaves(&root, [&()]),
                Err(cl::chain::LeavesExit::Path { path: 0, exit }) if exit == CLOSED_ROOT
            ),
            "lock_leaves sees the closed root too"
        );
        assert!(root.try_lock().is_some(), "the closed root was released");

        root.lock().closed = false;
        assert_eq!(LeafLocker.run_keys(&root, &(), |l| l.value), Ok(4));
    }
}

/// A `pub` locker over private level types, defined through the user's own `macro_rules!`
/// wrapper: the generated methods name the private types (bounds, stage closures) exactly as
/// the same locker written directly does, and neither may warn (`private_interfaces`,
/// `private_bounds`, `dead_code` for the methods not called), whatever the spans of the
/// tokens that reach the macro.
#[deny(warnings)]
pub mod wrapped {
    use chainlock::ChainNode;
    use chainlock::parking_lot::{Mutex, RwLock};
    use std::sync::Arc;

    #[derive(ChainNode)]
    struct Registry {
        #[chain(children)]
        courses: Vec<Arc<RwLock<Course>>>,
    }

    #[derive(ChainNode)]
    struct Course {
        #[chain(children)]
        lectures: Vec<Arc<Mutex<Lecture>>>,
    }

    #[derive(ChainNode)]
    struct Lecture {
        seats: u32,
    }

    /// A wrapper as users write them: the visibility and the level types come from here.
    macro_rules! lecture_locker {
        ($name:ident) => {
            chainlock::chain_locker! {
                /// Registry → course → lecture.
                pub struct $name(shared Registry, shared Course, Lecture);
            }
        };
    }

    lecture_locker!(LectureLocker);

    // The same locker written directly.
    chainlock::chain_locker! {
        /// Registry → course → lecture.
        pub struct DirectLocker(shared Registry, shared Course, Lecture);
    }

    #[test]
    fn wrapped_pub_locker_over_private_levels_compiles_without_warnings_and_runs() {
        let course = Course {
            lectures: vec![Arc::new(Mutex::new(Lecture { seats: 30 }))],
        };
        let registry = Arc::new(RwLock::new(Registry {
            courses: vec![Arc::new(RwLock::new(course))],
        }));
        assert_eq!(
            LectureLocker.run_keys(&registry, &0, &0, |l| l.seats),
            Ok(30)
        );
        assert_eq!(
            DirectLocker.run_keys(&registry, &0, &0, |l| l.seats),
            Ok(30)
        );
        assert!(!registry.is_locked());
    }
}

/// Level types named like the generated lock parameters (`LectureLock` beside `Lecture`,
/// `LockedLock` as the locker, lower-case `snake_node`): the parameters, named after the
/// levels for rustc's messages and the docs, step aside and shadow none of them.
mod lock_parameter_names {
    use chainlock::chain_locker;
    use chainlock::parking_lot::Mutex;
    use std::sync::Arc;

    pub(crate) struct Lecture {
        pub(crate) seats: u32,
    }
    #[expect(
        non_camel_case_types,
        reason = "a level type named as its author chose"
    )]
    pub(crate) struct snake_node(pub(crate) u32);
    pub(crate) struct LectureLock(pub(crate) u32);

    chain_locker! {
        pub(crate) struct LockedLock(Lecture, LectureLock, snake_node);
    }

    #[test]
    fn level_types_named_like_lock_parameters_compile_and_run() {
        let leaf = Arc::new(Mutex::new(snake_node(7)));
        let middle = Arc::new(Mutex::new(LectureLock(3)));
        let root = Arc::new(Mutex::new(Lecture { seats: 30 }));
        let got = LockedLock.run(
            &root,
            |lecture| (lecture.seats == 30).then(|| middle.clone()),
            |lock| (lock.0 == 3).then(|| leaf.clone()),
            |node| node.0,
        );
        assert_eq!(got, Ok(7));
    }

    /// A level type named like the expression form's locker type.
    pub(crate) struct ChainLocker(pub(crate) u32);

    #[test]
    fn level_type_named_like_the_anonymous_locker_compiles_and_runs() {
        let root = Arc::new(Mutex::new(ChainLocker(5)));
        let locker = chain_locker!(ChainLocker);
        assert_eq!(format!("{locker:?}"), "__ChainLocker");
        assert_eq!(locker.run(&root, |level| level.0), Ok(5));
        assert_eq!(format!("{:?}", chain_locker!(Lecture)), "ChainLocker");
    }
}

/// Named lockers under `#[cfg(..)]`: one configured out vanishes, and two of one name under
/// exclusive conditions are alternatives, the one configured in defined.
mod configured {
    use chainlock::chain_locker;
    use chainlock::parking_lot::Mutex;
    use std::sync::Arc;

    pub(crate) struct Registry(pub(crate) u32);
    pub(crate) struct Lecture(pub(crate) u32);

    chain_locker! {
        #[cfg(any())]
        pub(crate) struct LectureLocker(Registry);
        #[cfg(all())]
        pub(crate) struct LectureLocker(Registry, Lecture);
        #[cfg(not(all()))]
        pub(crate) struct LectureLocker(Lecture);
    }

    #[test]
    fn the_locker_configured_in_is_defined_and_runs() {
        assert_eq!(LectureLocker::DEPTH, 2);
        let lecture = Arc::new(Mutex::new(Lecture(7)));
        let registry = Arc::new(Mutex::new(Registry(1)));
        let got = LectureLocker.run(&registry, |r| (r.0 == 1).then(|| lecture.clone()), |l| l.0);
        assert_eq!(got, Ok(7));
    }
}

/// The same through `#[cfg_attr(predicate, cfg(..))]`: the locker whose `cfg_attr` adds a
/// false `cfg` vanishes as under `#[cfg(..)]` (its name defined once, by the other), a
/// `cfg_attr` whose predicate is false adds nothing, and a nested one counts too.
mod configured_by_cfg_attr {
    use chainlock::chain_locker;
    use chainlock::parking_lot::Mutex;
    use std::sync::Arc;

    pub(crate) struct Registry(pub(crate) u32);
    pub(crate) struct Lecture(pub(crate) u32);

    chain_locker! {
        #[cfg_attr(all(), cfg(any()))]
        pub(crate) struct LectureLocker(Registry);
        #[cfg_attr(any(), cfg(any()))]
        #[cfg_attr(all(), doc = "Registry → lecture.", cfg(all()))]
        pub(crate) struct LectureLocker(Registry, Lecture);
        #[cfg_attr(all(), cfg_attr(all(), cfg(not(all()))))]
        pub(crate) struct LectureLocker(Lecture);
    }

    #[test]
    fn the_locker_configured_in_is_defined_and_runs() {
        assert_eq!(LectureLocker::DEPTH, 2);
        let lecture = Arc::new(Mutex::new(Lecture(7)));
        let registry = Arc::new(Mutex::new(Registry(1)));
        let got = LectureLocker.run(&registry, |r| (r.0 == 1).then(|| lecture.clone()), |l| l.0);
        assert_eq!(got, Ok(7));
    }
}

/// Level types named like the modifiers: `optimistic exclusive` is a level of type
/// `exclusive` read optimistically, and a lone `shared` as the leaf after a level with its
/// own modifier is a type (only a lone modifier that can be read as another level's, or as
/// the level's before it, is reported as misplaced).
#[expect(
    non_camel_case_types,
    reason = "the point: types named like the modifiers"
)]
mod level_types_named_like_modifiers {
    use chainlock::chain::EpochGuard;
    use chainlock::chain_locker;
    use chainlock::hybrid::HybridLock;
    use chainlock::parking_lot::Mutex;
    use std::sync::Arc;

    pub(crate) struct registry {
        pub(crate) next: Arc<HybridLock<exclusive>>,
    }
    pub(crate) struct exclusive {
        pub(crate) leaf: Arc<Mutex<shared>>,
    }
    pub(crate) struct shared(pub(crate) u32);

    chain_locker! {
        pub(crate) struct ToShared(optimistic registry, optimistic exclusive, shared);
    }

    #[test]
    fn they_are_levels_and_run() {
        let leaf = Arc::new(Mutex::new(shared(5)));
        let next = Arc::new(HybridLock::new(exclusive { leaf }));
        let root = Arc::new(HybridLock::new(registry { next }));
        let got = ToShared.run(
            &root,
            |r: &registry, _: &EpochGuard| Some(&r.next),
            |e: &exclusive, _: &EpochGuard| Some(&e.leaf),
            |s| s.0,
        );
        assert_eq!(got, Ok(5));
    }
}
