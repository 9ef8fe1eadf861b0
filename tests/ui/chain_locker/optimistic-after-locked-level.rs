use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

// Optimistic levels are the first ones, from the root.
chain_locker!(struct ClassLocker(shared Registry, optimistic Lecture, Class););

fn main() {}
