//! The rooms lock (group mutual exclusion): semantics, misuse, exit actions (including
//! panicking ones), timeouts, async cancellation, a stress test with an invariant
//! checker, and the wake-up count against one condition variable with `notify_all`.

use chainlock_suite::rooms_baseline as baseline;

use chainlock::rooms::Rooms;
use rand::{Rng, SeedableRng, rngs::SmallRng};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// Long enough that only a bug makes a test wait this much.
const PATIENCE: Duration = Duration::from_secs(20);

/// Waits until `rooms` has had `n` entries that waited (they are then parked or about to).
fn until_waits(rooms: &Rooms, n: u64) {
    let start = Instant::now();
    while rooms.stats().waits < n {
        assert!(start.elapsed() < PATIENCE, "waiters never registered");
        thread::yield_now();
    }
}

#[test]
fn locks_guards_and_futures_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<Rooms>();
    send_sync::<chainlock::rooms::RoomGuard<'static>>();
    send_sync::<chainlock::rooms::OwnedRoomGuard>();
    // The entry future is `Send` (checked on a value: its type is not named).
    let rooms = Rooms::new(1);
    send(&rooms.enter_async(0));
}

#[test]
fn same_room_is_shared_other_rooms_are_excluded() {
    let rooms = Rooms::new(3);
    let a = rooms.enter(1);
    let b = rooms.try_enter(1).expect("same room, nobody waiting");
    assert_eq!((a.room(), b.room()), (1, 1));
    assert_eq!(rooms.current_room(), Some(1));
    assert!(rooms.try_enter(0).is_none());
    assert!(rooms.try_enter_for(2, Duration::from_millis(5)).is_none());
    drop(a);
    assert!(rooms.try_enter(0).is_none(), "b is still in");
    drop(b);
    assert_eq!(rooms.current_room(), None);
    assert_eq!(rooms.try_enter(0).map(|g| g.room()), Some(0));
    let stats = rooms.stats();
    assert_eq!(
        (stats.waits, stats.withdrawn, stats.futile_wakeups),
        (1, 1, 0)
    );
}

/// The message of the panic `call` makes.
fn panic_message(call: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(call)).expect_err("a panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .expect("a formatted message")
}

#[test]
fn out_of_range_rooms_panic_in_every_form() {
    let rooms = Rooms::new(2);
    let message = |room: usize| format!("room {room} is out of range: the lock has 2 rooms");
    assert_eq!(panic_message(|| drop(rooms.try_enter(2))), message(2));
    assert_eq!(
        panic_message(|| drop(rooms.try_enter_for(2, Duration::from_secs(1)))),
        message(2)
    );
    assert_eq!(
        panic_message(|| drop(rooms.try_enter_for(7, Duration::MAX))),
        message(7)
    );
    assert_eq!(
        panic_message(|| drop(rooms.try_enter_until(usize::MAX, Instant::now()))),
        message(usize::MAX)
    );
    // Even while another room is occupied: a panic at once, not a wait.
    let held = rooms.enter(0);
    assert_eq!(
        panic_message(|| drop(rooms.try_enter_for(5, Duration::MAX))),
        message(5)
    );
    drop(held);
    assert_eq!(rooms.current_room(), None, "nothing was entered");
}

#[test]
#[should_panic(expected = "room 3 is out of range: the lock has 3 rooms")]
fn enter_out_of_range_panics() {
    let rooms = Rooms::new(3);
    let _held = rooms.enter(0);
    let _never = rooms.enter(3);
}

