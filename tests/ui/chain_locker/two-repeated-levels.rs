use chainlock::chain_locker;

struct Volume;
struct Dir;
struct File;

chain_locker! {
    // Only one level of a chain can repeat a run-time number of times.
    struct Twice(Volume*, Dir*, File);
}

fn main() {}
