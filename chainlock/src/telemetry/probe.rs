//! The hooks the locks call (begin → waiting → acquired / gave up → released), with the
//! feature on. Their twins without the feature are in `off.rs`.
//!
//! The hooks are `#[inline(always)]` down to the first branch on "recording?": with
//! telemetry off at run time an acquisition costs one relaxed load and a branch, a release
//! a null check (measured in `docs/telemetry.md`); the work is out of line.
#![allow(clippy::inline_always)]

use std::cell::Cell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::class::{Class, Found, HotKeys};
use super::live::{self, LockId};
use super::{Config, Cycle, Live, LockName, Report};

// The switches are plain `std` atomics, also under loom: statics outlive a loom model (the
// loom models check the statistics themselves, `class.rs` and `histogram.rs`).

/// Whether recording is on: the one load of an acquire while telemetry is off at run time.
static ENABLED: AtomicBool = AtomicBool::new(false);
static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(1);
/// The slow-wait threshold in nanoseconds; 0: no report.
static SLOW_WAIT: AtomicU64 = AtomicU64::new(0);
static HOT_KEYS: AtomicUsize = AtomicUsize::new(32);

/// Every class ever made, weakly: a class lives as long as its probe (and the guards that
/// record into it). Pruned of the dead ones whenever it grows past twice its live size.
static REGISTRY: Mutex<Vec<Weak<Class>>> = Mutex::new(Vec::new());
static REGISTRY_LIVE: AtomicUsize = AtomicUsize::new(0);

pub(super) fn enable(config: &Config) {
    SAMPLE_EVERY.store(config.sample_every, Ordering::Relaxed);
    SLOW_WAIT.store(
        config.slow_wait.map_or(0, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
        }),
        Ordering::Relaxed,
    );
    HOT_KEYS.store(config.hot_keys, Ordering::Relaxed);
    ENABLED.store(true, Ordering::Relaxed);
}

pub(super) fn disable() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// Whether telemetry records now: a hot loop that asks once can run an instantiation
/// without hooks (a walk does).
#[inline(always)]
pub(crate) fn recording() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub(super) fn sample_every() -> u32 {
    SAMPLE_EVERY.load(Ordering::Relaxed)
}

fn classes() -> Vec<Arc<Class>> {
    REGISTRY
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|class| !class.retired.load(Ordering::Relaxed))
        .collect()
}

fn register(class: &Arc<Class>) {
    let mut registry = REGISTRY.lock();
    if registry.len() >= 2 * REGISTRY_LIVE.load(Ordering::Relaxed).max(64) {
        registry.retain(|weak| weak.strong_count() > 0);
        REGISTRY_LIVE.store(registry.len(), Ordering::Relaxed);
    }
    registry.push(Arc::downgrade(class));
}

pub(super) fn reset() {
    for class in classes() {
        class.reset();
    }
    live::forget_cycles();
}

pub(super) fn report() -> Report {
    let mut locks: Vec<_> = classes()
        .iter()
        .filter(|class| class.is_used())
        .map(|class| class.stats())
        .collect();
    locks.sort_by(|a, b| a.lock.cmp(&b.lock));
    Report {
        locks,
        sample_every: sample_every(),
    }
}

pub(super) fn live() -> Live {
    live::snapshot()
}