/// Runs `f`, which must panic, and returns where the panic says it happened.
fn panic_location(f: impl FnOnce()) -> (String, u32) {
    use std::cell::RefCell;
    /// `Some` while this thread runs `f`: then holds the location of its panic, if any.
    type Caught = RefCell<Option<Option<(String, u32)>>>;
    thread_local!(static CAUGHT: Caught = const { RefCell::new(None) });
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let captured = CAUGHT.with(|caught| match &mut *caught.borrow_mut() {
                Some(slot) => {
                    *slot = info.location().map(|at| (at.file().to_owned(), at.line()));
                    true
                }
                None => false,
            });
            // Panics of other threads keep the default report.
            if !captured {
                previous(info);
            }
        }));
    });
    CAUGHT.with(|caught| *caught.borrow_mut() = Some(None));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let location = CAUGHT.with(|caught| caught.borrow_mut().take().flatten());
    assert!(outcome.is_err(), "`f` panics");
    location.expect("the panic has a location")
}

#[test]
fn a_bad_room_panics_at_the_caller() {
    let rooms = Arc::new(Rooms::new(2));
    let line = line!() + 1;
    let enter = panic_location(|| drop(rooms.enter(2)));
    assert_eq!(enter, (file!().to_owned(), line));
    let line = line!() + 1;
    let owned = panic_location(|| drop(rooms.enter_owned(7)));
    assert_eq!(owned, (file!().to_owned(), line));
    let line = line!() + 1;
    let future = panic_location(|| drop(rooms.enter_async(2)));
    assert_eq!(future, (file!().to_owned(), line));
    let line = line!() + 1;
    let owned_future = panic_location(|| drop(rooms.enter_owned_async(2)));
    assert_eq!(owned_future, (file!().to_owned(), line));
    let line = line!() + 1;
    let action = panic_location(|| drop(Rooms::new(1).with_exit_action(1, || {})));
    assert_eq!(action, (file!().to_owned(), line));
    let line = line!() + 1;
    let try_enter = panic_location(|| drop(rooms.try_enter(2)));
    assert_eq!(try_enter, (file!().to_owned(), line));
    let line = line!() + 1;
    let try_for = panic_location(|| drop(rooms.try_enter_for(2, Duration::from_millis(1))));
    assert_eq!(try_for, (file!().to_owned(), line));
    let line = line!() + 1;
    let try_for_ever = panic_location(|| drop(rooms.try_enter_for(2, Duration::MAX)));
    assert_eq!(try_for_ever, (file!().to_owned(), line));
    let line = line!() + 1;
    let try_until = panic_location(|| drop(rooms.try_enter_until(2, Instant::now())));
    assert_eq!(try_until, (file!().to_owned(), line));
    let line = line!() + 1;
    let try_for_async = panic_location(|| drop(rooms.try_enter_for_async(2, Duration::ZERO)));
    assert_eq!(try_for_async, (file!().to_owned(), line));
    let line = line!() + 1;
    let try_until_async = panic_location(|| drop(rooms.try_enter_until_async(2, Instant::now())));
    assert_eq!(try_until_async, (file!().to_owned(), line));
}

#[test]
#[should_panic(expected = "room 2 is out of range")]
fn exit_action_out_of_range_panics() {
    let _ = Rooms::new(2).with_exit_action(2, || {});
}

#[test]
#[should_panic(expected = "a rooms lock needs between 1 and")]
fn zero_rooms_panics() {
    let _ = Rooms::new(0);
}

#[test]
fn untimed_try_enter_for_still_waits_and_enters() {
    let rooms = Rooms::new(2);
    let held = rooms.enter(0);
    thread::scope(|s| {
        let waiter = s.spawn(|| rooms.try_enter_for(1, Duration::MAX).map(|g| g.room()));
        until_waits(&rooms, 1);
        drop(held);
        assert_eq!(waiter.join().unwrap(), Some(1));
    });
}

#[test]
fn owned_guards_leave_from_another_thread() {
    let exits = Arc::new(AtomicUsize::new(0));
    let counted = exits.clone();
    let rooms = Arc::new(Rooms::new(2).with_exit_action(1, move || {
        counted.fetch_add(1, SeqCst);
    }));
    let guards: Vec<_> = (0..3).map(|_| rooms.enter_owned(1)).collect();
    assert!(
        guards
            .iter()
            .all(|g| g.room() == 1 && Arc::ptr_eq(g.rooms(), &rooms))
    );
    assert!(rooms.try_enter(0).is_none());
    thread::spawn(move || drop(guards)).join().unwrap();
    assert_eq!(exits.load(SeqCst), 1);
    assert_eq!(rooms.current_room(), None);
}

