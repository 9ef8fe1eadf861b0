//! Async walks of run-time depth over tokio's owned guards: every depth from 1 to 64,
//! cancellation while waiting at every depth releases everything, deadlines, crabbing.

use chainlock::chain::Absence;
use chainlock::walk::{Crab, Exclusive, Step, Walker};
use chainlock::{ChainNode, Exit};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, RwLock, watch};

const MAX_DEPTH: usize = 64;
/// How long a test waits for something that must happen before it calls it a failure.
const PATIENCE: Duration = Duration::from_secs(30);

struct Node {
    depth: usize,
    next: Option<Arc<Mutex<Node>>>,
}

impl ChainNode for Node {}

fn list(len: usize) -> Vec<Arc<Mutex<Node>>> {
    let mut nodes: Vec<Arc<Mutex<Node>>> = Vec::new();
    for depth in (0..len).rev() {
        let next = nodes.last().cloned();
        nodes.push(Arc::new(Mutex::new(Node { depth, next })));
    }
    nodes.reverse();
    nodes
}

/// Waits until a spawned walk's step has run at `depth` (it then waits for the node below,
/// which `blocker` holds), checks that the nodes in `held` are locked meanwhile, cancels the
/// walk, and checks that nothing stays locked once `blocker` is released.
async fn cancel_at<T: std::fmt::Debug>(
    nodes: &[Arc<Mutex<Node>>],
    depth: usize,
    mut reached: watch::Receiver<Option<usize>>,
    walk: tokio::task::JoinHandle<T>,
    blocker: tokio::sync::OwnedMutexGuard<Node>,
    held: std::ops::Range<usize>,
) {
    tokio::time::timeout(PATIENCE, reached.wait_for(|&step| step == Some(depth)))
        .await
        .expect("the walk reaches the blocked node")
        .unwrap();
    for held in held {
        assert!(
            nodes[held].try_lock().is_err(),
            "depth {held} is held while the walk waits"
        );
    }
    walk.abort();
    assert!(walk.await.unwrap_err().is_cancelled());
    drop(blocker);
    assert_all_unlocked(nodes);
}

fn assert_all_unlocked(nodes: &[Arc<Mutex<Node>>]) {
    for (depth, node) in nodes.iter().enumerate() {
        assert!(node.try_lock().is_ok(), "depth {depth} is still locked");
    }
}

