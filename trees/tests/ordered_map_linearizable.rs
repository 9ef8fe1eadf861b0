//! A linearizability check of `OrderedMap` under 8 threads (Wing & Gong's search, per key:
//! a map is linearizable exactly when each key's history is, since every operation touches
//! one key). Each thread runs inserts, gets and removes on a few watched keys, with unique
//! values, while inserts of other keys split nodes around them; every call is stamped with a
//! global clock at invocation and response. Also with restarts injected at the leaves.

use chainlock_trees::{OrderedMap, Rng};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(u64),
    Get,
    Remove,
}

/// One call: what, when (clock ticks at invocation and response) and what it returned.
#[derive(Clone, Copy, Debug)]
struct Call {
    op: Op,
    result: Option<u64>,
    invoked: u64,
    returned: u64,
}

/// Applies `op` to the register's state; the result it must give and the next state.
fn apply(state: Option<u64>, op: Op) -> (Option<u64>, Option<u64>) {
    match op {
        Op::Insert(value) => (state, Some(value)),
        Op::Get => (state, state),
        Op::Remove => (state, None),
    }
}

/// Whether the calls on one key (at most 128) can be ordered, each at a point between its
/// invocation and its response, so that every result is the sequential one.
fn linearizable(calls: &[Call], initial: Option<u64>) -> bool {
    assert!(calls.len() <= 128);
    let mut seen = HashSet::new();
    search(calls, 0, initial, &mut seen)
}

fn search(
    calls: &[Call],
    done: u128,
    state: Option<u64>,
    seen: &mut HashSet<(u128, Option<u64>)>,
) -> bool {
    if done.count_ones() as usize == calls.len() {
        return true;
    }
    if !seen.insert((done, state)) {
        return false;
    }
    // A call may go next if no pending call returned before it was invoked.
    let pending = |index: usize| done & (1 << index) == 0;
    let first_return = (0..calls.len())
        .filter(|&i| pending(i))
        .map(|i| calls[i].returned)
        .min()
        .expect("a pending call");
    (0..calls.len()).filter(|&i| pending(i)).any(|i| {
        let call = calls[i];
        if call.invoked > first_return {
            return false;
        }
        let (result, next) = apply(state, call.op);
        result == call.result && search(calls, done | (1 << i), next, seen)
    })
}

fn run(inject_at_leaves: bool, seed: u64) {
    const THREADS: u64 = 8;
    const WATCHED: u64 = 6;
    const CALLS_PER_THREAD: u64 = 64;
    let map = OrderedMap::with_node_capacity(3);
    // The watched keys are 1, 1001, 2001, …; the even keys around them fill the tree.
    for key in (0..WATCHED * 1_000).step_by(4) {
        map.insert(key, 0);
    }
    if inject_at_leaves {
        map.inject_restarts(0, 3);
    }
    let clock = AtomicU64::new(0);
    let histories: Vec<Vec<(u64, Call)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (map, clock) = (&map, &clock);
                scope.spawn(move || {
                    let mut rng = Rng::new(seed * 100 + thread);
                    let mut calls = Vec::new();
                    for step in 0..CALLS_PER_THREAD {
                        // Fresh keys next to the watched ones: splits around them.
                        let filler = rng.below(WATCHED * 1_000) * 4 + 2;
                        map.insert(filler, 0);
                        let key = rng.below(WATCHED) * 1_000 + 1;
                        let op = match rng.below(10) {
                            0..4 => Op::Insert((thread << 32) | (step + 1)),
                            4..8 => Op::Get,
                            _ => Op::Remove,
                        };
                        let invoked = clock.fetch_add(1, Ordering::SeqCst);
                        let result = match op {
                            Op::Insert(value) => map.insert(key, value),
                            Op::Get => map.get(&key),
                            Op::Remove => map.remove(&key),
                        };
                        let returned = clock.fetch_add(1, Ordering::SeqCst);
                        calls.push((
                            key,
                            Call {
                                op,
                                result,
                                invoked,
                                returned,
                            },
                        ));
                    }
                    calls
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut by_key: HashMap<u64, Vec<Call>> = HashMap::new();
    for (key, call) in histories.into_iter().flatten() {
        by_key.entry(key).or_default().push(call);
    }
    assert_eq!(by_key.len() as u64, WATCHED);
    for (key, calls) in &by_key {
        assert!(
            linearizable(calls, None),
            "the history of key {key} is not linearizable: {calls:?}"
        );
    }
    map.inject_restarts(0, 0);
    map.check().unwrap();
}

#[test]
fn eight_threads_histories_are_linearizable() {
    for seed in 0..4 {
        run(false, seed);
    }
}

#[test]
fn eight_threads_histories_are_linearizable_with_restarts_injected() {
    for seed in 0..2 {
        run(true, seed);
    }
}

/// The checker itself: a stale read after a completed write is refused.
#[test]
fn the_checker_refuses_a_stale_read() {
    let calls = [
        Call {
            op: Op::Insert(1),
            result: None,
            invoked: 0,
            returned: 1,
        },
        Call {
            op: Op::Insert(2),
            result: Some(1),
            invoked: 2,
            returned: 3,
        },
        Call {
            op: Op::Get,
            result: Some(1),
            invoked: 4,
            returned: 5,
        },
    ];
    assert!(!linearizable(&calls, None));
    let overlapping = [
        Call {
            op: Op::Insert(1),
            result: None,
            invoked: 0,
            returned: 1,
        },
        Call {
            op: Op::Insert(2),
            result: Some(1),
            invoked: 2,
            returned: 5,
        },
        Call {
            op: Op::Get,
            result: Some(1),
            invoked: 3,
            returned: 4,
        },
    ];
    assert!(
        linearizable(&overlapping, None),
        "the read may come before the overlapping write"
    );
}
