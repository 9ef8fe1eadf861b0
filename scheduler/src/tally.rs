//! The counters behind `Scheduler::statistics` in the tree strategies (`chain`, `crab`,
//! `optimistic`), sharded by thread.
//!
//! Every join and every leave changes the student count, whatever a descent locked on the
//! way to the class: one global counter is a cache line that every operation writes, which
//! bounces between the cores as the root's lock word did. So the counts are kept in
//! cache-padded shards, one per client thread (threads share a shard only past
//! [`SHARDS`]): a join adds one to the joining thread's shard, the leave that follows may
//! subtract it on another thread's. A shard alone may be negative; the sum of the shards is
//! the count.
//!
//! # What `statistics` promises
//!
//! [`Tally::statistics`] reads the shards one after another. Each figure is exact when no
//! operation runs meanwhile, and in a snapshot (every node locked: no counter moves). Under
//! concurrent joins and leaves the sum is not necessarily a value the count had at any one
//! instant: each figure differs from the count at the start of the call by at most the
//! number of changes to that figure (students joining or leaving, classes added or
//! cancelled) made during the call, and it is never below zero. (One global counter promised
//! a value the count had at some instant of the call; nothing in the service depends on
//! more than the bound above.)

use crate::Statistics;
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// How many shards a tally has: threads beyond this share them, round-robin.
pub(crate) const SHARDS: usize = 16;

/// One thread's share of the counts.
#[derive(Default)]
struct Shard {
    classes: AtomicIsize,
    students: AtomicIsize,
}

/// Classes running and students attending, sharded by thread. Each count is changed while
/// the node it counts is locked (a class's students under the class lock, a new class under
/// its lecture's lock, a cancelled class under its own lock).
pub(crate) struct Tally {
    shards: Box<[CachePadded<Shard>]>,
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| CachePadded::default()).collect(),
        }
    }
}

/// The shard of the current thread: threads are numbered as they first count something.
fn shard_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
    }
    INDEX.with(|index| {
        index.get().unwrap_or_else(|| {
            let next = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            index.set(Some(next));
            next
        })
    })
}

impl Tally {
    fn shard(&self) -> &Shard {
        &self.shards[shard_index()]
    }

    /// `students` students joined (negative: left).
    pub(crate) fn students(&self, students: isize) {
        self.shard().students.fetch_add(students, Ordering::Relaxed);
    }

    /// `classes` classes were added (negative: cancelled).
    pub(crate) fn classes(&self, classes: isize) {
        self.shard().classes.fetch_add(classes, Ordering::Relaxed);
    }

    /// The sums of the shards, read one after another (see the module docs).
    pub(crate) fn statistics(&self) -> Statistics {
        let (mut classes, mut students) = (0_isize, 0_isize);
        for shard in &*self.shards {
            classes += shard.classes.load(Ordering::Relaxed);
            students += shard.students.load(Ordering::Relaxed);
        }
        Statistics {
            classes: usize::try_from(classes).unwrap_or(0),
            students: usize::try_from(students).unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_sum_to_the_counts_whichever_threads_counted() {
        let tally = Tally::default();
        // More threads than shards, each joining on itself and leaving for another.
        std::thread::scope(|scope| {
            for _ in 0..SHARDS + 3 {
                scope.spawn(|| {
                    tally.classes(1);
                    tally.students(5);
                });
            }
        });
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| tally.students(-2));
            }
        });
        let expected = Statistics {
            classes: SHARDS + 3,
            students: 5 * (SHARDS + 3) - 8,
        };
        assert_eq!(tally.statistics(), expected);
        // A negative shard alone is fine; a negative sum reads as zero.
        let alone = Tally::default();
        alone.students(-1);
        assert_eq!(alone.statistics().students, 0);
    }
}
