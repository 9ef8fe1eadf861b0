//! An `optimistic` repeated level in a mixed chain (`optimistic Volume, optimistic Dir*,
//! File`): the repetitions read by version as the fixed optimistic levels are, in the same
//! passes (one restart bound, then the pessimistic pass holding every optimistic level and
//! repetition shared). What each method returns at every run-time depth, the exits (absent,
//! closed, cycle, timed out) numbered from the root with the repetitions, steps and stages that
//! run again after a restart, the key path read again from its start at each pass, the
//! pessimistic pass, locked and optimistic levels after the repeated one, every lock free
//! after a panic, and 8 threads with restarts forced at every repetition.

#![expect(
    clippy::needless_borrows_for_generic_args,
    reason = "a key path by reference: its iterator, cloned at each pass, clones no key"
)]

use chainlock::chain::{EpochGuard, EpochMap, MAX_RESTARTS};
use chainlock::hybrid::HybridLock;
use chainlock::parking_lot::{Mutex, RwLock};
use chainlock::walk::Step;
use chainlock::{ChainNode, Exit, chain::Absence, chain_locker};
use chainlock_suite::watchdog::watchdog;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

#[derive(ChainNode)]
struct Volume {
    #[chain(closed)]
    closed: AtomicBool,
    #[chain(children)]
    root: Arc<HybridLock<Dir>>,
}

#[derive(ChainNode, Default)]
struct Dir {
    #[chain(closed)]
    removed: AtomicBool,
    #[chain(children)]
    dirs: EpochMap<String, HybridLock<Dir>>,
    #[chain(children)]
    files: EpochMap<String, Mutex<File>>,
    #[chain(children)]
    metas: EpochMap<u32, HybridLock<Meta>>,
    #[chain(children)]
    shelves: EpochMap<u32, RwLock<Shelf>>,
}

/// An optimistic level below the repeated one.
#[derive(ChainNode, Default)]
struct Meta {
    #[chain(children)]
    files: EpochMap<String, Mutex<File>>,
}

/// A locked level below the repeated one, above the leaf.
#[derive(ChainNode, Default)]
struct Shelf {
    #[chain(children)]
    files: BTreeMap<String, Arc<Mutex<File>>>,
}

#[derive(ChainNode, Default)]
struct File {
    #[chain(closed)]
    deleted: bool,
    bytes: u64,
}

chain_locker! {
    /// The volume and every directory read optimistically, the file locked.
    struct Open(optimistic Volume, optimistic Dir*, File);
    /// The repeated level as the root.
    struct FromRoot(optimistic Dir*, File);
    /// An optimistic level after the repeated one.
    struct ViaMeta(optimistic Dir*, optimistic Meta, File);
    /// A locked level after the repeated one, then the leaf.
    struct ViaShelf(optimistic Volume, optimistic Dir*, shared Shelf, File);
    /// The shelf as the upgradable reader.
    struct ViaUpgradable(optimistic Dir*, upgradable Shelf, File);
}

type Root = Arc<HybridLock<Volume>>;

/// `depth + 1` nested directories (`/d/d/...`), in each a file `f` of `bytes` its depth, a
/// meta 0 with the same file, a shelf 0 with it too.
struct Tree {
    volume: Root,
    /// The root directory first.
    dirs: Vec<Arc<HybridLock<Dir>>>,
    files: Vec<Arc<Mutex<File>>>,
}