pub(super) fn cycles() -> Vec<Cycle> {
    live::cycles()
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The label of a named-lock instance: the location of its constructor's caller, or a name
/// the user gave.
#[derive(Clone, Debug)]
pub(crate) enum Label {
    /// Where it was made.
    Site(&'static Location<'static>),
    /// What the user called it.
    Named(Arc<str>),
}

impl Label {
    /// The caller's location (`#[track_caller]`: the constructor's caller when the
    /// constructor is `#[track_caller]` too).
    #[track_caller]
    pub(crate) fn caller() -> Self {
        Self::Site(Location::caller())
    }
    /// A name given by the user.
    pub(crate) fn named(name: &str) -> Self {
        Self::Named(name.into())
    }
}

/// What lock names a probe builds: the class of locks it records.
#[derive(Debug)]
pub(crate) enum ProbeKind {
    /// A level of a chain locker (key: `KeyRef::None`).
    Level {
        /// The locker.
        locker: &'static str,
        /// The level.
        level: usize,
        /// The level's name.
        name: &'static str,
    },
    /// A walk (key: `KeyRef::Index(depth)`).
    Walk {
        /// The walk's label.
        walk: &'static str,
    },
    /// A keyed manager (key: `KeyRef::Hash(hash, describe)`).
    Keyed {
        /// Its label.
        manager: Label,
    },
    /// A stripe set (key: `KeyRef::Index(stripe)`).
    Striped {
        /// Its label.
        set: Label,
    },
    /// A set of rooms (key: `KeyRef::Index(room)`).
    Rooms {
        /// Its label.
        rooms: Label,
    },
    /// A distributed backend (key: `KeyRef::Hash(hash, name)`).
    #[cfg(feature = "distributed")]
    Distributed {
        /// The backend.
        backend: &'static str,
    },
}

/// Which lock within a probe's class.
#[derive(Clone, Copy)]
pub(crate) enum KeyRef<'a> {
    /// The probe's one lock.
    None,
    /// A lock by index (stripe, room, depth).
    Index(usize),
    /// A lock by the hash of its key, with a way to name it (called only when the key
    /// becomes one of the hot keys).
    Hash(u64, &'a dyn Fn() -> String),
}

/// Identity of a concrete lock (an entry id, an `Arc` pointer, a stripe index): waiters
/// and holders of the same `LockAddr` within a probe are on the same lock.
pub(crate) type LockAddr = usize;

/// The recorder of one lock class instance (a manager, a stripe set, a room set, a
/// locker level): cheap to make (`const`), allocates its classes on first use while enabled.
pub(crate) struct Probe {
    kind: ProbeKind,
    classes: OnceLock<Classes>,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// The classes of a probe, by the kind of key.
enum Classes {
    One(Arc<Class>),
    /// Stripes, rooms, depths: the first [`DIRECT`] by index without a lock.
    Indexed {
        label: Arc<str>,
        direct: Box<[OnceLock<Arc<Class>>]>,
        more: Mutex<HashMap<usize, Arc<Class>>>,
    },
    /// Keys and names by hash: the hot ones, the rest summed.
    Hashed(Mutex<HotKeys>),
}

/// Indexed classes reached without a lock.
const DIRECT: usize = 64;

fn label_text(label: &Label) -> Arc<str> {
    match label {
        Label::Site(site) => format!("{}:{}", site.file(), site.line()).into(),
        Label::Named(name) => name.clone(),
    }
}

impl Probe {
    /// A probe for the locks `kind` names.
    pub(crate) const fn new(kind: ProbeKind) -> Self {
        Self {
            kind,
            classes: OnceLock::new(),
        }
    }

    /// Renames the probe's class (a manager's `telemetry_name`); only before its first
    /// recording (the statistics already recorded keep their name).
    pub(crate) fn rename(&mut self, label: Label) {
        match &mut self.kind {
            ProbeKind::Keyed { manager: old }
            | ProbeKind::Striped { set: old }
            | ProbeKind::Rooms { rooms: old } => *old = label,
            ProbeKind::Level { .. } | ProbeKind::Walk { .. } => {}
            #[cfg(feature = "distributed")]
            ProbeKind::Distributed { .. } => {}
        }
        self.classes = OnceLock::new();
    }

    fn classes(&self) -> &Classes {
        self.classes.get_or_init(|| {
            let indexed = |label: Arc<str>| Classes::Indexed {
                label,
                direct: (0..DIRECT).map(|_| OnceLock::new()).collect(),
                more: Mutex::new(HashMap::new()),
            };
            match &self.kind {
                ProbeKind::Level {
                    locker,
                    level,
                    name,
                } => {
                    let class = Arc::new(Class::new(LockName::Level {
                        locker,
                        level: *level,
                        name,
                    }));
                    register(&class);
                    Classes::One(class)
                }
                ProbeKind::Walk { walk } => indexed(Arc::from(*walk)),
                ProbeKind::Striped { set: label } | ProbeKind::Rooms { rooms: label } => {
                    indexed(label_text(label))
                }
                ProbeKind::Keyed { manager } => {
                    let hot = HotKeys::new(label_text(manager), None);
                    register(&hot.other);
                    Classes::Hashed(Mutex::new(hot))
                }
                #[cfg(feature = "distributed")]
                ProbeKind::Distributed { backend } => {
                    let hot = HotKeys::new(Arc::from(*backend), Some(backend));
                    register(&hot.other);
                    Classes::Hashed(Mutex::new(hot))
                }
            }
        })
    }

    fn name_at(&self, label: &Arc<str>, index: usize) -> LockName {
        match &self.kind {
            ProbeKind::Walk { walk } => LockName::Depth { walk, depth: index },
            ProbeKind::Rooms { .. } => LockName::Room {
                rooms: label.clone(),
                room: index.to_string().into(),
            },
            _ => LockName::Stripe {
                set: label.clone(),
                index,
            },
        }
    }

    /// The class of the lock `key` names; `weight` is how many acquisitions the lookup
    /// stands for (the hot-key table counts by it).
    fn class_of(&self, key: KeyRef<'_>, weight: u64) -> Arc<Class> {
        match (self.classes(), key) {
            (Classes::One(class), _) => class.clone(),
            (
                Classes::Indexed {
                    label,
                    direct,
                    more,
                },
                key,
            ) => {
                let index = match key {
                    KeyRef::Index(index) => index,
                    KeyRef::None | KeyRef::Hash(..) => 0,
                };
                let make = || {
                    let class = Arc::new(Class::new(self.name_at(label, index)));
                    register(&class);
                    class
                };
                match direct.get(index) {
                    Some(slot) => slot.get_or_init(make).clone(),
                    None => more.lock().entry(index).or_insert_with(make).clone(),
                }
            }
            (Classes::Hashed(hot), key) => {
                let capacity = HOT_KEYS.load(Ordering::Relaxed);
                match key {
                    KeyRef::Hash(hash, describe) => {
                        hot_class(hot, hash, capacity, weight, describe, register)
                    }
                    KeyRef::Index(index) => hot_class(
                        hot,
                        index as u64,
                        capacity,
                        weight,
                        &|| index.to_string(),
                        register,
                    ),
                    KeyRef::None => hot_class(hot, 0, capacity, weight, &|| "0".into(), register),
                }
            }
        }
    }

    /// An acquisition of the lock `key` begins: the first thing in an acquire, at the
    /// caller's site (`#[track_caller]`). Disabled: one relaxed load and a branch; enabled
    /// and not sampled: that and this thread's countdown.
    #[track_caller]
    #[inline(always)]
    pub(crate) fn begin(&self, key: KeyRef<'_>) -> Attempt<'_> {
        if self.skips() {
            return Attempt::off();
        }
        self.begin_unskipped(key, Location::caller())
    }

    /// An acquisition the sampler did not skip begins: if sampled, its class and its
    /// record.
    #[cold]
    #[inline(never)]
    fn begin_unskipped(&self, key: KeyRef<'_>, site: &'static Location<'static>) -> Attempt<'_> {
        if !sampled_now() {
            return Attempt::off();
        }
        self.begin_sampled(key, site)
    }

    /// A sampled acquisition begins: its class, its record.
    fn begin_sampled(&self, key: KeyRef<'_>, site: &'static Location<'static>) -> Attempt<'_> {
        self.attempt(key, Sampled::start(site))
    }

    /// Whether this acquisition is surely not sampled: telemetry not enabled (one relaxed
    /// load and a branch) or enabled and this thread's countdown not at its end (a
    /// thread-local decrement). The hot path of an acquire asks only this: `true`, the lock
    /// and nothing else; `false`, a path out of line that asks [`is_sampled`] again (a
    /// thread's first acquisition draws its place in its first interval there) and then
    /// records, or takes the lock as the hot path would. Nothing the hot path holds stays
    /// live across that call but what it returns, so the hot path keeps the registers of a
    /// build without telemetry.
    ///
    /// [`is_sampled`]: Self::is_sampled
    #[inline(always)]
    #[expect(
        clippy::unused_self,
        reason = "the sampler is per thread, not per probe; call sites ask the probe they record into"
    )]
    pub(crate) fn skips(&self) -> bool {
        !ENABLED.load(Ordering::Relaxed) || countdown_skips()
    }

    /// Whether this acquisition is sampled: for a lock that can be tried, which then starts
    /// the sample ([`Sampled::start`]), tries the lock, and makes the record
    /// ([`attempt`](Self::attempt)) only after that first try, so that the record's set-up
    /// does not delay the try (on an unfair lock, a delayed try loses the lock to a woken
    /// waiter more often). Disabled or not sampled: as [`begin`](Self::begin).
    #[inline(always)]
    #[expect(
        clippy::unused_self,
        reason = "the sampler is per thread, not per probe; call sites ask the probe they record into"
    )]
    pub(crate) fn is_sampled(&self) -> bool {
        ENABLED.load(Ordering::Relaxed) && sampled_now()
    }

    /// The record of the sampled acquisition `sampled` of the lock `key`.
    #[cold]
    #[inline(never)]
    pub(crate) fn attempt(&self, key: KeyRef<'_>, sampled: Sampled) -> Attempt<'_> {
        let class = self.class_of(key, sampled.weight);
        Attempt {
            active: ManuallyDrop::new(Some(Box::new(Sample {
                class,
                site: sampled.site,
                wait: None,
                hold: None,
                task: false,
                weight: sampled.weight,
            }))),
            _probe: PhantomData,
        }
    }
}

/// A sampled acquisition whose record is not made yet (from [`Probe::is_sampled`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sampled {
    site: &'static Location<'static>,
    weight: u64,
}

impl Sampled {
    /// A sampled acquisition ([`Probe::is_sampled`] or [`Probe::begin`]) at `site`: if it
    /// takes its lock without queueing, it waited nothing (no clock read); if not, its wait
    /// is timed from [`Attempt::waiting`].
    #[inline]
    pub(crate) fn start(site: &'static Location<'static>) -> Self {
        Self {
            site,
            weight: u64::from(next_interval()),
        }
    }
}

std::thread_local! {
    /// Acquisitions until this thread's next sampled one (0: the next one is).
    static COUNTDOWN: Cell<u32> = const { Cell::new(0) };
    /// This thread's generator of sampling intervals (0: not seeded yet).
    static RANDOM: Cell<u64> = const { Cell::new(0) };
}

/// Whether none of this thread's next `n` acquisitions is sampled (the countdown ends after
/// them; it is moved past them if so): a generated chain-locker call of `n` levels asks this
/// once instead of each level asking [`Probe::skips`]. Called while enabled.
#[inline(always)]
pub(crate) fn skips_all(n: u32) -> bool {
    COUNTDOWN
        .try_with(|countdown| {
            let left = countdown.get();
            let skips = left > n;
            if skips {
                countdown.set(left - n);
            }
            skips
        })
        .unwrap_or(true)
}

/// Whether this thread's countdown is not at its end (counted down if so): the acquisition
/// is not sampled. `false` when it is at its end or not drawn yet ([`sampled_now`] decides).
#[inline(always)]
fn countdown_skips() -> bool {
    skips_all(1)
}

/// Whether this acquisition is sampled: counts this thread's countdown down. Inlined into
/// every hook; a thread-local `Cell` without a destructor is one access relative to the
/// thread pointer.
#[inline(always)]
fn sampled_now() -> bool {
    COUNTDOWN
        .try_with(|countdown| {
            let left = countdown.get();
            if left > 1 {
                countdown.set(left - 1);
                false
            } else {
                left == 1 || first_draw(countdown)
            }
        })
        .unwrap_or(false)
}

/// A thread's first acquisition while enabled: its place in its first interval is drawn
/// too. (Sampling every thread's first acquisition biased the sample: threads started
/// together all contend at once, and each such sample counts for `n`.)
#[cold]
#[inline(never)]
fn first_draw(countdown: &Cell<u32>) -> bool {
    let left = draw_interval(SAMPLE_EVERY.load(Ordering::Relaxed).max(1));
    countdown.set(left);
    left == 1
}

/// After a sampled acquisition: draws the number of acquisitions until this thread's next
/// one and returns the weight of this one (the sampling rate in force). The interval is
/// uniform in `1..2n` (mean `n`), not `n` itself: a fixed period would alias with a loop
/// that acquires the same locks in a fixed order (with `n = 3`, a three-level chain would
/// only ever sample its first level), and the estimates (count × `n`) would be wrong.
fn next_interval() -> u32 {
    let rate = SAMPLE_EVERY.load(Ordering::Relaxed).max(1);
    let interval = draw_interval(rate);
    let _ = COUNTDOWN.try_with(|countdown| countdown.set(interval));
    rate
}

/// An interval uniform in `1..2 * rate` (1 for a rate of 1).
fn draw_interval(rate: u32) -> u32 {
    if rate == 1 {
        1
    } else {
        let draw = RANDOM
            .try_with(|random| {
                let mut state = random.get();
                if state == 0 {
                    state = seed();
                }
                // xorshift64*
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                random.set(state);
                state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32
            })
            .unwrap_or(0);
        let span = u64::from(rate) * 2 - 1;
        u32::try_from(1 + draw % span).unwrap_or(rate)
    }
}

/// A distinct, non-zero seed per thread (splitmix64 of a global sequence).
fn seed() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let mut z = NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// A [`Probe`] over the keys of type `K` of a keyed registry: names a hot key by its
/// `Debug` when the user opted in ([`key_debug`](Self::key_debug)), else by `#<hash>`.
pub(crate) struct KeyProbe<K: ?Sized> {
    probe: Probe,
    debug: Option<fn(&K) -> String>,
}

impl<K: ?Sized> std::fmt::Debug for KeyProbe<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.probe.fmt(f)
    }
}

