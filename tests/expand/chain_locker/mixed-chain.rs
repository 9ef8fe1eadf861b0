use chainlock::chain_locker;

struct Volume;
struct Dir;
struct File;

chain_locker! {
    /// volume → directory* → file: the directories walked by `chainlock::walk::Walker`.
    struct Open(shared Volume, shared Dir*, File);
}

fn main() {}