fn tree(depth: usize) -> Tree {
    let mut dirs: Vec<Arc<HybridLock<Dir>>> = Vec::new();
    let mut files = Vec::new();
    for level in (0..=depth).rev() {
        let file = Arc::new(Mutex::new(File {
            bytes: level as u64,
            ..File::default()
        }));
        let dir = Dir::default();
        dir.files.insert("f".into(), file.clone());
        let meta = Meta::default();
        meta.files.insert("f".into(), file.clone());
        dir.metas.insert(0, Arc::new(HybridLock::new(meta)));
        let shelf = Shelf {
            files: BTreeMap::from([("f".to_owned(), file.clone())]),
        };
        dir.shelves.insert(0, Arc::new(RwLock::new(shelf)));
        if let Some(child) = dirs.last() {
            dir.dirs.insert("d".into(), child.clone());
        }
        dirs.push(Arc::new(HybridLock::new(dir)));
        files.push(file);
    }
    dirs.reverse();
    files.reverse();
    let volume = Arc::new(HybridLock::new(Volume {
        closed: AtomicBool::new(false),
        root: dirs[0].clone(),
    }));
    Tree {
        volume,
        dirs,
        files,
    }
}

fn path(repetitions: usize) -> Vec<String> {
    vec!["d".to_owned(); repetitions]
}

fn f() -> String {
    "f".to_owned()
}

/// A step down `repetitions` directories named `d`, then `Here`.
fn down(
    repetitions: usize,
) -> impl for<'g> FnMut(&'g Dir, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<Dir>>> {
    move |dir, depth, guard| match dir.dirs.get("d", guard) {
        Some(child) if depth < repetitions => Step::Descend(child),
        _ => Step::Here,
    }
}

#[expect(clippy::unnecessary_wraps, reason = "a stage's signature")]
fn root_dir<'g>(volume: &'g Volume, _: &'g EpochGuard) -> Option<&'g Arc<HybridLock<Dir>>> {
    Some(&volume.root)
}

fn file<'g>(dir: &'g Dir, guard: &'g EpochGuard) -> Option<&'g Arc<Mutex<File>>> {
    dir.files.get("f", guard)
}

impl Tree {
    /// Nothing is held: every hybrid lock can be written, every file locked.
    fn free(&self) -> bool {
        self.volume.try_write().is_some()
            && self.dirs.iter().all(|dir| dir.try_write().is_some())
            && self.files.iter().all(|file| file.try_lock().is_some())
    }
}

#[test]
fn every_run_time_depth_reaches_the_leaf_by_keys_and_by_closures() {
    let tree = tree(5);
    for repetitions in 0..=5 {
        let bytes = Open.run_keys(&tree.volume, &(), &path(repetitions), &f(), |file| {
            file.bytes
        });
        assert_eq!(bytes, Ok(repetitions as u64), "{repetitions} repetitions");
        let bytes = Open.run(&tree.volume, root_dir, down(repetitions), file, |file| {
            file.bytes
        });
        assert_eq!(bytes, Ok(repetitions as u64));
        let guard = Open
            .descend_keys(&tree.volume, &(), &path(repetitions), &f())
            .unwrap();
        assert_eq!(guard.bytes, repetitions as u64);
        assert!(
            tree.volume.try_write().is_some() && tree.dirs.iter().all(|d| d.try_write().is_some()),
            "no lock above the leaf is held by the descent"
        );
        drop(guard);
        let root = &tree.dirs[0];
        let bytes = FromRoot.run_keys(root, path(repetitions), &f(), |file| file.bytes);
        assert_eq!(bytes, Ok(repetitions as u64));
        let bytes = ViaMeta.run_keys(root, path(repetitions), &0, &f(), |file| file.bytes);
        assert_eq!(bytes, Ok(repetitions as u64));
        let bytes = ViaShelf.run_keys(
            &tree.volume,
            &(),
            path(repetitions).iter(),
            &0,
            &f(),
            |file| file.bytes,
        );
        assert_eq!(bytes, Ok(repetitions as u64));
        let bytes = ViaUpgradable.run(
            root,
            down(repetitions),
            |dir: &Dir, guard: &EpochGuard| dir.shelves.get(&0, guard),
            |shelf| shelf.upgrade().files.get("f").cloned(),
            |file| file.bytes,
        );
        assert_eq!(bytes, Ok(repetitions as u64));
        let soon = Instant::now() + Duration::from_secs(10);
        let guard = ViaShelf
            .descend_keys_until(&tree.volume, soon, &(), &path(repetitions), &0, &f())
            .unwrap();
        assert_eq!(guard.bytes, repetitions as u64);
        drop(guard);
        assert!(tree.free());
    }
}

