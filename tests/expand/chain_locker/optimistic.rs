use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

chain_locker! {
    /// The registry and the lecture read optimistically, the class locked.
    struct ToClass(optimistic Registry, optimistic Lecture, Class);
}

fn main() {}