#[test]
fn exit_action_runs_once_per_occupancy_with_the_room_still_occupied() {
    let exits = Arc::new(AtomicUsize::new(0));
    let rooms = Arc::new_cyclic(|me: &std::sync::Weak<Rooms>| {
        let (me, exits) = (me.clone(), exits.clone());
        Rooms::new(2).with_exit_action(0, move || {
            let rooms = me.upgrade().expect("lock alive");
            // Still counts as occupied: nobody enters any room while the action runs.
            assert_eq!(rooms.current_room(), Some(0));
            assert!(rooms.try_enter(0).is_none());
            assert!(rooms.try_enter(1).is_none());
            exits.fetch_add(1, SeqCst);
        })
    });
    let a = rooms.enter(0);
    let b = rooms.enter(0);
    drop(a);
    assert_eq!(exits.load(SeqCst), 0, "b is still in");
    drop(b);
    assert_eq!(exits.load(SeqCst), 1);
    drop(rooms.enter(1)); // no action for room 1
    drop(rooms.enter(0));
    assert_eq!(exits.load(SeqCst), 2);
    assert_eq!(rooms.current_room(), None);
}

#[test]
fn waiters_arriving_during_the_exit_action_wait_for_it() {
    let (started_tx, started_rx) = mpsc::channel();
    let (finish_tx, finish_rx) = mpsc::channel::<()>();
    let finish_rx = std::sync::Mutex::new(finish_rx);
    let done = Arc::new(AtomicBool::new(false));
    let done_in_action = done.clone();
    let rooms = Rooms::new(2).with_exit_action(0, move || {
        // Blocks the first time only (then the sender is gone).
        let _ = started_tx.send(());
        let _ = finish_rx.lock().unwrap().recv();
        done_in_action.store(true, SeqCst);
    });
    thread::scope(|s| {
        let guard = rooms.enter(0);
        s.spawn(move || drop(guard)); // runs the exit action there
        started_rx.recv().unwrap();
        let same = s.spawn(|| {
            let _g = rooms.enter(0);
            assert!(done.load(SeqCst), "entered a closing room");
        });
        let other = s.spawn(|| {
            let _g = rooms.enter(1);
            assert!(done.load(SeqCst), "entered before the exit action finished");
        });
        until_waits(&rooms, 2);
        finish_tx.send(()).unwrap();
        drop(finish_tx);
        same.join().unwrap();
        other.join().unwrap();
    });
    assert_eq!(rooms.stats().futile_wakeups, 0);
}

#[test]
fn hand_off_is_round_robin_from_the_closing_room_and_admits_whole_batches() {
    let rooms = Rooms::new(4);
    let order = std::sync::Mutex::new(Vec::new());
    let held = rooms.enter(2);
    thread::scope(|s| {
        // Two waiters for each of rooms 0, 1 and 3, and two for room 2 (queued behind).
        for (i, room) in [0, 1, 3, 2, 0, 1, 3, 2].into_iter().enumerate() {
            let (rooms, order) = (&rooms, &order);
            s.spawn(move || {
                let _guard = rooms.enter(room);
                order.lock().unwrap().push(room);
                // Both of a batch are in together: wait for the partner to arrive.
                let start = Instant::now();
                while order.lock().unwrap().iter().filter(|&&r| r == room).count() < 2 {
                    assert!(start.elapsed() < PATIENCE, "batch of room {room} was split");
                    thread::yield_now();
                }
            });
            until_waits(rooms, i as u64 + 1);
        }
        drop(held);
    });
    assert_eq!(*order.lock().unwrap(), [3, 3, 0, 0, 1, 1, 2, 2]);
    let stats = rooms.stats();
    assert_eq!(
        (stats.waits, stats.wakeups, stats.futile_wakeups),
        (8, 8, 0)
    );
}