impl<K: ?Sized> KeyProbe<K> {
    /// A probe for the keys of the class `kind` names.
    pub(crate) const fn new(kind: ProbeKind) -> Self {
        Self {
            probe: Probe::new(kind),
            debug: None,
        }
    }

    /// Renames the class (see [`Probe::rename`]).
    pub(crate) fn rename(&mut self, label: Label) {
        self.probe.rename(label);
    }

    /// Names hot keys by `debug` from now on.
    pub(crate) fn key_debug(&mut self, debug: fn(&K) -> String) {
        self.debug = Some(debug);
    }

    /// Whether this acquisition is surely not sampled (see [`Probe::skips`]).
    #[inline(always)]
    pub(crate) fn skips(&self) -> bool {
        self.probe.skips()
    }

    /// The out-of-line half of `with_attempt!` (in `engine/wait.rs`): `body` with `key`
    /// and the [`Attempt`] of an acquisition [`Probe::skips`] did not skip, recording if
    /// sampled; `hash` (the registry's hash of the key) is called only then.
    #[cold]
    #[inline(never)]
    pub(crate) fn with_attempt_unskipped<T>(
        &self,
        key: K,
        hash: impl FnOnce(&K) -> u64,
        site: &'static Location<'static>,
        body: impl FnOnce(K, Attempt<'_>) -> T,
    ) -> T
    where
        K: Sized,
    {
        let attempt = self.begin_unskipped(&key, hash, site);
        body(key, attempt)
    }

    /// An acquisition of `key` begins; `hash` (the registry's hash of the key) is called
    /// only for a sampled acquisition.
    #[track_caller]
    #[inline(always)]
    pub(crate) fn begin(&self, key: &K, hash: impl FnOnce(&K) -> u64) -> Attempt<'_> {
        if self.probe.skips() {
            return Attempt::off();
        }
        self.begin_unskipped(key, hash, Location::caller())
    }

