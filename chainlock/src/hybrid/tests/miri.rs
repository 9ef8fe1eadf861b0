//! Concurrent optimistic readers and writers, small enough for Miri's data-race detector
//! (`cargo +nightly miri test -p chainlock --lib hybrid`): a data race anywhere in the
//! protocol is reported as undefined behaviour there; natively they check that a validated
//! read never mixes two writes.

use crate::hybrid::{HybridLock, HybridRwLock, Restart};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Two words a writer always sets equal: a validated read must see them equal.
#[derive(Default)]
struct Pair {
    a: AtomicU64,
    b: AtomicU64,
}

const WRITES: u64 = if cfg!(miri) { 30 } else { 2_000 };

#[test]
fn optimistic_readers_racing_writers_never_see_two_writes_mixed() {
    let pair = HybridLock::new(Pair::default());
    let (validated, restarted) = std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..WRITES {
                    let pair = pair.write();
                    let next = pair.a.load(Relaxed) + 1;
                    pair.a.store(next, Relaxed);
                    pair.b.store(next, Relaxed);
                }
            });
        }
        let readers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let (mut validated, mut restarted) = (0, 0);
                    for _ in 0..WRITES {
                        match pair.read_optimistic(|p| (p.a.load(Relaxed), p.b.load(Relaxed))) {
                            Ok((a, b)) => {
                                assert_eq!(a, b, "a validated read mixed two writes");
                                validated += 1;
                            }
                            Err(Restart) => restarted += 1,
                        }
                    }
                    (validated, restarted)
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|reader| reader.join().unwrap())
            .fold((0, 0), |(v, r), (v2, r2)| (v + v2, r + r2))
    });
    assert_eq!(validated + restarted, 2 * WRITES);
    let pair = pair.into_inner();
    assert_eq!(pair.a.into_inner(), 2 * WRITES, "no write lost");
    assert_eq!(pair.b.into_inner(), 2 * WRITES);
}

#[test]
fn upgrades_by_version_lose_no_update() {
    let counter = HybridLock::new(AtomicU64::new(0));
    let upgraded: u64 = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut upgraded = 0;
                    for _ in 0..WRITES {
                        let Ok(read) = counter.optimistic() else {
                            continue;
                        };
                        let seen = read.load(Relaxed);
                        if let Ok(write) = read.upgrade() {
                            write.store(seen + 1, Relaxed);
                            upgraded += 1;
                        }
                    }
                    upgraded
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    assert!(upgraded > 0);
    assert_eq!(
        counter.into_inner().into_inner(),
        upgraded,
        "an upgrade acted on a stale read"
    );
}

#[test]
fn the_lock_api_face_excludes_writers_and_bumps_the_version() {
    let lock = HybridRwLock::new(0_u64);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..WRITES {
                    *lock.write() += 1;
                    let _ = *lock.read();
                }
            });
        }
    });
    assert_eq!(*lock.read(), 2 * WRITES);
    // SAFETY: no guard is alive; `raw` only reads the version.
    let version = unsafe { lock.raw() }.optimistic().unwrap();
    assert_eq!(version.get(), 2 * 2 * WRITES, "two per exclusive hold");
}

#[test]
fn a_reader_sees_a_writer_in_the_middle_and_after() {
    let lock = HybridLock::new(AtomicU64::new(0));
    let read = lock.optimistic().unwrap();
    let write = lock.write();
    assert_eq!(
        lock.optimistic().err(),
        Some(Restart),
        "odd version: a writer holds it"
    );
    assert_eq!(read.validate(), Err(Restart));
    drop(write);
    assert_eq!(read.validate(), Err(Restart), "the version moved on");
    assert_eq!(lock.read_optimistic(|v| v.load(Relaxed)), Ok(0));
    let downgraded = lock.write().downgrade();
    assert!(
        lock.optimistic().is_ok(),
        "a downgraded hold lets optimistic readers in"
    );
    assert!(lock.try_write().is_none());
    assert_eq!(
        lock.raw().optimistic().map(crate::hybrid::Version::get),
        Ok(4),
        "a failed try changes nothing"
    );
    drop(downgraded);
    assert!(lock.try_write().is_some());
    assert!(lock.try_read().is_some());
}

/// The telemetry's try before a sampled upgrade waits: a stale version restarts, a held lock
/// is "not now" (and the version untouched), a free one is taken exclusively and its version
/// goes odd, as `upgrade` does.
#[test]
fn try_upgrade_answers_restart_busy_or_taken() {
    let lock = HybridLock::new(());
    let raw = lock.raw();
    let stale = raw.optimistic().unwrap();
    drop(lock.write());
    assert_eq!(raw.try_upgrade(stale), Err(Restart));
    let seen = raw.optimistic().unwrap();
    let read = lock.read();
    assert_eq!(raw.try_upgrade(seen), Ok(false));
    drop(read);
    assert_eq!(
        raw.validate(seen),
        Ok(()),
        "a try that failed wrote nothing"
    );
    assert_eq!(raw.try_upgrade(seen), Ok(true));
    assert!(raw.is_locked_exclusive() && raw.optimistic().is_err());
    // SAFETY: taken exclusively by the try above.
    unsafe { raw.release_exclusive() };
    assert_eq!(raw.optimistic().unwrap().get(), seen.get() + 2);
}
