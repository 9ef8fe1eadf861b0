//! Borrowed key lookups (issue 10, item 6): children found by a borrowed form of their key,
//! as `HashMap::get` finds them (`K: Borrow<Q>`), through `LookupBy` and the derived
//! `ChildrenBy`, on a recursive node type, for maps, vectors and options.

use chainlock::ChainNode;
use chainlock::chain::{ChildrenBy, LookupBy};
use chainlock::parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(ChainNode, Default)]
struct Dir {
    #[chain(children)]
    entries: HashMap<String, Arc<RwLock<Dir>>>,
    #[chain(children)]
    files: BTreeMap<String, Arc<Mutex<u64>>>,
    size: u64,
}

#[derive(ChainNode)]
struct Row {
    #[chain(children)]
    cells: Vec<Arc<Mutex<u8>>>,
}

#[derive(ChainNode)]
struct Link<T: 'static> {
    #[chain(children)]
    next: Option<Arc<Mutex<T>>>,
}

fn dir_tree() -> Dir {
    let usr = Dir {
        size: 7,
        ..Dir::default()
    };
    let mut root = Dir::default();
    root.entries
        .insert("usr".into(), Arc::new(RwLock::new(usr)));
    root.files.insert("README".into(), Arc::new(Mutex::new(42)));
    root
}

#[test]
fn a_string_keyed_child_is_found_with_a_str() {
    let root = dir_tree();
    let usr = ChildrenBy::<Dir, str>::child_by(&root, "usr").expect("found by `&str`");
    assert_eq!(usr.read().size, 7);
    assert!(ChildrenBy::<Dir, str>::child_by(&root, "bin").is_none());
    // The owned form still works, and the field is chosen by the child type.
    assert!(ChildrenBy::<Dir, String>::child_by(&root, &"usr".to_owned()).is_some());
    let readme = ChildrenBy::<u64, str>::child_by(&root, "README").expect("a file by `&str`");
    assert_eq!(*readme.lock(), 42);
    assert!(
        ChildrenBy::<u64, str>::child_by(&root, "usr").is_none(),
        "`usr` is a directory"
    );
}

/// A generic helper taking any borrowed key, as a caller walking a `&str` path would.
fn walk<'a>(mut dir: Arc<RwLock<Dir>>, path: impl IntoIterator<Item = &'a str>) -> Option<u64> {
    for name in path {
        let next = ChildrenBy::<Dir, str>::child_by(&*dir.read(), name)?;
        dir = next;
    }
    let size = dir.read().size;
    Some(size)
}

#[test]
fn a_str_path_walks_a_recursive_tree_without_allocating_keys() {
    let root = Arc::new(RwLock::new(dir_tree()));
    assert_eq!(walk(root.clone(), "usr".split('/')), Some(7));
    assert_eq!(walk(root.clone(), []), Some(0));
    assert_eq!(walk(root, "usr/lib".split('/')), None);
}

#[test]
fn vectors_options_and_containers_directly() {
    let row = Row {
        cells: vec![Arc::new(Mutex::new(1)), Arc::new(Mutex::new(2))],
    };
    assert_eq!(
        ChildrenBy::<u8, usize>::child_by(&row, &1).map(|cell| *cell.lock()),
        Some(2)
    );
    assert!(ChildrenBy::<u8, usize>::child_by(&row, &2).is_none());

    let link = Link {
        next: Some(Arc::new(Mutex::new(5_i32))),
    };
    assert!(ChildrenBy::<i32, ()>::child_by(&link, &()).is_some());

    let map: BTreeMap<String, Arc<Mutex<u8>>> =
        BTreeMap::from([("a".to_owned(), Arc::new(Mutex::new(9)))]);
    assert_eq!(map.lookup_by("a").map(|cell| *cell.lock()), Some(9));
    let map: HashMap<Vec<u8>, Arc<Mutex<u8>>> =
        HashMap::from([(vec![1, 2], Arc::new(Mutex::new(3)))]);
    assert!(
        map.lookup_by(&[1_u8, 2][..]).is_some(),
        "a `Vec<u8>` key found by a slice"
    );
}
