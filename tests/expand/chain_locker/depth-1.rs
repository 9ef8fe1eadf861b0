use chainlock::chain_locker;

struct Registry;

chain_locker!(pub struct RegistryLocker(Registry););
