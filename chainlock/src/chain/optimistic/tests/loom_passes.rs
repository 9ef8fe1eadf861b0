//! loom models of the passes of a generated optimistic descent (`chain/optimistic.rs`), run
//! through the real driver, `Pass` and `Seen`, reclamation abstracted as in the epoch
//! containers' models (a replaced snapshot is kept until the container drops): a writer
//! replaces the parent's child under the parent's exclusive hold, then retires the old child
//! under the child's own; the reader must never end at a retired child, whether the next level
//! is locked (validate after taking it) or read optimistically (its version, then the parent's
//! validation), with restarts into another optimistic pass or into the pessimistic one; and
//! a locked next level found held, waited for out of the pin and carried into the next pass
//! (`carry.rs`), used only if the path still leads to it.

use super::super::{Carry, Kind, Pass, Stop, Waits, bounded};
use crate::chain::end::Kept;
use crate::chain::end::ModeS;
use crate::chain::exit::found;
use crate::chain::wait::{Blocking, Wait, WaitS};
use crate::chain::{EpochGuard, EpochMap, SharedLock};
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

/// A child held shared, as `HybridLock`'s `SharedLock` guard (not built under loom: it is
/// lock_api's) holds it.
struct ReadGuard(Arc<HybridLock<Child>>);

impl std::ops::Deref for ReadGuard {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.0.data()
    }
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        // SAFETY: taken shared by `lock_shared` or `try_lock_shared`.
        unsafe { self.0.raw().release_shared() };
    }
}

impl SharedLock for HybridLock<Child> {
    type Target = Child;
    type Guard = ReadGuard;
    fn lock_shared(this: &Arc<Self>) -> ReadGuard {
        assert!(this.raw().take_shared(None));
        ReadGuard(Arc::clone(this))
    }
    fn try_lock_shared(this: &Arc<Self>) -> Option<ReadGuard> {
        this.raw()
            .try_take_shared()
            .then(|| ReadGuard(Arc::clone(this)))
    }
}

/// No level carried: the models whose next level is taken by the pass itself.
impl<W: Wait> Waits<W, Off> for () {
    fn wait(&self, _: W, _: Off) -> Option<&'static Level> {
        None
    }
    fn unwanted(&self) {}
    fn release(&self) {}
}

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

/// A parent with child 0, and a writer that holds it while it replaces it, then retires it:
/// a reader can find the child held while the parent still leads to it.
fn tree_and_holding_writer() -> (Root, loom::thread::JoinHandle<()>) {
    let parent = Arc::new(HybridLock::new(Parent {
        children: EpochMap::new(),
    }));
    let old = child();
    parent.read().children.insert(0, Arc::clone(&old));
    let writer = {
        let parent = parent.clone();
        thread::spawn(move || {
            let held = old.write();
            parent.write().children.insert(0, child());
            held.retired.store(true, Relaxed);
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
                &(),
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
            &(),
            &mut (),
            |pass, pin, ()| optimistic_child(pass, &parent, pin),
            |pass, pin, ()| optimistic_child(pass, &parent, pin),
        );
        assert_eq!(retired, Ok(false), "ended at a retired child");
        writer.join().unwrap();
    });
}

/// The next level taken shared through the call's carry, as generated code takes its first
/// locked level: tried; held (the writer retiring it), the pass ends with `Stop::Wait` once
/// the parent validates, the driver waits for it unpinned and the next pass uses it only if
/// the parent still leads to it.
fn carried_child<K: Kind>(
    pass: Pass<Off, K>,
    parent: &Root,
    pin: &EpochGuard,
    carry: &Carry<HybridLock<Child>, Blocking, ModeS>,
    levels: &'static [Level],
) -> Result<bool, Stop> {
    let seen = pass.root(parent)?;
    let next = seen.check(found(seen.data().children.get(&0, pin), 1))?;
    let step = WaitS::take(pass.first(Blocking, carry), Off, Kept, next, 1, &levels[1]);
    let (held, _record) = seen.taken(step)?;
    seen.validate()?;
    Ok(held.retired.load(Relaxed))
}

#[test]
fn loom_a_next_level_waited_for_out_of_the_pin_is_used_only_where_the_path_leads() {
    loom::model(|| {
        let (parent, writer) = tree_and_holding_writer();
        let levels = levels();
        let carry = Carry::new();
        let retired = bounded(
            8,
            Blocking,
            Off,
            levels,
            &carry,
            &mut (),
            |pass, pin, ()| carried_child(pass, &parent, pin, &carry, levels),
            |pass, pin, ()| carried_child(pass, &parent, pin, &carry, levels),
        );
        assert_eq!(retired, Ok(false), "ended at a retired child");
        writer.join().unwrap();
    });
}