fn missing(level: usize) -> Result<(), Exit> {
    Err(Exit::Absent {
        level,
        cause: Absence::Missing,
    })
}

fn closed(level: usize) -> Result<(), Exit> {
    Err(Exit::Absent {
        level,
        cause: Absence::Closed,
    })
}

#[test]
fn exits_name_the_level_counted_from_the_root_with_the_repetitions() {
    let tree = tree(3);
    let v = &tree.volume;
    // The volume is level 0, the root directory 1: `d/d/x` is missing at level 4.
    let mut keys = path(2);
    keys.push("x".into());
    assert_eq!(Open.run_keys(v, &(), &keys, &f(), |_| ()), missing(4));
    // A missing file below the third directory (level 3) is missing at level 4.
    assert_eq!(
        Open.run_keys(v, &(), &path(2), &"x".to_owned(), |_| ()),
        missing(4)
    );
    assert_eq!(
        ViaShelf.run_keys(v, &(), &path(1), &9, &f(), |_| ()),
        missing(3)
    );
    assert_eq!(
        ViaShelf.run_keys(v, &(), &path(1), &0, &"x".to_owned(), |_| ()),
        missing(4)
    );
    assert_eq!(
        ViaMeta.run_keys(&tree.dirs[0], path(3), &7, &f(), |_| ()),
        missing(4)
    );
    // Closed: a directory (the third repetition, level 3), then a file, then the volume.
    tree.dirs[2].write().removed.store(true, Relaxed);
    assert_eq!(Open.run_keys(v, &(), &path(1), &f(), |_| ()), Ok(()));
    assert_eq!(Open.run_keys(v, &(), &path(2), &f(), |_| ()), closed(3));
    assert_eq!(Open.run_keys(v, &(), &path(3), &f(), |_| ()), closed(3));
    assert_eq!(
        FromRoot.run_keys(&tree.dirs[0], path(2), &f(), |_| ()),
        closed(2)
    );
    tree.dirs[2].write().removed.store(false, Relaxed);
    tree.files[1].lock().deleted = true;
    assert_eq!(Open.run_keys(v, &(), &path(1), &f(), |_| ()), closed(3));
    assert_eq!(
        ViaShelf.run_keys(v, &(), &path(1), &0, &f(), |_| ()),
        closed(4)
    );
    tree.files[1].lock().deleted = false;
    tree.volume.write().closed.store(true, Relaxed);
    assert_eq!(Open.run_keys(v, &(), &path(0), &f(), |_| ()), closed(0));
    tree.volume.write().closed.store(false, Relaxed);
    // A step that hands back the directory it runs on (a directory listed in itself): a
    // cycle, one level below it.
    tree.dirs[1]
        .write()
        .dirs
        .insert("self".into(), tree.dirs[1].clone());
    let cycle = Open.run(
        v,
        root_dir,
        |dir: &Dir, depth, guard: &EpochGuard| match depth {
            0 => Step::Descend(dir.dirs.get("d", guard).unwrap()),
            _ => Step::Descend(dir.dirs.get("self", guard).unwrap()),
        },
        file,
        |_| (),
    );
    assert_eq!(cycle, Err(Exit::Cycle { level: 3 }));
    let mut keys = path(1);
    keys.push("self".into());
    assert_eq!(
        Open.run_keys(v, &(), &keys, &f(), |_| ()),
        Err(Exit::Cycle { level: 3 })
    );
    tree.dirs[1].write().dirs.remove("self");
    // `Absent` from the step: one level below the repetition; `Target` ends at the child.
    let absent = Open.run(
        v,
        root_dir,
        |_: &Dir, _, _: &EpochGuard| Step::Absent,
        file,
        |_| (),
    );
    assert_eq!(absent, missing(2));
    let target = Open.run(
        v,
        root_dir,
        |dir: &Dir, _, guard: &EpochGuard| {
            dir.dirs.get("d", guard).map_or(Step::Here, Step::Target)
        },
        file,
        |file| file.bytes,
    );
    assert_eq!(target, Ok(1));
    assert!(tree.free());
}

