//! Mixed chains (issue 10, item 3): a fixed prefix, one level repeated a run-time number of
//! times, then fixed levels (`Volume → Dir* → File`), by key path and by closures; the
//! order of every acquisition and release, early exits at every level, and the levels
//! numbered from the root, repetitions included.

use chainlock::walk::Step;
use chainlock::{ChainNode, Exit, chain::Absence, chain_locker};
use chainlock_suite::logged::{Event, LoggedMutex, LoggedRwLock, id_of, rw_id_of, take_log};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(ChainNode)]
struct Volume {
    #[chain(children)]
    root: Arc<LoggedRwLock<Dir>>,
}

#[derive(ChainNode, Default)]
struct Dir {
    #[chain(children)]
    dirs: BTreeMap<String, Arc<LoggedRwLock<Dir>>>,
    #[chain(children)]
    files: BTreeMap<String, Arc<LoggedMutex<File>>>,
    #[chain(closed)]
    removed: bool,
}

#[derive(ChainNode)]
struct File {
    bytes: u64,
}

chain_locker! {
    /// Open a file: the volume and every directory read-locked on the way, the file locked.
    struct Open(shared Volume, shared Dir*, File);
    /// The same from the root directory, the repeated level first.
    struct FromRoot(shared Dir*, File);
    /// Down to a directory, exclusively all the way.
    struct ToDir(Volume, Dir*);
}

/// `depth` nested directories under the volume's root (`/d/d/...`), a file `f` in each.
struct Tree {
    volume: Arc<LoggedRwLock<Volume>>,
    /// The root directory first.
    dirs: Vec<Arc<LoggedRwLock<Dir>>>,
    files: Vec<Arc<LoggedMutex<File>>>,
}

fn tree(depth: usize) -> Tree {
    let mut dirs: Vec<Arc<LoggedRwLock<Dir>>> = Vec::new();
    let mut files = Vec::new();
    for level in (0..=depth).rev() {
        let file = Arc::new(LoggedMutex::new(File {
            bytes: level as u64,
        }));
        let mut dir = Dir::default();
        dir.files.insert("f".into(), file.clone());
        if let Some(child) = dirs.last() {
            dir.dirs.insert("d".into(), child.clone());
        }
        dirs.push(Arc::new(LoggedRwLock::new(dir)));
        files.push(file);
    }
    dirs.reverse();
    files.reverse();
    let volume = Arc::new(LoggedRwLock::new(Volume {
        root: dirs[0].clone(),
    }));
    take_log();
    Tree {
        volume,
        dirs,
        files,
    }
}

fn path(repetitions: usize) -> Vec<String> {
    vec!["d".to_owned(); repetitions]
}

impl Tree {
    fn unlocked(&self) -> bool {
        !self.volume.is_locked()
            && self.dirs.iter().all(|dir| !dir.is_locked())
            && self.files.iter().all(|file| !file.is_locked())
    }