    /// The begin of an acquisition [`skips`](Self::skips) did not skip, out of line: its
    /// attempt, recording if sampled (`hash` called only then).
    #[cold]
    #[inline(never)]
    pub(crate) fn begin_unskipped(
        &self,
        key: &K,
        hash: impl FnOnce(&K) -> u64,
        site: &'static Location<'static>,
    ) -> Attempt<'_> {
        if !sampled_now() {
            return Attempt::off();
        }
        self.begin_sampled(key, hash, site)
    }

    /// The record of a sampled acquisition of `key`.
    fn begin_sampled(
        &self,
        key: &K,
        hash: impl FnOnce(&K) -> u64,
        site: &'static Location<'static>,
    ) -> Attempt<'_> {
        let hash = hash(key);
        let describe = || match self.debug {
            Some(debug) => debug(key),
            None => format!("#{hash:016x}"),
        };
        self.probe
            .begin_sampled(KeyRef::Hash(hash, &describe), site)
    }
}

/// The class of a key of a keyed manager or distributed backend. The key's name is made
/// with the table unlocked: it is the user's `Debug`, which may itself lock (even a lock of
/// the same manager, whose acquisitions take this table).
fn hot_class(
    hot: &Mutex<HotKeys>,
    hash: u64,
    capacity: usize,
    weight: u64,
    describe: &dyn Fn() -> String,
    register: impl Fn(&Arc<Class>),
) -> Arc<Class> {
    let mut table = hot.lock();
    match table.class_of(hash, capacity, weight) {
        Found::Class(class) => class,
        Found::Promote { base } => {
            let key = parking_lot::MutexGuard::unlocked(&mut table, describe);
            table.promote(hash, base, key, &register)
        }
    }
}

