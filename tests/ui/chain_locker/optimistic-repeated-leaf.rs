use chainlock::chain_locker;

struct Volume;
struct Dir;

// A descent ends holding its leaf: a repeated leaf is locked, not read.
chain_locker!(struct ToDir(optimistic Volume, optimistic Dir*););

fn main() {}
