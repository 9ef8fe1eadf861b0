//! Who holds and who waits now: the table behind [`live`](super::live), the slow-wait
//! report and the wait-for cycle check.
//!
//! Holds are kept per thread: each thread records its sampled holds in a shard of its own
//! (its own mutex, which only a snapshot or a release on another thread also takes), so
//! that recording a hold never makes threads on different locks share a cache line or a
//! mutex (with `sample_every(1)` a process-wide table would have serialized every
//! acquisition of every lock). Waits, already the slow path, are in one process-wide table;
//! a release looks at it only while some wait is recorded. A thread is named by a token
//! unique for the life of the process (`crate::loom::unique_token`), not by its
//! `ThreadId`, which costs an `Arc` clone to read.
//!
//! Lock order: the waits' table, then a shard. A release takes its shard, lets it go, and
//! only then looks at the waits.

use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Weak};
use std::time::Instant;

use parking_lot::Mutex;
use slab::Slab;

use super::class::Class;
use super::snapshot::{Cycle, Holding, Live, Waiting};

/// A concrete lock: the space its address is in (0: memory, else its class's address) and
/// its address in that space.
pub(super) type LockId = (usize, usize);

/// The identity of the lock at `addr` of `class`. A chain level's, a walk depth's and a
/// hybrid lock's `addr` is the lock's own address in memory, whichever locker, walk or class
/// takes it: one lock has one identity across classes, so that a waiter sees its holder and
/// a wait-for cycle is found when two lockers (or a locker and the lock taken by itself)
/// share the lock. The other classes' addresses (an entry id, a stripe or room index, a
/// name's hash) mean something only within their class.
pub(super) fn lock_id(class: &Arc<Class>, addr: usize) -> LockId {
    if class.name.is_in_memory() {
        (0, addr)
    } else {
        (Arc::as_ptr(class) as usize, addr)
    }
}

/// A recorded hold or wait.
struct Entry {
    lock: LockId,
    class: Arc<Class>,
    site: &'static Location<'static>,
    since: Instant,
    /// Owned by a task, not by the thread that made it: never an edge of a wait-for cycle.
    task: bool,
}

/// A thread, as the live table names it.
struct Owner {
    token: u64,
    handle: std::thread::Thread,
}

impl Owner {
    fn current() -> Self {
        Self {
            token: thread_token(),
            handle: std::thread::current(),
        }
    }

    fn name(&self) -> String {
        self.handle
            .name()
            .map_or_else(|| format!("{:?}", self.handle.id()), str::to_owned)
    }
}

/// One thread's holds.
struct Shard {
    owner: Owner,
    holds: Mutex<Slab<Entry>>,
}

impl Shard {
    fn holding(&self, entry: &Entry, now: Instant) -> Holding {
        Holding {
            lock: entry.class.name.clone(),
            site: entry.site,
            thread: if entry.task {
                format!("a task (acquired on {})", self.owner.name())
            } else {
                self.owner.name()
            },
            held_for: now.saturating_duration_since(entry.since),
        }
    }
}

/// Every shard, weakly (a shard lives while its thread or one of its holds does); pruned of
/// the dead ones whenever it grows past twice its live size.
static SHARDS: Mutex<Vec<Weak<Shard>>> = Mutex::new(Vec::new());
static SHARDS_LIVE: AtomicUsize = AtomicUsize::new(0);

std::thread_local!(static SHARD: Arc<Shard> = new_shard());

/// For a thread whose thread-locals are being destroyed.
static HOMELESS: LazyLock<Arc<Shard>> = LazyLock::new(new_shard);

fn new_shard() -> Arc<Shard> {
    let shard = Arc::new(Shard {
        owner: Owner::current(),
        holds: Mutex::new(Slab::new()),
    });
    let mut shards = SHARDS.lock();
    if shards.len() >= 2 * SHARDS_LIVE.load(Ordering::Relaxed).max(64) {
        shards.retain(|weak| weak.strong_count() > 0);
        SHARDS_LIVE.store(shards.len(), Ordering::Relaxed);
    }
    shards.push(Arc::downgrade(&shard));
    shard
}

fn shards() -> Vec<Arc<Shard>> {
    SHARDS.lock().iter().filter_map(Weak::upgrade).collect()
}

/// A recorded hold: released with [`released`].
pub(super) struct HoldId {
    shard: Arc<Shard>,
    index: usize,
}

/// A recorded wait, with its thread.
struct Wait {
    entry: Entry,
    owner: Owner,
    /// How many waits this sampled one stands for (its acquisition's weight).
    weight: u64,
    /// Until when its wait was charged to a releaser (its start, at first).
    charged: Instant,
}

