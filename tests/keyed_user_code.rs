//! User code that runs inside the keyed lock manager (a key's `Drop`, `Hash`, `Eq`) and
//! panics must not strand a key: after the panic, the key is free again once its holders
//! are done, for the reentrant, the queued and the async acquisitions.

use chainlock::keyed::{AsyncKeyedLocks, KeyedLocks};
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// A key equal to any other with the same id, whose destructor panics when `boom`.
#[derive(Debug)]
struct Key {
    id: u32,
    boom: bool,
}

impl Key {
    fn calm(id: u32) -> Self {
        Key { id, boom: false }
    }

    fn boom(id: u32) -> Self {
        Key { id, boom: true }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        assert!(
            !self.boom || std::thread::panicking(),
            "key {} refuses to be dropped",
            self.id
        );
    }
}

fn assert_free(locks: &KeyedLocks<Key>) {
    assert_eq!(locks.len(), 0, "no entry is left behind");
    let guard = locks.try_lock_for(Key::calm(1), Duration::ZERO);
    assert!(guard.is_some(), "the key can be taken again");
}

#[test]
fn a_panicking_duplicate_key_in_a_reentrant_lock_strands_nothing() {
    let locks = KeyedLocks::new();
    let held = locks.lock(Key::calm(1));
    let outcome = catch_unwind(AssertUnwindSafe(|| locks.lock(Key::boom(1))));
    assert!(outcome.is_err(), "the key's panic reaches the caller");
    drop(held);
    assert_free(&locks);
}

#[test]
fn a_panicking_duplicate_key_in_a_queued_lock_strands_nothing() {
    let locks = KeyedLocks::new();
    let held = locks.lock(Key::calm(1));
    std::thread::scope(|scope| {
        let other =
            scope.spawn(|| catch_unwind(AssertUnwindSafe(|| drop(locks.lock(Key::boom(1))))));
        assert!(
            other.join().unwrap().is_err(),
            "the queued caller's key panicked"
        );
    });
    assert_eq!(
        locks.waiting(&Key::calm(1)),
        0,
        "the panicking waiter left the queue"
    );
    drop(held);
    assert_free(&locks);
}

#[test]
fn a_panicking_duplicate_key_in_a_timed_or_busy_attempt_strands_nothing() {
    let locks = KeyedLocks::new();
    let held = locks.lock(Key::calm(1));
    std::thread::scope(|scope| {
        let busy = scope.spawn(|| {
            catch_unwind(AssertUnwindSafe(|| {
                drop(locks.try_lock_for(Key::boom(1), Duration::ZERO));
            }))
        });
        assert!(busy.join().unwrap().is_err());
        let timed = scope.spawn(|| {
            catch_unwind(AssertUnwindSafe(|| {
                drop(locks.try_lock_for(Key::boom(1), Duration::from_millis(1)));
            }))
        });
        assert!(timed.join().unwrap().is_err());
    });
    drop(held);
    assert_free(&locks);
}

#[tokio::test]
async fn a_panicking_duplicate_key_in_an_async_lock_strands_nothing() {
    let locks = std::sync::Arc::new(AsyncKeyedLocks::new());
    let held = locks.lock(Key::calm(1)).await;
    let task = tokio::spawn({
        let locks = locks.clone();
        async move { drop(locks.lock(Key::boom(1)).await) }
    });
    assert!(
        task.await.unwrap_err().is_panic(),
        "the key's panic ends the task"
    );
    drop(held);
    assert_eq!(locks.len(), 0);
    assert!(locks.try_lock(Key::calm(1)).is_some());
}
