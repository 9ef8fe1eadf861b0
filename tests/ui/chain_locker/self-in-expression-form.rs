use chainlock::chain_locker;

fn main() {
    let _locker = chain_locker!(Self);
}
