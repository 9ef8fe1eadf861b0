//! The stores of an optimistic descent classified by address (docs/benchmarks.md, "The
//! optimistic walk: writes above the leaf"): prints the address range of every node and
//! children buffer on the path, then makes `CALLS` descents of depth `DEPTH` between two
//! stores to a marker; `classify.py` sorts the stores `valgrind --tool=lackey` traced
//! between the markers. The node type and step are `benches/walk.rs`'s `walk_optimistic`.
//!
//! ```sh
//! cd scripts/walk_stores && cargo build --release
//! DEPTH=16 CALLS=100 valgrind --tool=lackey --trace-mem=yes --log-file=/tmp/lk.txt \
//!   target/release/walk-stores > /tmp/lk.out
//! python3 classify.py /tmp/lk.out /tmp/lk.txt 100
//! ```
use chainlock::ChainNode;
use chainlock::hybrid::HybridLock;
use chainlock::walk::{Exclusive, Step, Walker};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use chainlock::chain::EpochVec;

static MARK: AtomicU64 = AtomicU64::new(0);
const FANOUT: usize = 4;

struct Node {
    value: AtomicU64,
    children: EpochVec<HybridLock<Node>>,
}
impl ChainNode for Node {}

fn tree(depth: usize) -> Vec<Arc<HybridLock<Node>>> {
    let mut path = vec![Arc::new(HybridLock::new(Node {
        value: AtomicU64::new(0),
        children: Vec::new().into(),
    }))];
    for _ in 1..depth {
        let child = path[0].clone();
        path.insert(
            0,
            Arc::new(HybridLock::new(Node {
                value: AtomicU64::new(0),
                children: vec![child; FANOUT].into(),
            })),
        );
    }
    path
}

#[inline(never)]
fn walk(root: &Arc<HybridLock<Node>>, keys: &[usize]) -> u64 {
    let found = Walker::new()
        .descend_optimistic(root, Exclusive, |node, depth, guard| {
            match keys.get(depth) {
                None => Step::Here,
                Some(key) => node
                    .children
                    .get(*key, guard)
                    .map_or(Step::Absent, Step::Descend),
            }
        })
        .unwrap();
    found.target.value.fetch_add(1, SeqCst)
}

fn main() {
    let depth: usize = std::env::var("DEPTH").unwrap().parse().unwrap();
    let calls: u64 = std::env::var("CALLS").map_or(100, |c| c.parse().unwrap());
    let path = tree(depth);
    let keys = vec![1; depth - 1];
    let header = 2 * std::mem::size_of::<usize>();
    println!("mark {:x}", std::ptr::from_ref(&MARK).addr());
    let local = 0_u8;
    println!("stack {:x}", std::ptr::from_ref(&local).addr());
    for (level, node) in path.iter().enumerate() {
        let start = Arc::as_ptr(node).addr() - header;
        let end = Arc::as_ptr(node).addr() + std::mem::size_of::<HybridLock<Node>>();
        println!("node {level} {start:x} {end:x}");
        let (ptr, len) = {
            let guard = chainlock::chain::EpochGuard::pin();
            let slice = node.read().children.as_slice(&guard).as_ptr_range();
            (slice.start.addr(), slice.end.addr() - slice.start.addr())
        };
        if len > 0 {
            println!("buf {level} {ptr:x} {:x}", ptr + len);
        }
    }
    for _ in 0..1000 {
        black_box(walk(black_box(&path[0]), black_box(&keys)));
    }
    MARK.store(1, SeqCst);
    for _ in 0..calls {
        black_box(walk(black_box(&path[0]), black_box(&keys)));
    }
    MARK.store(2, SeqCst);
}
