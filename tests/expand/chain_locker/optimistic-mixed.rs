use chainlock::chain_locker;

struct Volume;
struct Dir;
struct File;

chain_locker! {
    /// The volume and the directories read optimistically, the file locked.
    struct Open(optimistic Volume, optimistic Dir*, File);
}

fn main() {}
