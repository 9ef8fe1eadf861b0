//! chainlock depended on as `cl` in this crate's `Cargo.toml`: `::chainlock` names nothing
//! here, so every path the macros generate must reach `cl`. The macros find that name in
//! this `Cargo.toml` by themselves (no attribute); `crate = "cl"` still overrides it (one
//! derive and one locker below keep it). Fixed, recursive, mixed and upgradable chains, the
//! derive with a closed marker and borrowed lookups.

use cl::parking_lot::{Mutex, RwLock};
use cl::{ChainNode, chain_locker};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A directory tree.
#[derive(ChainNode, Default)]
#[chain(crate = "cl")]
pub struct Dir {
    /// Subdirectories by name.
    #[chain(children)]
    pub dirs: BTreeMap<String, Arc<RwLock<Dir>>>,
    /// Files by name.
    #[chain(children)]
    pub files: BTreeMap<String, Arc<Mutex<File>>>,
    /// Removed: treated as absent.
    #[chain(closed)]
    pub removed: bool,
}

/// A file (the derive finds `cl` by itself).
#[derive(ChainNode)]
pub struct File {
    /// Its size.
    pub bytes: u64,
}

// No attribute: the macro reads `cl` from this crate's `Cargo.toml`.
chain_locker! {
    /// Two directories and a file, read-locked on the way.
    pub struct Fixed(shared Dir, shared Dir, File);
    /// Any depth of directories, then a file.
    pub struct Open(shared Dir*, File);
}

// The explicit attribute, which overrides what `Cargo.toml` says.
chain_locker! {
    #![chain(crate = "cl")]
    /// A directory held as the upgradable reader.
    pub struct Upgrade(shared Dir, upgradable Dir);
}

/// A room: the child type of the nodes [`rooms_node!`] makes.
#[derive(ChainNode, Debug)]
pub struct Room {
    /// Its seats.
    pub seats: u32,
}

#[doc(hidden)]
pub use cl as __cl;

/// Makes, in the caller's crate, a node type `$name` whose children field `$field` holds this
/// crate's [`Room`]s, every path through `$crate`: the derive's generated code must look each
/// name up where the macro wrote it, though its errors point at the caller's tokens (the
/// suite's `tests/chain_node_foreign_macro.rs` uses it).
#[macro_export]
macro_rules! rooms_node {
    ($name:ident, $field:ident) => {
        /// A node of rooms.
        #[derive($crate::__cl::ChainNode)]
        pub struct $name {
            /// The rooms, by index.
            #[chain(children)]
            pub $field:
                ::std::vec::Vec<::std::sync::Arc<$crate::__cl::parking_lot::Mutex<$crate::Room>>>,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::{Dir, File, Fixed, Open, Upgrade};
    use cl::chain::{Absence, ChildrenBy};
    use cl::parking_lot::{Mutex, RwLock};
    use cl::{Exit, chain_locker};
    use std::sync::Arc;

    fn tree() -> Arc<RwLock<Dir>> {
        let mut lib = Dir::default();
        lib.files
            .insert("libc.so".into(), Arc::new(Mutex::new(File { bytes: 9 })));
        let mut usr = Dir::default();
        usr.dirs.insert("lib".into(), Arc::new(RwLock::new(lib)));
        let mut root = Dir::default();
        root.dirs.insert("usr".into(), Arc::new(RwLock::new(usr)));
        Arc::new(RwLock::new(root))
    }

    #[test]
    fn every_kind_of_chain_works_through_the_renamed_crate() {
        let root = tree();
        let name = |s: &str| s.to_owned();
        let usr = ChildrenBy::<Dir, str>::child_by(&*root.read(), "usr").expect("by `&str`");
        assert_eq!(
            Fixed.run_keys(&usr, &name("lib"), &name("libc.so"), |file| file.bytes),
            Ok(9)
        );
        let path = ["usr", "lib"].map(String::from);
        assert_eq!(
            Open.run_keys(&root, path, &name("libc.so"), |file| file.bytes),
            Ok(9)
        );
        assert_eq!(
            Upgrade.run_keys(&root, &name("usr"), |usr| {
                usr.upgrade().removed = true;
                usr.is_upgraded()
            }),
            Ok(true)
        );
        assert_eq!(
            Open.run_keys(&root, ["usr"].map(String::from), &name("x"), |_| ()),
            Err(Exit::Absent {
                level: 1,
                cause: Absence::Closed
            })
        );
        let locker = chain_locker!(#![chain(crate = "cl")] shared Dir, Dir);
        assert!(matches!(
            locker.descend_keys(&root, &name("usr")),
            Err(Exit::Absent { level: 1, .. })
        ));
        // A fresh tree: `usr` above was closed through `Upgrade`.
        let found = chain_locker!(shared Dir, shared Dir)
            .run_keys(&tree(), &name("usr"), |usr| usr.dirs.len());
        assert_eq!(found, Ok(1), "an expression locker without the attribute");
        assert!(!root.is_locked());
    }
}