/// An acquisition in progress, from [`Probe::begin`]: nothing (telemetry off, or this
/// acquisition not sampled: one null pointer) or the record of a sampled one. Dropped
/// without [`acquired`](Self::acquired) it counts as [`gave_up`](Self::gave_up).
pub(crate) struct Attempt<'a> {
    // `ManuallyDrop`: the null check of the drop is inlined (`Drop for Attempt`), the rest
    // out of line, so that a future or guard that holds an attempt keeps small drop glue.
    active: ManuallyDrop<Option<Box<Sample>>>,
    _probe: PhantomData<&'a Probe>,
}

impl Drop for Attempt<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(sample) = self.active.take() {
            release(sample);
        }
    }
}

impl std::fmt::Debug for Attempt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attempt")
            .field("active", &self.active.is_some())
            .finish()
    }
}

/// A sampled acquisition, then its hold: one allocation from `begin` to release (the
/// attempt's box becomes the guard's). Dropped while waiting (the acquisition gave up), it
/// ends the wait; dropped while held, it ends the hold.
struct Sample {
    class: Arc<Class>,
    site: &'static Location<'static>,
    /// Set while waiting: the live table's id, when the wait began.
    wait: Option<(u64, Instant)>,
    /// Set while held: the live table's record, the lock, when it was granted.
    hold: Option<(live::HoldId, LockId, Instant)>,
    task: bool,
    /// How many acquisitions this one stands for: the sampling rate when it was sampled.
    weight: u64,
}

