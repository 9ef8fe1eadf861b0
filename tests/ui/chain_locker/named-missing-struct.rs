use chainlock::chain_locker;

struct Registry;
struct Lecture;

chain_locker!(pub ClassLocker(Registry, Lecture););

fn main() {}
