use chainlock::chain_locker;

struct Volume;
struct Dir;
struct File;

// The optimistic levels of a chain with a repeated level reach down to it.
chain_locker!(struct Open(optimistic Volume, shared Dir*, File););

fn main() {}