#[test]
fn a_writer_in_the_middle_of_a_pass_makes_the_steps_and_stages_run_again() {
    let tree = tree(3);
    let (steps, stages) = (AtomicUsize::new(0), AtomicUsize::new(0));
    // The first call of the step at depth 1 writes the directory it reads (a writer between
    // its version and its validation): the pass restarts from the volume.
    let found = Open.run(
        &tree.volume,
        |volume: &Volume, _: &EpochGuard| {
            stages.fetch_add(1, Relaxed);
            Some(&volume.root)
        },
        |dir: &Dir, depth, guard: &EpochGuard| {
            if depth == 1 && steps.fetch_add(1, Relaxed) == 0 {
                drop(tree.dirs[1].write());
            }
            match dir.dirs.get("d", guard) {
                Some(child) if depth < 2 => Step::Descend(child),
                _ => Step::Here,
            }
        },
        file,
        |file| file.bytes,
    );
    assert_eq!(found, Ok(2));
    assert_eq!(stages.load(Relaxed), 2, "one restart, one more pass");
    assert_eq!(steps.load(Relaxed), 2);
}

#[test]
fn a_reader_that_keeps_meeting_writers_falls_back_to_shared_holds() {
    let tree = tree(3);
    let calls = AtomicUsize::new(0);
    // Every optimistic pass meets a writer of the second directory; the pessimistic pass
    // holds it shared, where the step's `try_write` fails.
    let found = Open.run(
        &tree.volume,
        root_dir,
        |dir: &Dir, depth, guard: &EpochGuard| {
            if depth == 1 {
                calls.fetch_add(1, Relaxed);
                if let Some(write) = tree.dirs[1].try_write() {
                    drop(write);
                }
            }
            match dir.dirs.get("d", guard) {
                Some(child) if depth < 3 => Step::Descend(child),
                _ => Step::Here,
            }
        },
        file,
        |file| file.bytes,
    );
    assert_eq!(found, Ok(3));
    assert_eq!(calls.load(Relaxed), MAX_RESTARTS + 2);
    assert!(tree.free());
}

#[test]
fn deadlines_bound_the_locked_levels_and_the_pessimistic_pass() {
    let _watchdog = watchdog("chain_optimistic_mixed deadlines");
    let tree = tree(3);
    let v = &tree.volume;
    let soon = || Instant::now() + Duration::from_millis(20);
    // The leaf is held: timed out at the file below the third directory (level 4).
    let held = tree.files[2].lock();
    assert_eq!(
        Open.descend_keys_until(v, soon(), &(), &path(2), &f())
            .err(),
        Some(Exit::TimedOut { level: 4 })
    );
    assert_eq!(
        ViaShelf.run_keys_until(v, soon(), &(), &path(2), &0, &f(), |_| ()),
        Err(Exit::TimedOut { level: 5 })
    );
    drop(held);
    // A writer holds the second directory: every optimistic pass restarts there, and the
    // pessimistic pass waits for its shared hold until the deadline.
    let writer = tree.dirs[1].write();
    assert_eq!(
        Open.run_keys_until(v, soon(), &(), &path(2), &f(), |_| ()),
        Err(Exit::TimedOut { level: 2 })
    );
    assert_eq!(
        Open.run_until(v, soon(), root_dir, down(2), file, |_| ()),
        Err(Exit::TimedOut { level: 2 })
    );
    // Without a deadline the pessimistic pass waits for the writer, then finishes.
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| Open.run_keys(v, &(), &path(2), &f(), |file| file.bytes));
        drop(writer);
        assert_eq!(reader.join().unwrap(), Ok(2));
    });
    assert!(tree.free());
}

