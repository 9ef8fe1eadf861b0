use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

chain_locker! {
    /// Registry → lecture → class, exclusive at every level.
    pub struct ClassLocker(Registry, Lecture, Class);
}
