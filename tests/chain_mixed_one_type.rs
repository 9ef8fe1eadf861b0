//! Mixed chains of one recursive node type (issue 29, found from outside): a root `Dir`, then
//! `Dir*`, then a file, in shared, exclusive and optimistic modes. Such a chain's key-path
//! methods once bound the repeated level's lock to a projection equal to itself (the parent
//! being the repeated type), and the locker did not compile (E0275). Each locker here
//! descends a small tree at every run-time depth by keys and by closures, in every flavor it
//! has, and names its levels from the root, repetitions included, in its exits.

use chainlock::walk::Step;
use chainlock::{ChainNode, Exit, chain::Absence, chain_locker};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn path(repetitions: usize) -> Vec<String> {
    vec!["d".to_owned(); repetitions]
}

fn d() -> String {
    "d".to_owned()
}

fn f() -> String {
    "f".to_owned()
}

fn soon() -> Instant {
    Instant::now() + Duration::from_millis(20)
}

/// Missing at `level`.
fn missing<T>(level: usize) -> Result<T, Exit> {
    Err(Exit::Absent {
        level,
        cause: Absence::Missing,
    })
}

/// parking_lot's locks, logged: shared, exclusive, and the two mixed.
mod locked {
    use super::{Step, d, f, missing, path, soon};
    use chainlock::{ChainNode, Exit, chain_locker};
    use chainlock_suite::logged::{Event, LoggedMutex, LoggedRwLock, id_of, rw_id_of, take_log};
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[derive(ChainNode, Default)]
    pub(super) struct Dir {
        #[chain(children)]
        dirs: BTreeMap<String, Arc<LoggedRwLock<Dir>>>,
        #[chain(children)]
        files: BTreeMap<String, Arc<LoggedMutex<u64>>>,
    }

    chain_locker! {
        /// The root directory, any number of directories, a file.
        struct Open(shared Dir, shared Dir*, u64);
        struct Write(Dir, Dir*, u64);
        struct WriteRoot(Dir, shared Dir*, u64);
        struct ReadRoot(shared Dir, Dir*, u64);
        /// The repeated level as the leaf.
        struct ToDir(shared Dir, shared Dir*);
    }

    /// `/d/d/...`: the root and `depth` directories below it (the root first), in each a
    /// file `f` holding its depth.
    struct Tree {
        dirs: Vec<Arc<LoggedRwLock<Dir>>>,
        files: Vec<Arc<LoggedMutex<u64>>>,
    }

    fn tree(depth: usize) -> Tree {
        let (mut dirs, mut files) = (Vec::new(), Vec::new());
        for level in (0..=depth).rev() {
            let file = Arc::new(LoggedMutex::new(level as u64));
            let mut dir = Dir::default();
            dir.files.insert(f(), file.clone());
            if let Some(child) = dirs.last() {
                dir.dirs.insert(d(), Arc::clone(child));
            }
            dirs.push(Arc::new(LoggedRwLock::new(dir)));
            files.push(file);
        }
        dirs.reverse();
        files.reverse();
        take_log();
        Tree { dirs, files }
    }

    impl Tree {
        fn unlocked(&self) -> bool {
            self.dirs.iter().all(|dir| !dir.is_locked())
                && self.files.iter().all(|file| !file.is_locked())
        }

        /// Dirs `0..=deepest` shared, then file `deepest` exclusive, hand over hand.
        fn expected(&self, deepest: usize) -> Vec<Event> {
            let mut log = vec![Event::Shared(rw_id_of(&self.dirs[0]))];
            let mut held = rw_id_of(&self.dirs[0]);
            for dir in &self.dirs[1..=deepest] {
                log.extend([Event::Shared(rw_id_of(dir)), Event::Unlocked(held)]);
                held = rw_id_of(dir);
            }
            let file = id_of(&self.files[deepest]);
            log.extend([
                Event::Locked(file),
                Event::Unlocked(held),
                Event::Unlocked(file),
            ]);
            log
        }
    }