#[test]
fn a_panicking_step_leaves_every_lock_free() {
    let tree = tree(3);
    for pessimistic in [false, true] {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ViaShelf.run(
                &tree.volume,
                root_dir,
                |dir: &Dir, depth, guard: &EpochGuard| {
                    if depth < 2 {
                        return Step::Descend(dir.dirs.get("d", guard).unwrap());
                    }
                    // Asked for the pessimistic pass: each optimistic pass meets a writer of
                    // this directory; the pessimistic pass holds it shared, and panics there.
                    if pessimistic && let Some(write) = tree.dirs[2].try_write() {
                        drop(write);
                        return Step::Here;
                    }
                    panic!("a step panics");
                },
                |dir: &Dir, guard: &EpochGuard| dir.shelves.get(&0, guard),
                |shelf: &Shelf| shelf.files.get("f").cloned(),
                |_| (),
            )
        }));
        assert!(outcome.is_err(), "the step panicked");
        assert!(tree.free(), "every lock is free");
    }
    // A panicking stage of a locked level below the repeated one.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ViaShelf.run(
            &tree.volume,
            root_dir,
            down(1),
            |dir: &Dir, guard: &EpochGuard| dir.shelves.get(&0, guard),
            |_: &Shelf| -> Option<Arc<Mutex<File>>> { panic!("a stage panics") },
            |_| (),
        )
    }));
    assert!(outcome.is_err());
    assert!(tree.free());
}

/// The stress tree: a volume, a root directory, `NAMES` directories in each directory down to
/// depth `DEPTH`, a file per name in each; directories replaced (the old subtree's top
/// retired under its exclusive hold after it is unlinked), files replaced and removed (retired
/// under their lock), a directory's pair changed under its exclusive hold. `generation` names
/// a directory's making, and each file says which it was made for.
mod stress {
    use super::*;
    use rand::Rng;
    use std::sync::atomic::AtomicU64;

    #[derive(ChainNode)]
    pub(super) struct Volume {
        #[chain(children)]
        pub(super) root: Arc<HybridLock<Dir>>,
    }

    #[derive(ChainNode, Default)]
    pub(super) struct Dir {
        #[chain(closed)]
        pub(super) retired: AtomicBool,
        pub(super) generation: u64,
        /// Below the root directory.
        pub(super) depth: usize,
        /// Equal at the end of every exclusive hold.
        pub(super) a: AtomicU64,
        pub(super) b: AtomicU64,
        #[chain(children)]
        pub(super) dirs: EpochMap<u32, HybridLock<Dir>>,
        #[chain(children)]
        pub(super) files: EpochMap<u32, Mutex<File>>,
    }

    #[derive(ChainNode, Default)]
    pub(super) struct File {
        pub(super) generation: u64,
        /// Its directory's.
        pub(super) depth: usize,
        pub(super) retired: bool,
        pub(super) visits: u64,
    }

    chain_locker!(pub(super) struct Open(optimistic Volume, optimistic Dir*, File););

    pub(super) const NAMES: u32 = 2;
    pub(super) const DEPTH: usize = 2;

    /// A directory of `generation` with `below` levels of directories under it.
    pub(super) fn dir(generation: &AtomicU64, below: usize) -> Arc<HybridLock<Dir>> {
        let dir = Dir {
            generation: generation.fetch_add(1, Relaxed),
            depth: DEPTH - below,
            ..Dir::default()
        };
        for name in 0..NAMES {
            dir.files.insert(name, file(&dir));
            if below > 0 {
                dir.dirs.insert(name, self::dir(generation, below - 1));
            }
        }
        Arc::new(HybridLock::new(dir))
    }