/// What a release found waiting on its lock.
pub(super) struct Ended {
    /// The class the waiters waited in (a lock in memory may be waited for through several:
    /// two lockers' levels, a level and the lock taken by itself); each is charged its own.
    pub(super) class: Arc<Class>,
    /// The waiters left, each counted for its weight.
    pub(super) waiters: u64,
    /// The waiting since the last recorded release of the lock (or since each wait began),
    /// summed over the waiters, each for its weight, in nanoseconds: Go's mutex-profile
    /// delay, charged to the releaser.
    pub(super) delay: u64,
}

/// The waits now; `WAITS_NOW` counts them, so that a release need not take this table
/// while nobody waits.
static WAITS: Mutex<Slab<Wait>> = Mutex::new(Slab::new());
static WAITS_NOW: AtomicUsize = AtomicUsize::new(0);
static CYCLES: Mutex<Vec<Cycle>> = Mutex::new(Vec::new());
/// Cycles kept for [`cycles`](super::cycles); later ones are only reported by `tracing`.
const CYCLES_KEPT: usize = 64;

std::thread_local!(static THREAD: u64 = crate::loom::unique_token());

/// The calling thread's token.
pub(super) fn thread_token() -> u64 {
    THREAD
        .try_with(|token| *token)
        .unwrap_or_else(|_| crate::loom::unique_token())
}

/// Records a hold of `lock` by this thread (or, `task`, by a task running on it).
pub(super) fn held(
    class: &Arc<Class>,
    lock: LockId,
    site: &'static Location<'static>,
    since: Instant,
    task: bool,
) -> HoldId {
    let shard = SHARD
        .try_with(Arc::clone)
        .unwrap_or_else(|_| Arc::clone(&HOMELESS));
    let index = shard.holds.lock().insert(Entry {
        lock,
        class: Arc::clone(class),
        site,
        since,
        task,
    });
    HoldId { shard, index }
}

/// Marks the hold `id` as a task's.
pub(super) fn held_by_task(id: &HoldId) {
    if let Some(entry) = id.shard.holds.lock().get_mut(id.index) {
        entry.task = true;
    }
}

/// Forgets the hold `id` of `lock`, released at `now`; what it leaves waiting and the delay
/// it is charged, per class waited in (each wait charged once: a later release is charged
/// from here on). Empty when nobody waits.
pub(super) fn released(id: HoldId, lock: LockId, now: Instant) -> Vec<Ended> {
    let HoldId { shard, index } = id;
    shard.holds.lock().try_remove(index);
    drop(shard);
    let mut ended: Vec<Ended> = Vec::new();
    if WAITS_NOW.load(Ordering::Relaxed) == 0 {
        return ended;
    }
    let mut waits = WAITS.lock();
    for (_, wait) in waits.iter_mut().filter(|(_, w)| w.entry.lock == lock) {
        let delay = now.saturating_duration_since(wait.charged);
        wait.charged = wait.charged.max(now);
        let delay = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        let class = &wait.entry.class;
        let index = if let Some(index) = ended.iter().position(|e| Arc::ptr_eq(&e.class, class)) {
            index
        } else {
            ended.push(Ended {
                class: Arc::clone(class),
                waiters: 0,
                delay: 0,
            });
            ended.len() - 1
        };
        let ended = &mut ended[index];
        ended.waiters = ended.waiters.saturating_add(wait.weight);
        ended.delay = ended
            .delay
            .saturating_add(delay.saturating_mul(wait.weight));
    }
    ended
}

/// Whether a waiter of `lock` has waited at least `threshold` nanoseconds at `now`.
pub(super) fn waited_past(lock: LockId, now: Instant, threshold: u64) -> bool {
    if WAITS_NOW.load(Ordering::Relaxed) == 0 {
        return false;
    }
    WAITS.lock().iter().any(|(_, w)| {
        w.entry.lock == lock
            && u64::try_from(now.saturating_duration_since(w.entry.since).as_nanos())
                .unwrap_or(u64::MAX)
                >= threshold
    })
}

/// A hold as the cycle check follows it.
struct Holder {
    lock: LockId,
    thread: u64,
}

/// Every thread's holds (not the tasks'), for the cycle check: each shard locked in turn.
fn thread_holders() -> Vec<Holder> {
    let mut holders = Vec::new();
    for shard in shards() {
        let holds = shard.holds.lock();
        holders.extend(holds.iter().filter(|(_, h)| !h.task).map(|(_, h)| Holder {
            lock: h.lock,
            thread: shard.owner.token,
        }));
    }
    holders
}

