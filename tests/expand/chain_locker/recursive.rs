use chainlock::chain_locker;

struct Dir;
type D = Dir;

chain_locker! {
    /// Latch crabbing down one recursive node type, spelled two ways: every level past the
    /// root is the projection `LockOf<__L0, Parent, Child>` in the key-path methods.
    struct Crab(shared Dir, shared D, Dir);
}

fn main() {}