    #[test]
    fn a_root_dir_then_dirs_then_a_file_locks_hand_over_hand_at_every_depth() {
        let tree = tree(5);
        let root = &tree.dirs[0];
        for repetitions in 0..5 {
            // The first repetition is the root's child `d`, then `repetitions` more.
            let deepest = repetitions + 1;
            let bytes = Open.run_keys(root, &d(), path(repetitions), &f(), |bytes| *bytes);
            assert_eq!(bytes, Ok(deepest as u64), "{repetitions} repetitions");
            assert_eq!(take_log(), tree.expected(deepest));
            let bytes = Open.run(
                root,
                |dir| dir.dirs.get("d").cloned(),
                |dir, depth| match dir.dirs.get("d") {
                    Some(child) if depth < repetitions => Step::Descend(child.clone()),
                    _ => Step::Here,
                },
                |dir| dir.files.get("f").cloned(),
                |bytes| *bytes,
            );
            assert_eq!(bytes, Ok(deepest as u64));
            assert_eq!(take_log(), tree.expected(deepest));
            let guard = Open
                .descend_keys(root, &d(), path(repetitions), &f())
                .unwrap();
            assert_eq!(*guard, deepest as u64);
            drop(guard);
            let later = Instant::now() + Duration::from_secs(10);
            let bytes = Open.run_keys_until(root, later, &d(), path(repetitions), &f(), |b| *b);
            assert_eq!(bytes, Ok(deepest as u64));
            take_log();

            // Exclusively all the way, and the two mixes: each adds one to the file.
            let keys = path(repetitions);
            Write
                .run_keys(root, &d(), &keys, &f(), |bytes| *bytes += 1)
                .unwrap();
            WriteRoot
                .run_keys(root, &d(), &keys, &f(), |bytes| *bytes += 1)
                .unwrap();
            ReadRoot
                .run_keys_until(root, later, &d(), &keys, &f(), |bytes| *bytes += 1)
                .unwrap();
            let mut guard = Write
                .descend(
                    root,
                    |dir| dir.dirs.get("d").cloned(),
                    |dir, depth| match dir.dirs.get("d") {
                        Some(child) if depth < repetitions => Step::Descend(child.clone()),
                        _ => Step::Here,
                    },
                    |dir| dir.files.get("f").cloned(),
                )
                .unwrap();
            assert_eq!(*guard, deepest as u64 + 3);
            *guard -= 3;
            drop(guard);
            let dir = ToDir.descend_keys(root, &d(), &keys).unwrap();
            assert!(Arc::ptr_eq(&dir.files["f"], &tree.files[deepest]));
            drop(dir);
            take_log();
            assert!(tree.unlocked());
        }
    }

    #[test]
    fn exits_name_the_level_counted_from_the_root() {
        let tree = tree(3);
        let root = &tree.dirs[0];
        // No `x` below the root (level 1), below the third directory (level 3); no file `x`.
        assert_eq!(
            Open.run_keys(root, &"x".to_owned(), path(2), &f(), |_| ()),
            missing(1)
        );
        assert_eq!(
            Write.run_keys(root, &d(), ["d".to_owned(), "x".to_owned()], &f(), |_| ()),
            missing(3)
        );
        assert_eq!(
            Open.run_keys(root, &d(), path(1), &"x".to_owned(), |_| ()),
            missing(3)
        );
        // The second directory is written: timed out there.
        let writer = tree.dirs[2].write();
        assert_eq!(
            Open.run_keys_until(root, soon(), &d(), path(1), &f(), |_| ()),
            Err(Exit::TimedOut { level: 2 })
        );
        drop(writer);
        take_log();
        assert!(tree.unlocked());
    }
}

/// tokio's locks: the async flavors.
mod on_tokio {
    use super::{BTreeMap, ChainNode, Exit, Step, chain_locker, d, f, path, soon};
    use std::sync::Arc;
    use tokio::sync::{Mutex, RwLock};

    #[derive(ChainNode, Default)]
    struct Dir {
        #[chain(children)]
        dirs: BTreeMap<String, Arc<RwLock<Dir>>>,
        #[chain(children)]
        files: BTreeMap<String, Arc<Mutex<u64>>>,
    }