impl Drop for Sample {
    fn drop(&mut self) {
        if let Some((id, since)) = self.wait.take() {
            end_wait(self, id, since, Instant::now(), false);
        }
        if let Some((id, lock, since)) = self.hold.take() {
            self.released(id, lock, since);
        }
    }
}

impl Default for Attempt<'_> {
    /// An attempt that records nothing (an acquisition telemetry does not follow).
    #[inline]
    fn default() -> Self {
        Self::off()
    }
}

impl Attempt<'_> {
    /// An attempt that records nothing (telemetry off, or not sampled).
    #[inline(always)]
    pub(crate) fn off() -> Self {
        Self {
            active: ManuallyDrop::new(None),
            _probe: PhantomData,
        }
    }

    /// The same attempt, free of its probe's lifetime (a sampled attempt holds its class by
    /// reference count; the lifetime only ties call sites to their probe), for futures
    /// that store it.
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn detach(mut self) -> Attempt<'static> {
        Attempt {
            active: ManuallyDrop::new(self.active.take()),
            _probe: PhantomData,
        }
    }

    /// The acquisition belongs to a task (an async face): its wait is never an edge of a
    /// wait-for cycle, and its hold counts in `hold_across_await`.
    #[inline]
    pub(crate) fn mark_async(&mut self) {
        if let Some(active) = &mut *self.active {
            active.task = true;
        }
    }

    /// The slow path begins: the thread (or task) waits for the lock `on` (again: no effect).
    #[inline(always)]
    pub(crate) fn waiting(&mut self, on: LockAddr) {
        if let Some(active) = &mut *self.active
            && active.wait.is_none()
        {
            start_wait(active, on);
        }
    }

    /// Whether this acquisition is recorded (telemetry enabled and this acquisition
    /// sampled): a lock that cannot tell a wait from the outside tries first only then.
    #[inline(always)]
    pub(crate) fn is_recording(&self) -> bool {
        self.active.is_some()
    }

    /// The lock `lock` was granted to a guard that cannot carry a [`Held`] (a `lock_api`
    /// guard returned as is): counted and its wait timed, its hold not followed.
    #[inline]
    pub(crate) fn acquired_unheld(mut self, lock: LockAddr) {
        if let Some(active) = self.active.take() {
            finish_acquired(active, lock, false);
        }
    }

    /// The lock `lock` was granted; the [`Held`] goes into the guard.
    #[inline(always)]
    pub(crate) fn acquired(mut self, lock: LockAddr) -> Held {
        match self.active.take() {
            None => Held::default(),
            Some(active) => finish_acquired(active, lock, true),
        }
    }

    /// The acquisition ended without the lock (timed out, cancelled, absent).
    #[inline(always)]
    pub(crate) fn gave_up(self) {
        drop(self);
    }
}

