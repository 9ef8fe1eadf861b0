use chainlock::chain_locker;

chain_locker!(pub struct ClassLocker(););

fn main() {}
