use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

// One missing comma between two `optimistic` levels: one error, at the type before it (not
// also a "duplicate `optimistic` modifier", which would be the next level's).
chain_locker!(struct ToClass(optimistic Registry optimistic Lecture, Class););

fn main() {}
