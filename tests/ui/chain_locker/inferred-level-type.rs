use chainlock::chain_locker;

struct Lecture;

fn main() {
    let _locker = chain_locker!(_, Lecture);
}
