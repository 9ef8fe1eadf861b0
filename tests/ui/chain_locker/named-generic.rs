use chainlock::chain_locker;

struct Node<T>(T);

chain_locker!(pub struct NodeLocker<T>(Node<T>, Node<T>););

fn main() {}