    chain_locker! {
        struct Open(shared Dir, shared Dir*, u64);
        struct Write(Dir, Dir*, u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_root_dir_then_dirs_then_a_file_descend_asynchronously() {
        // `/d/d`, a file `f` in each directory holding its depth.
        let mut dirs: Vec<Arc<RwLock<Dir>>> = Vec::new();
        for level in (0..=2).rev() {
            let mut dir = Dir::default();
            dir.files.insert(f(), Arc::new(Mutex::new(level)));
            if let Some(child) = dirs.last() {
                dir.dirs.insert(d(), Arc::clone(child));
            }
            dirs.push(Arc::new(RwLock::new(dir)));
        }
        dirs.reverse();
        let root = dirs[0].clone();
        // The future is `Send`: it runs in a spawned task.
        let spawned = tokio::spawn(async move {
            Open.run_keys_async(&root, &d(), path(1), &f(), |bytes| *bytes)
                .await
        });
        assert_eq!(spawned.await.unwrap(), Ok(2));
        let root = &dirs[0];
        Write
            .run_keys_async(root, &d(), path(0), &f(), |bytes| *bytes += 10)
            .await
            .unwrap();
        let guard = Write
            .descend_async(
                root,
                |dir| dir.dirs.get("d").cloned(),
                |_, _| Step::Here,
                |dir| dir.files.get("f").cloned(),
            )
            .await
            .unwrap();
        assert_eq!(*guard, 11);
        drop(guard);
        // The second directory is written: timed out there.
        let writer = dirs[2].write().await;
        assert_eq!(
            Open.run_keys_until_async(root, soon(), &d(), path(1), &f(), |_| ())
                .await,
            Err(Exit::TimedOut { level: 2 })
        );
        drop(writer);
        assert!(dirs.iter().all(|dir| dir.try_write().is_ok()));
    }
}

/// `HybridLock` nodes in `EpochMap`s: the root and the repetitions read optimistically, and
/// the same tree locked shared.
mod optimistic {
    use super::{Step, d, f, missing, path, soon};
    use chainlock::chain::{EpochGuard, EpochMap};
    use chainlock::hybrid::HybridLock;
    use chainlock::parking_lot::Mutex;
    use chainlock::{ChainNode, Exit, chain_locker};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    #[derive(ChainNode, Default)]
    struct Dir {
        #[chain(closed)]
        removed: AtomicBool,
        #[chain(children)]
        dirs: EpochMap<String, HybridLock<Dir>>,
        #[chain(children)]
        files: EpochMap<String, Mutex<u64>>,
    }

    chain_locker! {
        struct Open(optimistic Dir, optimistic Dir*, u64);
        struct Locked(shared Dir, shared Dir*, u64);
        /// An optimistic level between the root and the repeated one.
        struct Below(optimistic Dir, optimistic Dir, optimistic Dir*, u64);
    }

    type Lent<'g, T> = Option<&'g Arc<T>>;

    fn first<'g>(dir: &'g Dir, guard: &'g EpochGuard) -> Lent<'g, HybridLock<Dir>> {
        dir.dirs.get("d", guard)
    }

    fn file<'g>(dir: &'g Dir, guard: &'g EpochGuard) -> Lent<'g, Mutex<u64>> {
        dir.files.get("f", guard)
    }

    /// A step down `repetitions` more directories named `d`, then `Here`.
    fn down(
        repetitions: usize,
    ) -> impl for<'g> FnMut(&'g Dir, usize, &'g EpochGuard) -> Step<&'g Arc<HybridLock<Dir>>> {
        move |dir, depth, guard| match dir.dirs.get("d", guard) {
            Some(child) if depth < repetitions => Step::Descend(child),
            _ => Step::Here,
        }
    }

    /// `/d/d/...`: the root and `depth` directories (the root first), a file `f` in each
    /// holding its depth.
    type Tree = (Vec<Arc<HybridLock<Dir>>>, Vec<Arc<Mutex<u64>>>);

    fn tree(depth: usize) -> Tree {
        let (mut dirs, mut files) = (Vec::<Arc<HybridLock<Dir>>>::new(), Vec::new());
        for level in (0..=depth).rev() {
            let file = Arc::new(Mutex::new(level as u64));
            let dir = Dir::default();
            dir.files.insert(f(), file.clone());
            if let Some(child) = dirs.last() {
                dir.dirs.insert(d(), Arc::clone(child));
            }
            dirs.push(Arc::new(HybridLock::new(dir)));
            files.push(file);
        }
        dirs.reverse();
        files.reverse();
        (dirs, files)
    }

    #[test]
    fn a_root_dir_then_dirs_then_a_file_are_read_optimistically_at_every_depth() {
        let (dirs, files) = tree(5);
        let root = &dirs[0];
        let free = || {
            dirs.iter().all(|dir| dir.try_write().is_some())
                && files.iter().all(|file| file.try_lock().is_some())
        };
        let later = Instant::now() + Duration::from_secs(10);
        for repetitions in 0..5 {
            let deepest = repetitions as u64 + 1;
            let keys = path(repetitions);
            assert_eq!(
                Open.run_keys(root, &d(), &keys, &f(), |bytes| *bytes),
                Ok(deepest),
                "{repetitions} repetitions"
            );
            assert_eq!(
                Open.run(root, first, down(repetitions), file, |bytes| *bytes),
                Ok(deepest)
            );
            let guard = Open.descend_keys(root, &d(), &keys, &f()).unwrap();
            assert_eq!(*guard, deepest);
            assert!(
                dirs.iter().all(|dir| dir.try_write().is_some()),
                "no directory is held by the descent"
            );
            drop(guard);
            let guard = Open
                .descend_until(root, later, first, down(repetitions), file)
                .unwrap();
            assert_eq!(*guard, deepest);
            drop(guard);
            assert_eq!(
                Open.run_keys_until(root, later, &d(), &keys, &f(), |bytes| *bytes),
                Ok(deepest)
            );
            // The same chain locked shared (a `HybridLock` has a shared mode).
            assert_eq!(
                Locked.run_keys(root, &d(), &keys, &f(), |bytes| *bytes),
                Ok(deepest)
            );
            let guard = Locked
                .descend_keys_until(root, later, &d(), &keys, &f())
                .unwrap();
            assert_eq!(*guard, deepest);
            drop(guard);
            assert!(free());
        }
    }

    #[test]
    fn an_optimistic_level_between_the_root_and_the_repeated_one() {
        let (dirs, files) = tree(4);
        let root = &dirs[0];
        for repetitions in 0..3 {
            // The root, one fixed directory, `repetitions` more, then the file.
            let deepest = repetitions as u64 + 2;
            let keys = path(repetitions);
            assert_eq!(
                Below.run_keys(root, &d(), &d(), &keys, &f(), |bytes| *bytes),
                Ok(deepest),
                "{repetitions} repetitions"
            );
            assert_eq!(
                Below.run(root, first, first, down(repetitions), file, |bytes| *bytes),
                Ok(deepest)
            );
        }
        assert!(dirs.iter().all(|dir| dir.try_write().is_some()));
        assert!(files.iter().all(|file| file.try_lock().is_some()));
    }

    #[test]
    fn exits_name_the_level_counted_from_the_root() {
        let (dirs, files) = tree(3);
        let root = &dirs[0];
        assert_eq!(
            Open.run_keys(root, &"x".to_owned(), path(2), &f(), |_| ()),
            missing(1)
        );
        assert_eq!(
            Open.run_keys(root, &d(), ["d".to_owned(), "x".to_owned()], &f(), |_| ()),
            missing(3)
        );
        // The file below the second directory (level 3) is held: timed out there.
        let held = files[2].lock();
        assert_eq!(
            Open.run_keys_until(root, soon(), &d(), path(1), &f(), |_| ()),
            Err(Exit::TimedOut { level: 3 })
        );
        drop(held);
        // A writer on the second directory: the pessimistic pass times out there.
        let writer = dirs[2].write();
        assert_eq!(
            Open.run_until(root, soon(), first, down(1), file, |_| ()),
            Err(Exit::TimedOut { level: 2 })
        );
        drop(writer);
        assert!(dirs.iter().all(|dir| dir.try_write().is_some()));
    }
}
