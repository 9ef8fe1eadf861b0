use chainlock::ChainNode;

#[derive(ChainNode)]
#[chain(closed = is_full)]
struct Class<T> {
    capacity: usize,
    students: Vec<T>,
}

impl<T> Class<T> {
    fn is_full(&self) -> bool {
        self.students.len() >= self.capacity
    }
}
