use chainlock::chain_locker;

struct Volume;
struct Dir;

chain_locker! {
    struct Walk(Volume, upgradable Dir*);
}

fn main() {}
