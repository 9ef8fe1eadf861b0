//! Who holds and who waits now: the table behind [`live`](super::live), the slow-wait
//! report and the wait-for cycle check.
//!
//! One process-wide table behind a mutex, touched only by sampled holds and by contended
//! waits (the slow paths): an unsampled uncontended acquisition never sees it. A thread is
//! named by a token unique for the life of the process (`crate::loom::unique_token`), not
//! by its `ThreadId`, which costs an `Arc` clone to read.

use std::panic::Location;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use slab::Slab;

use super::class::Class;
use super::{Cycle, Holding, Live, LockName, Waiting};

/// A concrete lock: its class's address and its address within the class.
pub(super) type LockId = (usize, usize);

pub(super) fn lock_id(class: &Arc<Class>, addr: usize) -> LockId {
    (Arc::as_ptr(class) as usize, addr)
}

struct Entry {
    lock: LockId,
    name: LockName,
    site: &'static Location<'static>,
    thread: u64,
    thread_handle: std::thread::Thread,
    since: Instant,
    /// Owned by a task, not by the thread that made it: never an edge of a wait-for cycle.
    task: bool,
}

impl Entry {
    fn thread_name(&self) -> String {
        self.thread_handle
            .name()
            .map_or_else(|| format!("{:?}", self.thread_handle.id()), str::to_owned)
    }

    fn holding(&self, now: Instant) -> Holding {
        Holding {
            lock: self.name.clone(),
            site: self.site,
            thread: if self.task {
                format!("a task (acquired on {})", self.thread_name())
            } else {
                self.thread_name()
            },
            held_for: now.saturating_duration_since(self.since),
        }
    }
}

/// By id, a slab's index: a sampled acquisition's insert and remove index a vector (a hash
/// map cost a hash and a probe each, a fifth of the sampled acquisition).
#[derive(Default)]
struct Table {
    holders: Slab<Entry>,
    waiters: Slab<Entry>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);
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

/// The slab index of an id ([`held`] and [`waiting`] return indices).
fn slot(id: u64) -> usize {
    usize::try_from(id).expect("an id is a slab index")
}

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    f(TABLE.lock().get_or_insert_with(Table::default))
}

fn entry(
    class: &Arc<Class>,
    lock: LockId,
    site: &'static Location<'static>,
    since: Instant,
) -> Entry {
    Entry {
        lock,
        name: class.name.clone(),
        site,
        thread: thread_token(),
        thread_handle: std::thread::current(),
        since,
        task: false,
    }
}

/// Records a hold; its id for [`released`].
pub(super) fn held(
    class: &Arc<Class>,
    lock: LockId,
    site: &'static Location<'static>,
    since: Instant,
    task: bool,
) -> u64 {
    let mut entry = entry(class, lock, site, since);
    entry.task = task;
    with_table(|table| table.holders.insert(entry) as u64)
}

/// Marks the hold `id` as a task's.
pub(super) fn held_by_task(id: u64) {
    with_table(|table| {
        if let Some(entry) = table.holders.get_mut(slot(id)) {
            entry.task = true;
        }
    });
}

/// Forgets the hold `id`; the waiters left on its lock and the start of the longest wait.
pub(super) fn released(id: u64, lock: LockId) -> (u64, Option<Instant>) {
    with_table(|table| {
        table.holders.try_remove(slot(id));
        let mut waiters = 0;
        let mut oldest: Option<Instant> = None;
        for (_, waiter) in table.waiters.iter().filter(|(_, w)| w.lock == lock) {
            waiters += 1;
            oldest = Some(oldest.map_or(waiter.since, |o| o.min(waiter.since)));
        }
        (waiters, oldest)
    })
}

