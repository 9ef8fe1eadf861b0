use chainlock::chain_locker;

struct Registry;

fn main() {
    let _locker = chain_locker!(Arc<Mutex<Registry>>);
}