/// Emits a `tracing` event from inside a lock's acquire or release: never while the thread
/// unwinds (a second panic would abort), and a subscriber that panics does not stop the
/// caller, which still has to release or register the lock (the panic is reported by the
/// panic hook and otherwise dropped).
fn emit_event(emit: impl FnOnce()) {
    if !std::thread::panicking() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(emit));
    }
}

#[cold]
#[inline(never)]
fn start_wait(active: &mut Sample, on: LockAddr) {
    let since = Instant::now();
    let lock = live::lock_id(&active.class, on);
    let (id, cycle) = live::waiting(
        &active.class,
        lock,
        active.site,
        since,
        active.task,
        active.weight,
    );
    active.wait = Some((id, since));
    if let Some(cycle) = cycle {
        live::record_cycle(&cycle);
        emit_event(|| {
            tracing::error!(
                target: "chainlock::telemetry",
                %cycle,
                "a wait-for cycle among chainlock's locks: these threads wait for each other (the waits go on until they time out)"
            );
        });
    }
}

/// Ends a wait: forgets it, and reports it if slow.
fn end_wait(active: &Sample, id: u64, since: Instant, now: Instant, acquired: bool) -> Duration {
    live::wait_ended(id);
    let waited = now.saturating_duration_since(since);
    let threshold = SLOW_WAIT.load(Ordering::Relaxed);
    if threshold > 0 && nanos(waited) >= threshold {
        let snapshot = live::snapshot();
        emit_event(|| {
            tracing::warn!(
                target: "chainlock::telemetry",
                lock = %active.class.name,
                site = %active.site,
                waited = ?waited,
                acquired,
                live = %snapshot,
                "a slow wait for a chainlock lock"
            );
        });
    }
    waited
}