    /// Volume, dirs `0..=deepest` shared, then file `deepest` exclusive, hand over hand.
    fn expected(&self, deepest: usize) -> Vec<Event> {
        let mut log = vec![Event::Shared(rw_id_of(&self.volume))];
        let mut held = rw_id_of(&self.volume);
        for dir in &self.dirs[..=deepest] {
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
fn every_run_time_depth_locks_hand_over_hand() {
    let tree = tree(6);
    for repetitions in 0..=6 {
        let bytes = Open.run_keys(
            &tree.volume,
            &(),
            path(repetitions),
            &"f".to_owned(),
            |file| file.bytes,
        );
        assert_eq!(bytes, Ok(repetitions as u64));
        assert_eq!(
            take_log(),
            tree.expected(repetitions),
            "{repetitions} repetitions"
        );
        assert!(tree.unlocked());

        // The same walk with closures: the step chooses at each directory.
        let bytes = Open.run(
            &tree.volume,
            |volume| Some(volume.root.clone()),
            |dir, depth| match dir.dirs.get("d") {
                Some(child) if depth < repetitions => Step::Descend(child.clone()),
                _ => Step::Here,
            },
            |dir| dir.files.get("f").cloned(),
            |file| file.bytes,
        );
        assert_eq!(bytes, Ok(repetitions as u64));
        assert_eq!(take_log(), tree.expected(repetitions));
    }
}

#[test]
fn early_exits_name_the_level_counted_from_the_root() {
    let tree = tree(3);
    // Missing directory at the third repetition: level 1 + 2 (volume, dirs 0..).
    let mut keys = path(2);
    keys.push("nope".into());
    assert_eq!(
        Open.run_keys(&tree.volume, &(), &keys, &"f".to_owned(), |_| ()),
        Err(Exit::Absent {
            level: 4,
            cause: Absence::Missing
        })
    );
    assert!(tree.unlocked());
    // Missing file after two repetitions: the file's level is 1 + 2 + 1.
    assert_eq!(
        Open.run_keys(&tree.volume, &(), path(2), &"g".to_owned(), |_| ()),
        Err(Exit::Absent {
            level: 4,
            cause: Absence::Missing
        })
    );
    // A removed directory behaves as absent at its level.
    tree.dirs[2].write().removed = true;
    take_log();
    assert_eq!(
        Open.run_keys(&tree.volume, &(), path(3), &"f".to_owned(), |_| ()),
        Err(Exit::Absent {
            level: 3,
            cause: Absence::Closed
        })
    );
    assert!(tree.unlocked());
    // A step that hands back the directory it is on ends with a cycle, not a deadlock.
    assert_eq!(
        Open.run(
            &tree.volume,
            |volume| Some(volume.root.clone()),
            |_, _| Step::Descend(tree.dirs[0].clone()),
            |dir| dir.files.get("f").cloned(),
            |_| (),
        ),
        Err(Exit::Cycle { level: 2 })
    );
    assert!(tree.unlocked());
}

#[test]
fn the_repeated_level_may_be_the_root_or_the_leaf() {
    let tree = tree(4);
    let bytes = FromRoot.run_keys(
        &tree.dirs[0],
        ["d", "d"].map(String::from),
        &"f".to_owned(),
        |file| file.bytes,
    );
    assert_eq!(bytes, Ok(2));

    let mut dir = ToDir.descend_keys(&tree.volume, &(), path(3)).unwrap();
    dir.removed = true;
    assert!(tree.dirs[3].is_locked() && !tree.volume.is_locked() && !tree.dirs[2].is_locked());
    drop(dir);
    assert!(tree.dirs[3].read().removed);
    take_log();
    let volume = rw_id_of(&tree.volume);
    let (d0, d1) = (rw_id_of(&tree.dirs[0]), rw_id_of(&tree.dirs[1]));
    assert_eq!(
        ToDir.run_keys(&tree.volume, &(), path(1), |dir| dir.dirs.len()),
        Ok(1)
    );
    assert_eq!(
        take_log(),
        [
            Event::Locked(volume),
            Event::Locked(d0),
            Event::Unlocked(volume),
            Event::Locked(d1),
            Event::Unlocked(d0),
            Event::Unlocked(d1),
        ]
    );
}

chain_locker! {
    /// The leaf after the repeated level held as the upgradable reader.
    struct Inspect(shared Volume, shared Dir*, upgradable Dir);
}

#[test]
fn an_upgradable_leaf_after_the_repeated_level() {
    let tree = tree(3);
    let flagged = Inspect.run_keys(&tree.volume, &(), path(1), &"d".to_owned(), |dir| {
        dir.upgrade().removed = true;
        dir.is_upgraded()
    });
    assert_eq!(flagged, Ok(true));
    assert!(tree.dirs[2].read().removed);
    assert!(tree.unlocked());
}

#[test]
fn deadlines_name_the_level_that_was_not_taken_in_time() {
    use std::time::{Duration, Instant};
    let tree = tree(3);
    let later = Instant::now() + Duration::from_secs(5);
    assert_eq!(
        Open.run_keys_until(&tree.volume, later, &(), path(2), &"f".to_owned(), |file| {
            file.bytes
        }),
        Ok(2)
    );
    let bytes = Open.run_until(
        &tree.volume,
        later,
        |volume| Some(volume.root.clone()),
        |d, depth| match d.dirs.get("d") {
            Some(child) if depth < 1 => Step::Descend(child.clone()),
            _ => Step::Here,
        },
        |d| d.files.get("f").cloned(),
        |file| file.bytes,
    );
    assert_eq!(bytes, Ok(1));

    // A writer holds the second repetition (level 3), then the file under the first.
    let soon = || Instant::now() + Duration::from_millis(5);
    let writer = tree.dirs[2].write();
    assert_eq!(
        Open.run_keys_until(&tree.volume, soon(), &(), path(3), &"f".to_owned(), |_| ()),
        Err(Exit::TimedOut { level: 3 })
    );
    drop(writer);
    let file = tree.files[1].lock();
    assert_eq!(
        Open.run_keys_until(&tree.volume, soon(), &(), path(1), &"f".to_owned(), |_| ()),
        Err(Exit::TimedOut { level: 3 })
    );
    drop(file);
    assert!(tree.unlocked());
}

/// A mixed chain over tokio's locks: the async flavors walk with `Walker::descend_async`.
mod on_tokio {
    use chainlock::{ChainNode, Exit, chain::Absence, chain_locker};
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use tokio::sync::{Mutex, RwLock};

    #[derive(ChainNode)]
    struct Volume {
        #[chain(children)]
        root: Arc<RwLock<Dir>>,
    }

    #[derive(ChainNode, Default)]
    struct Dir {
        #[chain(children)]
        dirs: BTreeMap<String, Arc<RwLock<Dir>>>,
        #[chain(children)]
        files: BTreeMap<String, Arc<Mutex<u64>>>,
    }

    chain_locker! {
        struct Open(shared Volume, shared Dir*, u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_repeated_level_is_walked_asynchronously_in_a_spawned_task() {
        let mut lib = Dir::default();
        lib.files.insert("f".into(), Arc::new(Mutex::new(7)));
        let lib = Arc::new(RwLock::new(lib));
        let mut root = Dir::default();
        root.dirs.insert("lib".into(), lib.clone());
        let volume = Arc::new(RwLock::new(Volume {
            root: Arc::new(RwLock::new(root)),
        }));
        let path = ["lib".to_owned()];
        // The future is `Send`: it runs in a spawned task.
        let spawned = tokio::spawn({
            let volume = volume.clone();
            async move {
                Open.run_keys_async(&volume, &(), path, &"f".to_owned(), |bytes| *bytes)
                    .await
            }
        });
        assert_eq!(spawned.await.unwrap(), Ok(7));
        assert_eq!(
            Open.run_keys_async(&volume, &(), ["nope".to_owned()], &"f".to_owned(), |_| ())
                .await,
            Err(Exit::Absent {
                level: 2,
                cause: Absence::Missing
            })
        );
        // A writer on `lib` (level 2): the timed flavor gives up there.
        let writer = lib.write().await;
        let soon = Instant::now() + Duration::from_millis(5);
        assert_eq!(
            Open.run_keys_until_async(
                &volume,
                soon,
                &(),
                ["lib".to_owned()],
                &"f".to_owned(),
                |_| ()
            )
            .await,
            Err(Exit::TimedOut { level: 2 })
        );
        drop(writer);
        assert!(volume.try_write().is_ok());
    }
}
