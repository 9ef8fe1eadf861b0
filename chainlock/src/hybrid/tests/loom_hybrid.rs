//! loom models of the hybrid lock's version protocol: every interleaving of a writer with a
//! reader's steps (begin, load, load, validate), of upgrades racing each other and a writer,
//! and of lock coupling over two locks (a parent whose field names the child to read).

use crate::hybrid::{HybridLock, Restart};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicU64, Ordering::Relaxed};
use crate::loom::thread;

/// Two words a writer always sets equal.
struct Pair {
    a: AtomicU64,
    b: AtomicU64,
}

fn pair() -> Arc<HybridLock<Pair>> {
    Arc::new(HybridLock::new(Pair {
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    }))
}

fn write_pair(pair: &HybridLock<Pair>, value: u64) {
    let pair = pair.write();
    pair.a.store(value, Relaxed);
    pair.b.store(value, Relaxed);
}

/// validate: a writer racing a reader at each of its steps; a validated read saw one write.
#[test]
fn loom_validated_read_sees_one_state() {
    loom::model(|| {
        let lock = pair();
        let writer = {
            let lock = lock.clone();
            thread::spawn(move || write_pair(&lock, 1))
        };
        // Step by step, so that loom places the writer between any two of them.
        if let Ok(read) = lock.optimistic() {
            let a = read.a.load(Relaxed);
            let b = read.b.load(Relaxed);
            if read.validate().is_ok() {
                assert_eq!(a, b, "a validated read mixed two states");
            }
        }
        writer.join().unwrap();
        assert_eq!(lock.read_optimistic(|p| p.a.load(Relaxed)), Ok(1));
    });
}

/// restart: two writes racing a closure reader; whatever it returns is one state, and a
/// reader that began before a write and validates after it restarts.
#[test]
fn loom_restart_after_a_write_and_never_torn() {
    loom::model(|| {
        let lock = pair();
        let writer = {
            let lock = lock.clone();
            thread::spawn(move || {
                write_pair(&lock, 1);
                write_pair(&lock, 2);
            })
        };
        match lock.read_optimistic(|p| (p.a.load(Relaxed), p.b.load(Relaxed))) {
            Ok((a, b)) => assert_eq!(a, b),
            Err(Restart) => {}
        }
        let before = lock.optimistic();
        writer.join().unwrap();
        if let Ok(before) = before {
            let a = before.a.load(Relaxed);
            if before.version().get() < 4 {
                assert_eq!(
                    before.validate(),
                    Err(Restart),
                    "a write came after it began"
                );
            } else {
                assert_eq!(a, 2);
            }
        }
    });
}

/// upgrade: two read-then-upgrade increments and a plain writer; no update is lost and an
/// upgrade acts only on the current value.
#[test]
fn loom_upgrades_race_each_other_and_a_writer() {
    loom::model(|| {
        let counter = Arc::new(HybridLock::new(AtomicU64::new(0)));
        let increment = |counter: Arc<HybridLock<AtomicU64>>| {
            thread::spawn(move || {
                let Ok(read) = counter.optimistic() else {
                    return 0;
                };
                let seen = read.load(Relaxed);
                match read.upgrade() {
                    Ok(write) => {
                        assert_eq!(write.load(Relaxed), seen, "upgraded on a stale read");
                        write.store(seen + 1, Relaxed);
                        1
                    }
                    Err(Restart) => 0,
                }
            })
        };
        let first = increment(counter.clone());
        let second = increment(counter.clone());
        {
            let write = counter.write();
            let value = write.load(Relaxed);
            write.store(value + 10, Relaxed);
        }
        let upgraded = first.join().unwrap() + second.join().unwrap();
        assert_eq!(counter.read().load(Relaxed), 10 + upgraded);
    });
}

/// Lock coupling over two locks: the parent says which of two children holds the value; a
/// writer moves the value to the other child (writing child, then parent). A reader that
/// reads the parent, begins on the child, validates the parent, reads the child and
/// validates it never returns a stale value.
#[test]
fn loom_lock_coupling_over_two_locks() {
    loom::model(|| {
        let parent = Arc::new(HybridLock::new(AtomicU64::new(0)));
        let children = Arc::new([
            HybridLock::new(AtomicU64::new(7)),
            HybridLock::new(AtomicU64::new(0)),
        ]);
        let writer = {
            let (parent, children) = (parent.clone(), children.clone());
            thread::spawn(move || {
                let parent = parent.write();
                children[1].write().store(8, Relaxed);
                parent.store(1, Relaxed);
            })
        };
        let read = || -> Result<u64, Restart> {
            let parent = parent.optimistic()?;
            let index = parent.load(Relaxed) as usize;
            let child = children.get(index).ok_or(Restart)?.optimistic()?;
            parent.validate()?;
            let value = child.load(Relaxed);
            child.validate()?;
            Ok(value)
        };
        if let Ok(value) = read() {
            assert!(
                value == 7 || value == 8,
                "read a child the parent did not name"
            );
        }
        writer.join().unwrap();
        assert_eq!(read(), Ok(8));
    });
}

/// Shared and exclusive holds exclude each other (the lock_api face's modes).
#[test]
fn loom_shared_and_exclusive_exclude() {
    loom::model(|| {
        let lock = pair();
        let writer = {
            let lock = lock.clone();
            thread::spawn(move || write_pair(&lock, 1))
        };
        {
            let read = lock.read();
            assert_eq!(read.a.load(Relaxed), read.b.load(Relaxed));
        }
        writer.join().unwrap();
    });
}