    fn file(dir: &Dir) -> Arc<Mutex<File>> {
        Arc::new(Mutex::new(File {
            generation: dir.generation,
            depth: dir.depth,
            ..File::default()
        }))
    }

    /// The directory `depth` names below `root` along random names, if linked.
    pub(super) fn find(
        root: &Arc<HybridLock<Dir>>,
        depth: usize,
        rng: &mut impl Rng,
    ) -> Option<Arc<HybridLock<Dir>>> {
        let guard = EpochGuard::pin();
        let mut dir = root.clone();
        for _ in 0..depth {
            let name = rng.random_range(0..NAMES);
            // Read optimistically (no shared hold keeping the readers' forced writes out).
            let next = loop {
                if let Ok(next) = dir.read_optimistic(|dir| dir.dirs.get(&name, &guard).cloned()) {
                    break next?;
                }
            };
            dir = next;
        }
        Some(dir)
    }

    /// What a reader's call answers: the file's generation, depth and retirement; how many
    /// passes it made; the last directory's generation and pair as the stage into the file
    /// read them (closures only).
    pub(super) type Answer = (
        Result<(u64, usize, bool), Exit>,
        usize,
        Option<(u64, (u64, u64))>,
    );

    fn visit(file: &mut File) -> (u64, usize, bool) {
        file.visits += 1;
        (file.generation, file.depth, file.retired)
    }

    /// A descent along `names` to file `leaf` by closures; `force`: each optimistic pass
    /// writes the root directory (a restart there, up to the pessimistic pass).
    pub(super) fn by_closures(
        volume: &Arc<HybridLock<Volume>>,
        root: &Arc<HybridLock<Dir>>,
        names: &[u32],
        leaf: u32,
        force: bool,
    ) -> Answer {
        let mut passes = 0;
        let seen = std::cell::Cell::new(None);
        let outcome = Open.run(
            volume,
            |volume: &Volume, _: &EpochGuard| Some(&volume.root),
            |dir: &Dir, depth, guard: &EpochGuard| {
                if depth == 0 {
                    passes += 1;
                    if force {
                        drop(root.try_write());
                    }
                }
                match names.get(depth) {
                    None => Step::Here,
                    Some(name) => dir
                        .dirs
                        .get(name, guard)
                        .map_or(Step::Absent, Step::Descend),
                }
            },
            |dir: &Dir, guard: &EpochGuard| {
                let pair = (dir.a.load(Relaxed), dir.b.load(Relaxed));
                seen.set(Some((dir.generation, pair)));
                dir.files.get(&leaf, guard)
            },
            visit,
        );
        (outcome, passes, seen.get())
    }

    /// The same by key path: its iterator is read again from its start at each pass (a pass
    /// that went on from where a restarted one stopped would end at another depth).
    pub(super) fn by_keys(volume: &Arc<HybridLock<Volume>>, names: &[u32], leaf: u32) -> Answer {
        (Open.run_keys(volume, &(), names, &leaf, visit), 1, None)
    }

    /// One writer's change somewhere in the tree.
    pub(super) fn change(root: &Arc<HybridLock<Dir>>, generation: &AtomicU64, rng: &mut impl Rng) {
        let depth = rng.random_range(0..DEPTH);
        let Some(parent) = find(root, depth, rng) else {
            return;
        };
        let name = rng.random_range(0..NAMES);
        match rng.random_range(0..4) {
            0 => {
                let fresh = dir(generation, DEPTH - depth - 1);
                let old = parent.write().dirs.insert(name, fresh);
                if let Some(old) = old {
                    old.write().retired.store(true, Relaxed);
                }
            }
            1 | 2 => {
                let held = parent.write();
                let old = if rng.random_bool(0.5) {
                    held.files.insert(name, file(&held))
                } else {
                    held.files.remove(&name)
                };
                drop(held);
                if let Some(old) = old {
                    old.lock().retired = true;
                }
            }
            _ => {
                let held = parent.write();
                held.a.fetch_add(1, Relaxed);
                held.b.fetch_add(1, Relaxed);
            }
        }
    }
}