/// Whether a waiter of `lock` has waited at least `threshold` nanoseconds at `now`.
pub(super) fn waited_past(lock: LockId, now: Instant, threshold: u64) -> bool {
    with_table(|table| {
        table.waiters.iter().any(|(_, w)| {
            w.lock == lock
                && u64::try_from(now.saturating_duration_since(w.since).as_nanos())
                    .unwrap_or(u64::MAX)
                    >= threshold
        })
    })
}

/// Records a wait; its id for [`wait_ended`]. In debug builds, when `check_cycles` (a
/// thread's wait), follows the wait-for graph from it and returns the cycle it closes.
pub(super) fn waiting(
    class: &Arc<Class>,
    lock: LockId,
    site: &'static Location<'static>,
    since: Instant,
    task: bool,
) -> (u64, Option<Cycle>) {
    let mut entry = entry(class, lock, site, since);
    entry.task = task;
    let me = entry.thread;
    with_table(|table| {
        let id = table.waiters.insert(entry) as u64;
        let cycle = if cfg!(debug_assertions) && !task {
            find_cycle(table, id, me)
        } else {
            None
        };
        (id, cycle)
    })
}

/// Forgets the wait `id`.
pub(super) fn wait_ended(id: u64) {
    with_table(|table| {
        table.waiters.try_remove(slot(id));
    });
}

/// From the wait `start` of thread `me`: the lock's holders' threads, the lock each of them
/// waits on, and so on; a path back to `me` is a cycle. Tasks are not followed (a task's
/// hold does not block its thread).
fn find_cycle(table: &Table, start: u64, me: u64) -> Option<Cycle> {
    // Depth-first over threads; `path` holds the wait ids from `start`.
    fn visit(table: &Table, wait: u64, me: u64, path: &mut Vec<u64>, seen: &mut Vec<u64>) -> bool {
        if path.len() > 64 {
            return false;
        }
        path.push(wait);
        let lock = table.waiters[slot(wait)].lock;
        for (_, holder) in table
            .holders
            .iter()
            .filter(|(_, h)| h.lock == lock && !h.task)
        {
            if holder.thread == me {
                return true;
            }
            if seen.contains(&holder.thread) {
                continue;
            }
            seen.push(holder.thread);
            let next = table
                .waiters
                .iter()
                .find(|(_, w)| w.thread == holder.thread && !w.task)
                .map(|(id, _)| id as u64);
            if let Some(next) = next
                && visit(table, next, me, path, seen)
            {
                return true;
            }
        }
        path.pop();
        false
    }
    let mut path = Vec::new();
    let mut seen = vec![me];
    if !visit(table, start, me, &mut path, &mut seen) {
        return None;
    }
    let now = Instant::now();
    Some(Cycle {
        edges: path
            .iter()
            .map(|&id| waiting_of(table, &table.waiters[slot(id)], now))
            .collect(),
    })
}

fn waiting_of(table: &Table, waiter: &Entry, now: Instant) -> Waiting {
    let mut holders: Vec<Holding> = table
        .holders
        .iter()
        .map(|(_, h)| h)
        .filter(|h| h.lock == waiter.lock)
        .map(|h| h.holding(now))
        .collect();
    holders.sort_by_key(|h| std::cmp::Reverse(h.held_for));
    Waiting {
        lock: waiter.name.clone(),
        site: waiter.site,
        thread: waiter.thread_name(),
        waited_for: now.saturating_duration_since(waiter.since),
        holders,
    }
}

/// Everything held and waited for now, longest first.
pub(super) fn snapshot() -> Live {
    let now = Instant::now();
    with_table(|table| {
        let mut holders: Vec<Holding> = table.holders.iter().map(|(_, h)| h.holding(now)).collect();
        holders.sort_by_key(|h| std::cmp::Reverse(h.held_for));
        let mut waiters: Vec<Waiting> = table
            .waiters
            .iter()
            .map(|(_, w)| w)
            .map(|w| waiting_of(table, w, now))
            .collect();
        waiters.sort_by_key(|w| std::cmp::Reverse(w.waited_for));
        Live { holders, waiters }
    })
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
