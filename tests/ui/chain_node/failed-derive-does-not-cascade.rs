use chainlock::parking_lot::Mutex;
use chainlock::{ChainNode, chain_locker};
use std::sync::Arc;

#[derive(ChainNode)]
#[chain(closd = is_cancelled)]
struct Lecture {
    cancelled: bool,
}

fn main() {
    // The derive failed, but `Lecture` still implements `ChainNode`: this line adds no error.
    let lecture = Arc::new(Mutex::new(Lecture { cancelled: false }));
    let _ = chain_locker!(Lecture).run(&lecture, |lecture| lecture.cancelled);
}