/// 8 threads: 2 writers changing the tree at every depth, 1 thread bumping the volume's and
/// the directories' versions along random paths without changing anything (a restart at that
/// level or repetition for every reader it meets), 5 readers by key path and by closures at
/// random depths; one reader in two forces every optimistic pass of some of its calls to
/// restart at the root directory, so they end on the pessimistic pass. Every call returns
/// (the scope joins under the watchdog) and every answer is checked: a file reached is linked
/// (never retired), of the generation of the directory the descent validated last, whose pair
/// was read whole; an exit is an absent or closed directory or file.
#[test]
fn eight_threads_with_restarts_forced_at_every_repetition_get_no_stale_answer() {
    use rand::Rng;
    use std::sync::atomic::AtomicU64;
    use stress::{DEPTH, NAMES, Volume};
    const READERS: usize = 5;
    const CALLS: usize = 2_000;
    let _watchdog = watchdog("chain_optimistic_mixed stress");
    let generation = AtomicU64::new(0);
    let root = stress::dir(&generation, DEPTH);
    let volume = Arc::new(HybridLock::new(Volume { root: root.clone() }));
    let readers_done = AtomicUsize::new(0);
    let (passes_total, reached, fallbacks) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut rng = rand::rng();
                while readers_done.load(Relaxed) < READERS {
                    stress::change(&root, &generation, &mut rng);
                }
            });
        }
        scope.spawn(|| {
            let mut rng = rand::rng();
            while readers_done.load(Relaxed) < READERS {
                drop(volume.write());
                for depth in 0..=DEPTH {
                    if let Some(dir) = stress::find(&root, depth, &mut rng) {
                        drop(dir.write());
                    }
                }
            }
        });
        for reader in 0..READERS {
            let (volume, root) = (&volume, &root);
            let (passes_total, reached, fallbacks) = (&passes_total, &reached, &fallbacks);
            let readers_done = &readers_done;
            scope.spawn(move || {
                let _done = Done(readers_done);
                let mut rng = rand::rng();
                for call in 0..CALLS {
                    let names: Vec<u32> = (0..rng.random_range(0..=DEPTH))
                        .map(|_| rng.random_range(0..NAMES))
                        .collect();
                    let leaf = rng.random_range(0..NAMES);
                    let force = reader % 2 == 0 && call % 100 == 0;
                    let (outcome, passes, seen) = if call % 2 == 0 {
                        stress::by_closures(volume, root, &names, leaf, force)
                    } else {
                        stress::by_keys(volume, &names, leaf)
                    };
                    passes_total.fetch_add(passes, Relaxed);
                    if passes > MAX_RESTARTS + 1 {
                        fallbacks.fetch_add(1, Relaxed);
                    }
                    match outcome {
                        Ok((generation, depth, retired)) => {
                            assert!(!retired, "a retired file");
                            assert_eq!(depth, names.len(), "a file at another depth");
                            if let Some((dir, (a, b))) = seen {
                                assert_eq!(
                                    generation, dir,
                                    "a file of another directory generation"
                                );
                                assert_eq!(a, b, "a directory read mid-write");
                            }
                            reached.fetch_add(1, Relaxed);
                        }
                        Err(Exit::Absent { level, .. }) if level >= 2 => {}
                        Err(other) => panic!("unexpected exit {other:?}"),
                    }
                }
            });
        }
    });
    let calls = READERS * CALLS;
    assert!(reached.load(Relaxed) > 0);
    assert!(passes_total.load(Relaxed) > calls, "restarts happened");
    println!(
        "{calls} calls, {} reached a file, {} passes counted, {} on the pessimistic pass",
        reached.load(Relaxed),
        passes_total.load(Relaxed),
        fallbacks.load(Relaxed)
    );
}

/// Counts a finished reader when dropped.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}