#[test]
fn panicking_exit_action_moves_the_lock_on_and_reaches_the_leaver() {
    let rooms = Arc::new(Rooms::new(2).with_exit_action(0, {
        let once = AtomicBool::new(true);
        move || {
            assert!(!once.swap(false, SeqCst), "exit action failed");
        }
    }));
    let held = rooms.enter(0);
    let waiter = {
        let rooms = rooms.clone();
        thread::spawn(move || rooms.enter(1).room())
    };
    until_waits(&rooms, 1);
    let err =
        catch_unwind(AssertUnwindSafe(|| drop(held))).expect_err("the panic reaches the leaver");
    assert_eq!(err.downcast_ref::<&str>(), Some(&"exit action failed"));
    assert_eq!(waiter.join().unwrap(), 1, "the waiter got its room");
    // The lock is not wedged: every room can be entered again, the action runs again.
    drop(rooms.enter(0));
    drop(rooms.enter(1));
    assert_eq!(rooms.current_room(), None);
}

#[test]
fn timed_out_waiter_leaves_no_trace() {
    let rooms = Rooms::new(2);
    let held = rooms.enter(0);
    thread::scope(|s| {
        let quitter = s.spawn(|| rooms.try_enter_for(1, Duration::from_millis(50)).is_none());
        until_waits(&rooms, 1);
        // Arrivals to the open room queue behind the waiter for room 1 ...
        let queued = s.spawn(|| rooms.enter(0).room());
        until_waits(&rooms, 2);
        assert!(quitter.join().unwrap(), "timed out");
        // ... and get in once it gave up, while room 0 is still held.
        assert_eq!(queued.join().unwrap(), 0);
    });
    assert!(
        rooms.try_enter(0).is_some(),
        "no phantom waiter blocks the open room"
    );
    drop(held);
    assert_eq!(rooms.current_room(), None, "no phantom occupant");
    assert!(rooms.try_enter(1).is_some());
    let stats = rooms.stats();
    assert_eq!((stats.withdrawn, stats.futile_wakeups), (1, 0));
}

#[test]
fn a_stream_of_arrivals_cannot_starve_another_room() {
    let rooms = Rooms::new(2);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                while !stop.load(SeqCst) {
                    let _g = rooms.enter(0);
                    thread::yield_now();
                }
            });
        }
        for _ in 0..20 {
            thread::sleep(Duration::from_millis(1));
            let entered = rooms.try_enter_for(1, PATIENCE);
            assert_eq!(entered.map(|g| g.room()), Some(1));
        }
        stop.store(true, SeqCst);
    });
    assert_eq!(rooms.stats().futile_wakeups, 0);
}

/// The invariant checker of the stress test: a "current room" cell that every occupant
/// asserts, occupant counters that the exit actions find at zero, and a count of
/// occupancies that must match the count of exit actions.
struct Checker {
    current: AtomicUsize,
    occupants: Vec<AtomicUsize>,
    occupancies: AtomicUsize,
    exits: AtomicUsize,
}

const NOBODY: usize = usize::MAX;

impl Checker {
    fn new(rooms: usize) -> Self {
        Self {
            current: AtomicUsize::new(NOBODY),
            occupants: (0..rooms).map(|_| AtomicUsize::new(0)).collect(),
            occupancies: AtomicUsize::new(0),
            exits: AtomicUsize::new(0),
        }
    }