/// A sampled acquisition was granted: counted (by its weight), its wait recorded, its hold
/// entered in the live table (`held`: else the hold is not followed, nothing would end it).
#[inline(never)]
fn finish_acquired(mut sample: Box<Sample>, lock: LockAddr, held: bool) -> Held {
    let now = Instant::now();
    let weight = sample.weight;
    let class = &sample.class;
    class.acquisitions.fetch_add(weight, Ordering::Relaxed);
    if let Some((id, since)) = sample.wait {
        let waited = nanos(end_wait(&sample, id, since, now, true));
        class.contended.fetch_add(weight, Ordering::Relaxed);
        class.wait.record(waited);
        class
            .waiter_sites
            .record(sample.site, weight, waited.saturating_mul(weight));
        sample.wait = None;
    } else {
        // It did not queue behind a holder: it waited nothing. (The lock's own cost of an
        // uncontended acquisition is no wait: counted as one, a busy uncontended lock would
        // rank above a contended one by total wait, and the waits would not be the sum of
        // the waiter sites.)
        class.wait.record(0);
    }
    if !held {
        return Held::default();
    }
    let lock = live::lock_id(&sample.class, lock);
    let id = live::held(&sample.class, lock, sample.site, now, sample.task);
    sample.hold = Some((id, lock, now));
    Held {
        record: ManuallyDrop::new(Some(sample)),
    }
}

/// A hold, stored in the guard: released explicitly by the guard before it unlocks, or
/// when dropped. Without a record (unsampled, or telemetry off when acquired) it is one
/// null pointer, and dropping it a null check.
#[derive(Default)]
pub struct Held {
    // `ManuallyDrop`: the null check is inlined by `Drop for Held`, the rest out of line
    // (as a plain field the drop glue was an out-of-line call per release).
    record: ManuallyDrop<Option<Box<Sample>>>,
}

impl Drop for Held {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            release(record);
        }
    }
}

/// Ends a sampled wait or hold (`Drop for Sample`), out of line.
#[cold]
#[inline(never)]
fn release(record: Box<Sample>) {
    drop(record);
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("recorded", &self.record.is_some())
            .finish()
    }
}

impl Held {
    /// The hold ends (call just before the lock is given back; dropping does it too).
    #[inline(always)]
    pub fn released(self) {
        drop(self);
    }

    /// The hold belongs to a task: its time counts in `hold_across_await`.
    #[inline(always)]
    pub fn mark_async(&mut self) {
        if let Some(record) = &mut *self.record
            && !record.task
        {
            record.task = true;
            if let Some((id, _, _)) = &record.hold {
                live::held_by_task(id);
            }
        }
    }
}

impl Sample {
    /// The hold `id` of `lock`, granted at `since`, ends.
    fn released(&self, id: live::HoldId, lock: LockId, since: Instant) {
        let now = Instant::now();
        let held = nanos(now.saturating_duration_since(since));
        let class = &self.class;
        if self.task {
            class.hold_across_await.record(held);
        } else {
            class.hold.record(held);
        }
        // A wait this release ends that passed the slow-wait threshold: reported now, while
        // this holder is still in the snapshot (the waiter reports again when its wait ends).
        let threshold = SLOW_WAIT.load(Ordering::Relaxed);
        if threshold > 0 && live::waited_past(lock, now, threshold) {
            let snapshot = live::snapshot();
            emit_event(|| {
                tracing::warn!(
                    target: "chainlock::telemetry",
                    lock = %class.name,
                    holder_site = %self.site,
                    held = ?now.saturating_duration_since(since),
                    live = %snapshot,
                    "a release ends a slow wait for a chainlock lock"
                );
            });
        }
        let ended = live::released(id, lock, now);
        if ended.waiters > 0 {
            // Each sampled release stands for `weight` releases, each sampled waiter for its
            // own weight (already in `ended`).
            class
                .waiters_at_release
                .fetch_add(ended.waiters.saturating_mul(self.weight), Ordering::Relaxed);
            // Go's mutex profile (1.22): the waiting this release ended since the last
            // recorded one, summed over the waiters, charged to the releaser's site. With
            // every acquisition recorded the charges sum to the waiting time; under sampling
            // a wait is charged only up to the last sampled release before it ends.
            class
                .holder_sites
                .record(self.site, self.weight, ended.delay);
        }
    }
}
