use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

fn main() {
    // One mistake, one error: the misspelled modifier; the `optimistic` level after it is not
    // blamed for following a locked level.
    let _locker = chain_locker!(optimstic Registry, optimistic Lecture, Class);
}
