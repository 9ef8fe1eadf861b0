use chainlock::chain_locker;

struct Registry;
struct Lecture;
struct Class;

fn main() {
    let _locker = chain_locker!(sharde Registry, shared shared Lecture, impl Sized, Class);
}