    fn inside(&self, room: usize) {
        self.occupants[room].fetch_add(1, SeqCst);
        match self.current.compare_exchange(NOBODY, room, SeqCst, SeqCst) {
            Ok(_) => {
                self.occupancies.fetch_add(1, SeqCst);
            }
            Err(current) => assert_eq!(current, room, "rooms {current} and {room} both occupied"),
        }
        for (other, occupants) in self.occupants.iter().enumerate() {
            assert!(
                other == room || occupants.load(SeqCst) == 0,
                "room {other} occupied too"
            );
        }
        thread::yield_now();
        assert_eq!(self.current.load(SeqCst), room);
        self.occupants[room].fetch_sub(1, SeqCst);
    }

    fn exit_action(&self, room: usize) {
        assert_eq!(
            self.occupants[room].load(SeqCst),
            0,
            "exit action with occupants"
        );
        assert_eq!(
            self.current.swap(NOBODY, SeqCst),
            room,
            "exit action of a room not open"
        );
        self.exits.fetch_add(1, SeqCst);
    }
}

#[test]
fn stress_invariants_with_timeouts_and_try_enter() {
    const ROOMS: usize = 3;
    const THREADS: usize = 8;
    const OPS: usize = 3_000;
    let checker = Arc::new(Checker::new(ROOMS));
    let mut rooms = Rooms::new(ROOMS);
    for room in 0..ROOMS {
        let checker = checker.clone();
        rooms = rooms.with_exit_action(room, move || checker.exit_action(room));
    }
    let outcomes = [(); 2].map(|()| AtomicUsize::new(0)); // entered, did not get in (now or in time)
    thread::scope(|s| {
        for seed in 0..THREADS as u64 {
            let (rooms, checker, outcomes) = (&rooms, &checker, &outcomes);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..OPS {
                    let room = rng.random_range(0..ROOMS);
                    let guard = match rng.random_range(0..4) {
                        0 => rooms.try_enter(room),
                        1 => rooms
                            .try_enter_for(room, Duration::from_micros(rng.random_range(0..200))),
                        _ => Some(rooms.enter(room)),
                    };
                    if let Some(guard) = guard {
                        checker.inside(guard.room());
                        outcomes[0].fetch_add(1, SeqCst);
                    } else {
                        outcomes[1].fetch_add(1, SeqCst);
                    }
                }
            });
        }
    });
    assert_eq!(rooms.current_room(), None, "phantom occupant");
    assert_eq!(checker.current.load(SeqCst), NOBODY);
    let occupancies = checker.occupancies.load(SeqCst);
    assert_eq!(
        checker.exits.load(SeqCst),
        occupancies,
        "one exit action per occupancy"
    );
    let stats = rooms.stats();
    assert_eq!(stats.futile_wakeups, 0);
    assert!(
        stats.waits > 0 && stats.wakeups > 0,
        "the slow path was exercised: {stats:?}"
    );
    assert!(occupancies > ROOMS, "the rooms took turns: {occupancies}");
    assert!(outcomes[0].load(SeqCst) > THREADS * OPS / 2);
    // Everything is free again for everyone.
    for room in 0..ROOMS {
        checker.inside(rooms.try_enter(room).expect("free").room());
    }
}