/// The holders of `lock` now, longest first.
fn holders_of(shards: &[Arc<Shard>], lock: Option<LockId>, now: Instant) -> Vec<Holding> {
    let mut holders = Vec::new();
    for shard in shards {
        let holds = shard.holds.lock();
        holders.extend(
            holds
                .iter()
                .filter(|(_, h)| lock.is_none_or(|lock| h.lock == lock))
                .map(|(_, h)| shard.holding(h, now)),
        );
    }
    holders.sort_by_key(|h| std::cmp::Reverse(h.held_for));
    holders
}

/// Records a wait; its id for [`wait_ended`]. In debug builds, for a thread's wait (not a
/// task's), follows the wait-for graph from it and returns the cycle it closes.
pub(super) fn waiting(
    class: &Arc<Class>,
    lock: LockId,
    site: &'static Location<'static>,
    since: Instant,
    task: bool,
    weight: u64,
) -> (u64, Option<Cycle>) {
    let wait = Wait {
        weight,
        charged: since,
        entry: Entry {
            lock,
            class: Arc::clone(class),
            site,
            since,
            task,
        },
        owner: Owner::current(),
    };
    let me = wait.owner.token;
    let mut waits = WAITS.lock();
    let id = waits.insert(wait);
    WAITS_NOW.fetch_add(1, Ordering::Relaxed);
    let cycle = if cfg!(debug_assertions) && !task {
        find_cycle(&waits, id, me)
    } else {
        None
    };
    (id as u64, cycle)
}

/// Forgets the wait `id`.
pub(super) fn wait_ended(id: u64) {
    let index = usize::try_from(id).expect("a wait id is a slab index");
    if WAITS.lock().try_remove(index).is_some() {
        WAITS_NOW.fetch_sub(1, Ordering::Relaxed);
    }
}

/// From the wait `start` of thread `me`: the lock's holders' threads, the lock each of them
/// waits on, and so on; a path back to `me` is a cycle. Tasks are not followed (a task's
/// hold does not block its thread).
fn find_cycle(waits: &Slab<Wait>, start: usize, me: u64) -> Option<Cycle> {
    // Depth-first over threads; `path` holds the waits from `start`.
    fn visit(
        waits: &Slab<Wait>,
        holders: &[Holder],
        wait: usize,
        me: u64,
        path: &mut Vec<usize>,
        seen: &mut Vec<u64>,
    ) -> bool {
        if path.len() > 64 {
            return false;
        }
        path.push(wait);
        let lock = waits[wait].entry.lock;
        for holder in holders.iter().filter(|h| h.lock == lock) {
            if holder.thread == me {
                return true;
            }
            if seen.contains(&holder.thread) {
                continue;
            }
            seen.push(holder.thread);
            let next = waits
                .iter()
                .find(|(_, w)| w.owner.token == holder.thread && !w.entry.task)
                .map(|(id, _)| id);
            if let Some(next) = next
                && visit(waits, holders, next, me, path, seen)
            {
                return true;
            }
        }
        path.pop();
        false
    }
    let holders = thread_holders();
    let mut path = Vec::new();
    let mut seen = vec![me];
    if !visit(waits, &holders, start, me, &mut path, &mut seen) {
        return None;
    }
    let now = Instant::now();
    let shards = shards();
    Some(Cycle {
        edges: path
            .iter()
            .map(|&id| waiting_of(&shards, &waits[id], now))
            .collect(),
    })
}

fn waiting_of(shards: &[Arc<Shard>], wait: &Wait, now: Instant) -> Waiting {
    Waiting {
        lock: wait.entry.class.name.clone(),
        site: wait.entry.site,
        thread: wait.owner.name(),
        waited_for: now.saturating_duration_since(wait.entry.since),
        holders: holders_of(shards, Some(wait.entry.lock), now),
    }
}

/// Everything held and waited for now, longest first (each shard read in turn: a hold
/// taken or released meanwhile may or may not be in it).
pub(super) fn snapshot() -> Live {
    let now = Instant::now();
    let waits = WAITS.lock();
    let shards = shards();
    let holders = holders_of(&shards, None, now);
    let mut waiters: Vec<Waiting> = waits
        .iter()
        .map(|(_, w)| waiting_of(&shards, w, now))
        .collect();
    waiters.sort_by_key(|w| std::cmp::Reverse(w.waited_for));
    drop(waits);
    Live {
        holders,
        waiters,
        endpoints: super::endpoints::snapshot(),
    }
}

/// Keeps `cycle` for [`cycles`] (the first [`CYCLES_KEPT`]).
pub(super) fn record_cycle(cycle: &Cycle) {
    let mut cycles = CYCLES.lock();
    if cycles.len() < CYCLES_KEPT {
        cycles.push(cycle.clone());
    }
}

pub(super) fn cycles() -> Vec<Cycle> {
    CYCLES.lock().clone()
}

pub(super) fn forget_cycles() {
    CYCLES.lock().clear();
}