#[tokio::test]
async fn every_depth_is_walked_to_its_end() {
    for len in 1..=MAX_DEPTH {
        let nodes = list(len);
        let mut seen = vec![];
        let last = Walker::new()
            .descend_async(&nodes[0], Exclusive, |node, depth| {
                seen.push(depth);
                node.next.clone().map_or(Step::Here, Step::Descend)
            })
            .await
            .unwrap();
        assert_eq!(last.depth, len - 1);
        assert_eq!(seen, (0..len).collect::<Vec<_>>());
        // Only the target is held; everything above it was released on the way.
        for node in &nodes[..len - 1] {
            assert!(node.try_lock().is_ok());
        }
        drop(last);
        assert_all_unlocked(&nodes);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_walk_waiting_at_every_depth_releases_everything() {
    let nodes = list(MAX_DEPTH);
    for at in 1..MAX_DEPTH {
        let blocker = nodes[at].clone().lock_owned().await;
        let (reached, watch_reached) = watch::channel(None);
        let root = nodes[0].clone();
        let walk = tokio::spawn(async move {
            Walker::new()
                .descend_async(&root, Exclusive, |node, depth| {
                    reached.send_replace(Some(depth));
                    node.next.clone().map_or(Step::Here, Step::Descend)
                })
                .await
                .map(|guard| guard.depth)
        });
        // The step ran at `at - 1`: the walk holds that node and waits for `at`.
        cancel_at(&nodes, at - 1, watch_reached, walk, blocker, at - 1..at).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_waiting_for_its_target_holds_the_parent_until_cancelled() {
    let nodes = list(16);
    for at in 1..16 {
        let blocker = nodes[at].clone().lock_owned().await;
        let (reached, watch_reached) = watch::channel(None);
        let root = nodes[0].clone();
        let walk = tokio::spawn(async move {
            Walker::new()
                .descend_async(&root, Exclusive, |node, depth| {
                    reached.send_replace(Some(depth));
                    let next = node.next.clone().expect("the list is long enough");
                    if depth + 1 == at {
                        Step::Target(next)
                    } else {
                        Step::Descend(next)
                    }
                })
                .await
                .map(|guard| guard.depth)
        });
        // The parent stays locked while the walk waits for the target below it.
        cancel_at(&nodes, at - 1, watch_reached, walk, blocker, at - 1..at).await;
    }
}

#[tokio::test]
async fn a_deadline_at_every_depth_names_the_depth() {
    let nodes = list(16);
    for at in 0..16 {
        let blocker = nodes[at].clone().lock_owned().await;
        let deadline = Instant::now() + Duration::from_millis(2);
        let outcome = Walker::new()
            .descend_until_async(&nodes[0], Exclusive, deadline, |node, _| {
                node.next.clone().map_or(Step::Here, Step::Descend)
            })
            .await;
        assert_eq!(outcome.err(), Some(Exit::TimedOut { level: at }));
        drop(blocker);
        assert_all_unlocked(&nodes);
    }
}

#[derive(ChainNode)]
struct Dir {
    #[chain(children)]
    entries: Vec<Arc<RwLock<Dir>>>,
    writes: u32,
}

/// `len` keys whose iterator claims there are at most `claimed` (which the standard library
/// allows an iterator to get wrong).
struct LyingKeys {
    left: usize,
    claimed: usize,
}

impl Iterator for LyingKeys {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        (self.left > 0).then(|| {
            self.left -= 1;
            0
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.claimed))
    }
}

#[tokio::test]
async fn an_async_key_path_whose_iterator_understates_its_length_stops_at_the_depth_limit() {
    // A chain of 60 directories, each the first entry of the one above.
    let mut dirs = vec![Arc::new(RwLock::new(Dir {
        entries: vec![],
        writes: 0,
    }))];
    for _ in 1..60 {
        let below = dirs.last().unwrap().clone();
        dirs.push(Arc::new(RwLock::new(Dir {
            entries: vec![below],
            writes: 0,
        })));
    }
    let root = dirs.last().unwrap().clone();
    let walker = Walker::new().max_depth(10);
    let lying = || LyingKeys {
        left: 50,
        claimed: 2,
    };
    let too_deep = Some(Exit::TooDeep {
        level: 11,
        max_depth: 10,
    });
    // `Crab` (look-ahead key step) and `Exclusive` (its path is its target), without and
    // with a deadline.
    let deadline = Instant::now() + PATIENCE;
    let crab = walker.descend_keys_async(&root, Crab, lying()).await;
    assert_eq!(crab.err(), too_deep);
    let exclusive = walker.descend_keys_async(&root, Exclusive, lying()).await;
    assert_eq!(exclusive.err(), too_deep);
    let timed = walker
        .descend_keys_until_async(&root, Crab, deadline, lying())
        .await;
    assert_eq!(timed.err(), too_deep);
    for dir in &dirs {
        assert!(dir.try_write().is_ok(), "nothing stays locked");
    }
    // Within the limit, the lie does not matter.
    let short = LyingKeys {
        left: 10,
        claimed: 2,
    };
    let target = walker.descend_keys_async(&root, Crab, short).await.unwrap();
    // The root is `dirs[59]`: level 10 is `dirs[49]`, write-locked, and nothing else.
    assert!(dirs[49].try_read().is_err() && dirs[50].try_write().is_ok());
    drop(target);
    assert!(dirs[49].try_write().is_ok());
}

#[tokio::test]
async fn async_crabbing_shares_the_path_and_locks_the_target_exclusively() {
    let leaf = Arc::new(RwLock::new(Dir {
        entries: vec![],
        writes: 0,
    }));
    let middle = Arc::new(RwLock::new(Dir {
        entries: vec![leaf.clone()],
        writes: 0,
    }));
    let root = Arc::new(RwLock::new(Dir {
        entries: vec![middle.clone()],
        writes: 0,
    }));
    let reader = root.clone().read_owned().await; // another reader does not stop the walk
    let mut target = Walker::new()
        .descend_keys_async(&root, Crab, [0, 0])
        .await
        .unwrap();
    target.writes += 1;
    assert!(leaf.try_read().is_err(), "the target is write-locked");
    assert!(middle.try_write().is_ok(), "the path was released");
    drop(target);
    drop(reader);
    let outcome = Walker::new().descend_keys_async(&root, Crab, [0, 1]).await;
    assert_eq!(
        outcome.err(),
        Some(Exit::Absent {
            level: 2,
            cause: Absence::Missing
        })
    );
    assert!(root.try_write().is_ok() && middle.try_write().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_retaining_walk_releases_every_retained_ancestor() {
    let nodes = list(12);
    for at in 1..12 {
        let blocker = nodes[at].clone().lock_owned().await;
        let (reached, watch_reached) = watch::channel(None);
        let root = nodes[0].clone();
        let walk = tokio::spawn(async move {
            Walker::new()
                .descend_retaining_async(
                    &root,
                    |node, depth| {
                        reached.send_replace(Some(depth));
                        node.next.clone().map_or(Step::Here, Step::Descend)
                    },
                    |_, _| false, // nothing is safe: every ancestor stays locked
                )
                .await
                .map(|path| path.len())
        });
        // Nothing is safe: every node above the blocked one is retained while it waits.
        cancel_at(&nodes, at - 1, watch_reached, walk, blocker, 0..at).await;
    }
}

#[tokio::test]
async fn async_retaining_and_speculative_descents_keep_exactly_the_unsafe_path() {
    let nodes = list(6);
    // Safe: even depths only. The lowest safe node above the target (depth 5) is depth 4.
    let path = Walker::new()
        .descend_retaining_async(
            &nodes[0],
            |node, _| node.next.clone().map_or(Step::Here, Step::Descend),
            |node, _| node.depth % 2 == 0,
        )
        .await
        .unwrap();
    assert_eq!((path.top_depth(), path.target_depth()), (4, 5));
    for node in &nodes[..4] {
        assert!(node.try_lock().is_ok());
    }
    drop(path);
    assert_all_unlocked(&nodes);

    let deadline = Instant::now() + Duration::from_millis(2);
    let blocker = nodes[3].clone().lock_owned().await;
    let outcome = Walker::new()
        .descend_retaining_until_async(
            &nodes[0],
            deadline,
            |node, _| node.next.clone().map_or(Step::Here, Step::Descend),
            |_, _| false,
        )
        .await;
    assert_eq!(outcome.err(), Some(Exit::TimedOut { level: 3 }));
    drop(blocker);
    assert_all_unlocked(&nodes);

    let leaf = Arc::new(RwLock::new(Dir {
        entries: vec![],
        writes: 9,
    }));
    let root = Arc::new(RwLock::new(Dir {
        entries: vec![leaf.clone()],
        writes: 0,
    }));
    let step = |dir: &Dir, _| {
        dir.entries
            .first()
            .cloned()
            .map_or(Step::Here, Step::Target)
    };
    let found = Walker::new()
        .descend_speculative_async(&root, step, |dir: &Dir, _| dir.writes < 9)
        .await
        .unwrap();
    assert_eq!(
        (found.restarts, found.path.len()),
        (1, 2),
        "an unsafe leaf restarts"
    );
    drop(found);
    leaf.write().await.writes = 0;
    let found = Walker::new()
        .descend_speculative_async(&root, step, |dir: &Dir, _| dir.writes < 9)
        .await
        .unwrap();
    assert_eq!((found.restarts, found.path.len()), (0, 1));
}