/// Everyone waits while room 0 is held; then the rooms open one after the other. Ours
/// wakes exactly the admitted batch each time; one condition variable with `notify_all`
/// wakes every waiter at every hand-off.
#[test]
fn wakeups_reach_only_the_admitted_batch() {
    const ROOMS: usize = 4;
    const PER_ROOM: usize = 3;
    let waiters = (ROOMS - 1) * PER_ROOM;

    let rooms = Rooms::new(ROOMS);
    let held = rooms.enter(0);
    let barrier = Barrier::new(waiters + 1);
    thread::scope(|s| {
        for i in 0..waiters {
            let (rooms, barrier) = (&rooms, &barrier);
            s.spawn(move || {
                barrier.wait();
                drop(rooms.enter(1 + i % (ROOMS - 1)));
            });
        }
        barrier.wait();
        until_waits(&rooms, waiters as u64);
        drop(held);
    });
    let stats = rooms.stats();
    assert_eq!(stats.wakeups, waiters as u64, "every waiter woken once");
    assert_eq!(stats.futile_wakeups, 0);

    let rooms = baseline::CondvarRooms::new(ROOMS);
    let held = rooms.enter(0);
    thread::scope(|s| {
        for i in 0..waiters {
            let rooms = &rooms;
            s.spawn(move || {
                let room = 1 + i % (ROOMS - 1);
                let _guard = rooms.enter(room);
                // Room 1 opens first; hold it until every waiter has been woken once,
                // so that those of rooms 2 and 3 surely woke while their room was shut.
                let start = Instant::now();
                while room == 1 && rooms.wakeups().0 < waiters as u64 {
                    assert!(start.elapsed() < PATIENCE, "waiters never woke");
                    thread::yield_now();
                }
            });
        }
        let start = Instant::now();
        while rooms.waiting() < waiters {
            assert!(start.elapsed() < PATIENCE, "waiters never registered");
            thread::yield_now();
        }
        drop(held);
    });
    let (wakeups, futile) = rooms.wakeups();
    assert!(
        futile >= (waiters - PER_ROOM) as u64,
        "baseline: {wakeups} wake-ups, {futile} futile"
    );
    assert_eq!(wakeups - futile, waiters as u64);
}

/// (The suite always enables chainlock's `tokio` feature.)
mod async_rooms {
    use super::*;
    use std::future::{Future, poll_fn};
    use std::pin::pin;
    use std::task::Poll;

    #[tokio::test]
    async fn dropped_pending_future_leaves_no_trace() {
        let rooms = Rooms::new(2);
        let held = rooms.enter(0);
        let waiting = tokio::time::timeout(Duration::from_millis(20), rooms.enter_async(1)).await;
        assert!(waiting.is_err(), "room 0 is held");
        assert!(
            rooms.try_enter(0).is_some(),
            "no phantom waiter blocks the open room"
        );
        drop(held);
        assert_eq!(rooms.current_room(), None);
        assert_eq!(rooms.enter_async(1).await.room(), 1);
        assert_eq!(rooms.stats().withdrawn, 1);
    }

    /// `RoomsStats` counts async entries in `waits` and `withdrawn`, and only blocking
    /// ones in `wakeups`.
    #[tokio::test]
    async fn stats_count_async_waits_but_not_their_polls_as_wakeups() {
        let rooms = Rooms::new(2);
        let held = rooms.enter(0);
        {
            let mut entering = pin!(rooms.enter_async(1));
            let pending = poll_fn(|cx| Poll::Ready(entering.as_mut().poll(cx).is_pending())).await;
            assert!(pending, "room 0 is held");
            let stats = rooms.stats();
            assert_eq!((stats.waits, stats.wakeups, stats.withdrawn), (1, 0, 0));
            drop(held);
            let guard = entering.await;
            assert_eq!(guard.room(), 1);
            let stats = rooms.stats();
            assert_eq!((stats.waits, stats.wakeups, stats.withdrawn), (1, 0, 0));
            // A blocking entry that waits for the async occupant is woken once.
            thread::scope(|s| {
                let waiter = s.spawn(|| rooms.enter(0).room());
                until_waits(&rooms, 2);
                drop(guard);
                assert_eq!(waiter.join().unwrap(), 0);
            });
        }
        let stats = rooms.stats();
        assert_eq!(
            (
                stats.waits,
                stats.wakeups,
                stats.futile_wakeups,
                stats.withdrawn
            ),
            (2, 1, 0, 0)
        );
        let held = rooms.enter(0);
        let dropped = tokio::time::timeout(Duration::from_millis(1), rooms.enter_async(1)).await;
        assert!(dropped.is_err(), "room 0 is held");
        drop(held);
        let stats = rooms.stats();
        assert_eq!((stats.waits, stats.withdrawn), (3, 1));
    }

