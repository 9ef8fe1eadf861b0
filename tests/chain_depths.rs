//! Generated lockers of every depth from 1 to 8 and of depth 32: the hand-over-hand order
//! of every acquisition and release, early exit at each stage and a panic at each stage.

use chainlock::chain::Absence;
use chainlock::{Exit, chain_locker};
use chainlock_suite::logged::{Event, LoggedMutex, id_of, take_log};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// One node per level; `value` is the node's level.
struct Node {
    value: usize,
    child: Option<Arc<LoggedMutex<Node>>>,
}

/// A straight chain of `depth` nodes, root first.
fn build(depth: usize) -> Vec<Arc<LoggedMutex<Node>>> {
    let mut levels: Vec<Arc<LoggedMutex<Node>>> = Vec::new();
    for value in (0..depth).rev() {
        let child = levels.last().cloned();
        levels.push(Arc::new(LoggedMutex::new(Node { value, child })));
    }
    levels.reverse();
    levels
}

/// The log of a descent that locked levels `0..=last` hand over hand and then released
/// `last`: `L0, L1, U0, L2, U1, ..., U(last)`.
fn hand_over_hand(levels: &[Arc<LoggedMutex<Node>>], last: usize) -> Vec<Event> {
    let id = |level: usize| id_of(&levels[level]);
    let mut log = vec![Event::Locked(id(0))];
    for level in 1..=last {
        log.push(Event::Locked(id(level)));
        log.push(Event::Unlocked(id(level - 1)));
    }
    log.push(Event::Unlocked(id(last)));
    log
}

fn assert_all_unlocked(levels: &[Arc<LoggedMutex<Node>>]) {
    for (level, lock) in levels.iter().enumerate() {
        assert!(!lock.is_locked(), "level {level} is still locked");
    }
}

/// Tests one depth: `$($level)*` is the chain, one `Node` per level.
macro_rules! depth_test {
    ($name:ident: $root:ident $($level:ident)*) => {
        #[test]
        fn $name() {
            let depth = 1 $(+ { stringify!($level); 1 })*;
            let levels = build(depth);
            let locker = chain_locker!($root $(, $level)*);

            // Completion: the last stage sees the leaf; the log is strictly hand over hand.
            take_log();
            let value = locker.run(&levels[0], $({ stringify!($level); |node: &mut Node| node.child.clone() },)* |leaf| leaf.value);
            assert_eq!(value, Ok(depth - 1));
            assert_eq!(take_log(), hand_over_hand(&levels, depth - 1));
            assert_all_unlocked(&levels);

            // Guard descent: only the leaf is still locked while the guard lives.
            {
                let leaf = locker.descend(&levels[0], $({ stringify!($level); |node: &mut Node| node.child.clone() },)*).unwrap();
                assert_eq!(leaf.value, depth - 1);
                for (level, lock) in levels.iter().enumerate() {
                    assert_eq!(lock.is_locked(), level == depth - 1, "level {level}");
                }
            }
            assert_all_unlocked(&levels);
            take_log();

            // Early exit at each stage: `Exit::Absent` names it; everything is released.
            for exit_at in 0..depth - 1 {
                let outcome = locker.run(&levels[0], $({ stringify!($level); |node: &mut Node| if node.value == exit_at { None } else { node.child.clone() } },)* |leaf| leaf.value);
                assert_eq!(outcome, Err(Exit::Absent { level: exit_at + 1, cause: Absence::Missing }));
                assert_eq!(take_log(), hand_over_hand(&levels, exit_at), "exit at stage {exit_at}");
                assert_all_unlocked(&levels);
            }

            // A panic at each stage, the last included: every held lock is released
            // before the panic reaches the caller, and every lock can be taken again.
            for panic_at in 0..depth {
                let result = catch_unwind(AssertUnwindSafe(|| {
                    locker.run(
                        &levels[0],
                        $({ stringify!($level); |node: &mut Node| { assert_ne!(node.value, panic_at, "injected panic"); node.child.clone() } },)*
                        |leaf| assert_ne!(leaf.value, panic_at, "injected panic"),
                    )
                }));
                assert!(result.is_err(), "stage {panic_at} did not panic");
                assert_eq!(take_log(), hand_over_hand(&levels, panic_at), "panic at stage {panic_at}");
                for lock in &levels {
                    drop(lock.try_lock().expect("a lock stayed held after a panic"));
                }
                take_log();
            }
        }
    };
}

depth_test!(depth_1: Node);
depth_test!(depth_2: Node Node);
depth_test!(depth_3: Node Node Node);
depth_test!(depth_4: Node Node Node Node);
depth_test!(depth_5: Node Node Node Node Node);
depth_test!(depth_6: Node Node Node Node Node Node);
depth_test!(depth_7: Node Node Node Node Node Node Node);
depth_test!(depth_8: Node Node Node Node Node Node Node Node);
depth_test!(depth_32:
    Node Node Node Node Node Node Node Node
    Node Node Node Node Node Node Node Node
    Node Node Node Node Node Node Node Node
    Node Node Node Node Node Node Node Node);
