use chainlock::ChainNode;
use std::sync::Arc;

struct Student;

#[derive(ChainNode)]
struct Class {
    #[chain(children)]
    students: Arc<Vec<Student>>,
}

fn main() {}