    #[tokio::test]
    async fn admitted_but_dropped_future_leaves_the_room() {
        let exits = Arc::new(AtomicUsize::new(0));
        let counted = exits.clone();
        let rooms = Rooms::new(2).with_exit_action(1, move || {
            counted.fetch_add(1, SeqCst);
        });
        let held = rooms.enter(0);
        {
            let mut entering = pin!(rooms.enter_async(1));
            let first = poll_fn(|cx| Poll::Ready(entering.as_mut().poll(cx).is_pending())).await;
            assert!(first, "room 0 is held");
            drop(held); // admits the future's batch
            assert_eq!(rooms.current_room(), Some(1));
        } // dropped without being polled again
        assert_eq!(exits.load(SeqCst), 1, "it left, running the exit action");
        assert_eq!(rooms.current_room(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn owned_async_guards_cross_spawned_tasks() {
        let rooms = Arc::new(Rooms::new(2));
        let held = rooms.enter_owned_async(0).await;
        let waiter = tokio::spawn(rooms.enter_owned_async(1));
        let start = Instant::now();
        while rooms.stats().waits < 1 {
            assert!(start.elapsed() < PATIENCE, "the task never waited");
            tokio::task::yield_now().await;
        }
        tokio::spawn(async move { drop(held) }).await.unwrap();
        let guard = tokio::time::timeout(PATIENCE, waiter)
            .await
            .expect("admitted")
            .unwrap();
        assert_eq!(guard.room(), 1);
        drop(guard);
        assert_eq!(rooms.current_room(), None);
    }

    #[test]
    fn async_and_blocking_waiters_share_the_invariants() {
        const ROOMS: usize = 2;
        let checker = Arc::new(Checker::new(ROOMS));
        let mut rooms = Rooms::new(ROOMS);
        for room in 0..ROOMS {
            let checker = checker.clone();
            rooms = rooms.with_exit_action(room, move || checker.exit_action(room));
        }
        let rooms = Arc::new(rooms);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let tasks: Vec<_> = (0..8u64)
                .map(|seed| {
                    let (rooms, checker) = (rooms.clone(), checker.clone());
                    tokio::spawn(async move {
                        let mut rng = SmallRng::seed_from_u64(seed);
                        for _ in 0..500 {
                            let room = rng.random_range(0..ROOMS);
                            let patience = Duration::from_micros(rng.random_range(0..300));
                            if let Ok(guard) =
                                tokio::time::timeout(patience, rooms.enter_async(room)).await
                            {
                                checker.inside(guard.room());
                                tokio::task::yield_now().await;
                            }
                        }
                    })
                })
                .collect();
            let blocking = {
                let (rooms, checker) = (rooms.clone(), checker.clone());
                thread::spawn(move || {
                    for i in 0..2_000 {
                        let guard = rooms.enter(i % ROOMS);
                        checker.inside(guard.room());
                    }
                })
            };
            for task in tasks {
                task.await.unwrap();
            }
            blocking.join().unwrap();
        });
        assert_eq!(rooms.current_room(), None);
        assert_eq!(checker.exits.load(SeqCst), checker.occupancies.load(SeqCst));
        assert_eq!(rooms.stats().futile_wakeups, 0);
    }
}

#[tokio::test]
async fn async_timed_entries_expire_while_another_room_is_held() {
    let rooms = Rooms::new(2);
    let short = Duration::from_millis(5);
    let held = rooms.enter_async(0).await;
    assert!(rooms.try_enter_for_async(1, short).await.is_none());
    let deadline = Instant::now() + short;
    assert!(rooms.try_enter_until_async(1, deadline).await.is_none());
    drop(held);
    let entered = rooms.try_enter_for_async(1, short).await;
    assert_eq!(entered.map(|g| g.room()), Some(1));
    let deadline = Instant::now() + short;
    assert!(rooms.try_enter_until_async(0, deadline).await.is_some());
    assert_eq!(rooms.stats().withdrawn, 2, "the timed-out waiters withdrew");
}
