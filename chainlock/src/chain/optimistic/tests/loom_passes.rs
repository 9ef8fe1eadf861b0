//! loom models of the passes of a generated optimistic descent (`chain/optimistic.rs`), run
//! through the real driver, `Pass` and `Seen`, reclamation abstracted as in the epoch
//! containers' models (a replaced snapshot is kept until the container drops): a writer
//! replaces the parent's child under the parent's exclusive hold, then retires the old child
//! under the child's own; the reader must never end at a retired child, whether the next level
//! is locked (validate after taking it) or read optimistically (its version, then the parent's
//! validation), with restarts into another optimistic pass or into the pessimistic one.

use super::super::{Kind, Pass, Stop, bounded};
use crate::chain::exit::found;
use crate::chain::wait::Blocking;
use crate::chain::{EpochGuard, EpochMap};
use crate::hybrid::HybridLock;
use crate::loom::sync::atomic::{AtomicBool, Ordering::Relaxed};
use crate::loom::thread;
use crate::telemetry::hooks::{Level, Off};
use std::sync::Arc;

struct Parent {
    children: EpochMap<u8, HybridLock<Child>>,
}

struct Child {
    retired: AtomicBool,
}

type Root = Arc<HybridLock<Parent>>;

fn child() -> Arc<HybridLock<Child>> {
    Arc::new(HybridLock::new(Child {
        retired: AtomicBool::new(false),
    }))
}

/// A parent with child 0, and a writer that replaces it and retires the old one.
fn tree_and_writer() -> (Root, loom::thread::JoinHandle<()>) {
    let parent = Arc::new(HybridLock::new(Parent {
        children: EpochMap::new(),
    }));
    parent.read().children.insert(0, child());
    let writer = {
        let parent = parent.clone();
        thread::spawn(move || {
            let old = parent.write().children.insert(0, child());
            old.expect("child 0").write().retired.store(true, Relaxed);
        })
    };
    (parent, writer)
}

/// The levels' names for the telemetry (leaked: a model runs many times; a few bytes each).
fn levels() -> &'static [Level] {
    Box::leak(Box::new([
        Level::new("loom", 0, "Parent"),
        Level::new("loom", 1, "Child"),
    ]))
}

/// The next level locked: the child taken exclusively, then the parent validated.
fn locked_child<K: Kind>(
    pass: Pass<Off, K>,
    parent: &Root,
    pin: &EpochGuard,
) -> Result<bool, Stop> {
    let seen = pass.root(parent)?;
    let next = seen.check(found(seen.data().children.get(&0, pin), 1))?;
    let held = next.write();
    seen.validate()?;
    Ok(held.retired.load(Relaxed))
}

/// The next level read optimistically: its version, the parent validated, then the child's
/// data read and validated.
fn optimistic_child<K: Kind>(
    pass: Pass<Off, K>,
    parent: &Root,
    pin: &EpochGuard,
) -> Result<bool, Stop> {
    let seen = pass.root(parent)?;
    let next = seen.check(found(seen.data().children.get(&0, pin), 1))?;
    let child = pass.child(seen, next, 1)?;
    let retired = child.data().retired.load(Relaxed);
    child.validate()?;
    Ok(retired)
}

#[test]
fn loom_a_locked_next_level_is_validated_after_it_is_taken() {
    loom::model(|| {
        let (parent, writer) = tree_and_writer();
        let levels = levels();
        for max_restarts in [8, 0] {
            let retired = bounded(
                max_restarts,
                Blocking,
                Off,
                levels,
                &mut (),
                |pass, pin, ()| locked_child(pass, &parent, pin),
                |pass, pin, ()| locked_child(pass, &parent, pin),
            );
            assert_eq!(retired, Ok(false), "ended at a retired child");
        }
        writer.join().unwrap();
    });
}

#[test]
fn loom_an_optimistic_next_level_is_read_before_its_parent_validates() {
    loom::model(|| {
        let (parent, writer) = tree_and_writer();
        let levels = levels();
        let retired = bounded(
            0,
            Blocking,
            Off,
            levels,
            &mut (),
            |pass, pin, ()| optimistic_child(pass, &parent, pin),
            |pass, pin, ()| optimistic_child(pass, &parent, pin),
        );
        assert_eq!(retired, Ok(false), "ended at a retired child");
        writer.join().unwrap();
    });
}
