//! Every interleaving of small scenarios: 2–3 threads, 2–3 rooms.

use crate::loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use crate::loom::sync::{Arc, Mutex};
use crate::loom::thread;
use crate::rooms::Rooms;
use crate::rooms::state::FREE;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Enter(usize),
    Exit(usize),
}

/// Occupancy bookkeeping that every occupant and exit action checks.
#[derive(Default)]
struct Checker {
    occupants: [AtomicUsize; 2],
    log: Mutex<Vec<Event>>,
}

impl Checker {
    fn occupy(&self, room: usize) {
        self.occupants[room].fetch_add(1, SeqCst);
        assert_eq!(
            self.occupants[1 - room].load(SeqCst),
            0,
            "two rooms occupied"
        );
        self.log.lock().push(Event::Enter(room));
        self.occupants[room].fetch_sub(1, SeqCst);
    }

    fn exit_action(&self, room: usize) {
        assert_eq!(
            self.occupants[room].load(SeqCst),
            0,
            "exit action with occupants"
        );
        assert_eq!(
            self.occupants[1 - room].load(SeqCst),
            0,
            "exit action overlaps a room"
        );
        self.log.lock().push(Event::Exit(room));
    }

    /// Every occupancy ends with exactly one exit action, before another room opens.
    fn check_log(&self) {
        let mut open = None;
        for &event in self.log.lock().iter() {
            match event {
                Event::Enter(room) => {
                    assert!(open.is_none_or(|o| o == room), "{room} opened before exit");
                    open = Some(room);
                }
                Event::Exit(room) => {
                    assert_eq!(open, Some(room), "exit action without occupancy");
                    open = None;
                }
            }
        }
        assert_eq!(open, None, "occupancy without exit action");
    }
}

fn assert_idle(rooms: &Rooms) {
    assert_eq!(
        rooms.state.load(SeqCst),
        FREE,
        "phantom occupancy or waiter"
    );
    let waiters = rooms.waiters.lock();
    assert_eq!(waiters.total, 0);
    assert_eq!(waiters.stats.futile_wakeups, 0);
}

fn with_checker(checker: &Arc<Checker>) -> Rooms {
    let (c0, c1) = (checker.clone(), checker.clone());
    Rooms::new(2)
        .with_exit_action(0, move || c0.exit_action(0))
        .with_exit_action(1, move || c1.exit_action(1))
}

/// Spawns a thread that enters `room` and, inside it, runs `inside(room)`.
fn spawn_enter(
    rooms: &Arc<Rooms>,
    room: usize,
    inside: impl FnOnce(usize) + Send + 'static,
) -> loom::thread::JoinHandle<()> {
    let rooms = rooms.clone();
    thread::spawn(move || {
        let _guard = rooms.enter(room);
        inside(room);
    })
}

/// Appends the room to `order`.
fn log_into(order: &Arc<Mutex<Vec<usize>>>) -> impl FnOnce(usize) + Send + 'static {
    let order = order.clone();
    move |room| order.lock().push(room)
}

/// Three threads, two of them in the same room: mutual exclusion between rooms, one
/// exit action per occupancy before the next room opens, nobody stranded.
#[test]
fn loom_exclusion_and_exit_actions() {
    loom::model(|| {
        let checker = Arc::new(Checker::default());
        let rooms = Arc::new(with_checker(&checker));
        let threads: Vec<_> = [0, 1]
            .into_iter()
            .map(|room| {
                let checker = checker.clone();
                spawn_enter(&rooms, room, move |room| checker.occupy(room))
            })
            .collect();
        {
            let _guard = rooms.enter(0);
            checker.occupy(0);
        }
        for t in threads {
            t.join().unwrap();
        }
        checker.check_log();
        assert_idle(&rooms);
    });
}

/// Spins until `n` threads are registered in the wait queues.
fn until_waiting(rooms: &Rooms, n: usize) {
    while rooms.waiters.lock().total < n {
        thread::yield_now();
    }
}

/// Rooms 1 and 2 wait while room 0 is held: leaving room 0 opens room 1 (round-robin
/// from 0), whose last occupant opens room 2. Both are woken (no lost wake-up) and
/// only when their room opens (no futile wake-up).
#[test]
fn loom_round_robin_hand_off() {
    loom::model(|| {
        let (rooms, order) = (Arc::new(Rooms::new(3)), Arc::default());
        let held = rooms.enter(0);
        let threads: Vec<_> = [2, 1]
            .into_iter()
            .map(|room| spawn_enter(&rooms, room, log_into(&order)))
            .collect();
        until_waiting(&rooms, 2);
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock(), [1, 2]);
        assert_idle(&rooms);
        assert_eq!(rooms.waiters.lock().stats.wakeups, 2);
    });
}

/// Once someone waits for room 1, arrivals to the open room 0 wait too, and enter only
/// after room 1 had its turn: bounded bypass.
#[test]
fn loom_no_bypass_once_waiting() {
    loom::model(|| {
        let (rooms, order) = (Arc::new(Rooms::new(2)), Arc::default());
        let held = rooms.enter(0);
        let other = spawn_enter(&rooms, 1, log_into(&order));
        until_waiting(&rooms, 1);
        assert!(rooms.try_enter(0).is_none());
        let same = spawn_enter(&rooms, 0, log_into(&order));
        drop(held);
        other.join().unwrap();
        same.join().unwrap();
        assert_eq!(*order.lock(), [1, 0]);
        assert_idle(&rooms);
    });
}

/// A waiter for room 1 gives up (its deadline fires at any point after it registered)
/// while room 0 is held and another thread queues behind it for room 0. Whether it was
/// admitted at that moment or not, nothing is left behind and nobody is stranded.
#[test]
fn loom_timeout_leaves_no_trace() {
    loom::model(|| {
        let checker = Arc::new(Checker::default());
        let rooms = Arc::new(with_checker(&checker));
        let held = rooms.enter(0);
        let quitter = {
            let (rooms, checker) = (rooms.clone(), checker.clone());
            thread::spawn(move || {
                let result = rooms.enter_slow(1, |_, guard| {
                    // Let the world move, then report the deadline as passed.
                    crate::loom::sync::unlocked(&rooms.waiters, guard, || ());
                    true
                });
                if let Some(_guard) = result {
                    checker.occupy(1);
                }
            })
        };
        let queued = {
            let checker = checker.clone();
            spawn_enter(&rooms, 0, move |room| checker.occupy(room))
        };
        checker.occupy(0);
        drop(held);
        quitter.join().unwrap();
        queued.join().unwrap();
        checker.check_log();
        assert_idle(&rooms);
    });
}

/// While room 0 stays held, a waiter for room 1 gives up: the thread that queued behind
/// it for room 0 only waited because of it, and must now get in (it joins while room 0
/// is still held).
#[test]
fn loom_withdrawal_readmits_the_open_room() {
    loom::model(|| {
        let rooms = Arc::new(Rooms::new(2));
        let held = rooms.enter(0);
        let quitter = {
            let rooms = rooms.clone();
            thread::spawn(move || {
                let result = rooms.enter_slow(1, |_, guard| {
                    crate::loom::sync::unlocked(&rooms.waiters, guard, || ());
                    true
                });
                assert!(result.is_none(), "timed out");
            })
        };
        let queued = spawn_enter(&rooms, 0, drop);
        quitter.join().unwrap();
        queued.join().unwrap();
        drop(held);
        assert_idle(&rooms);
    });
}
