use chainlock::ChainNode;
#[chain(closed = is_full)]
struct Class<T> {
    capacity: usize,
    students: Vec<T>,
}
const _: () = {
    #[automatically_derived]
    impl<T> ::chainlock::ChainNode for Class<T> {
        #[inline]
        fn is_closed(&self) -> ::chainlock::__private::bool {
            let closed: ::chainlock::__private::bool = Self::is_full(self);
            closed
        }
    }
};
impl<T> Class<T> {
    fn is_full(&self) -> bool {
        self.students.len() >= self.capacity
    }
}
