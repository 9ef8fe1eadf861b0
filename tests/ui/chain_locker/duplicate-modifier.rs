use chainlock::chain_locker;

struct Registry;
struct Lecture;

fn main() {
    let _locker = chain_locker!(shared shared Registry, Lecture);
}
