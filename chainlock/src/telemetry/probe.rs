//! The hooks the locks call (begin → waiting → acquired / gave up → released), with the
//! feature on. Their twins without the feature are in `off.rs`.
//!
//! The hooks are `#[inline(always)]` down to the first branch on "recording?": with
//! telemetry off at run time an acquisition costs one relaxed load and a branch, a release
//! a null check (measured in `docs/telemetry.md`); the work is out of line.
#![allow(clippy::inline_always)]

use std::collections::HashMap;
use std::marker::PhantomData;
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

std::thread_local! {
    /// Acquisitions until this thread's next sampled one.
    static COUNTDOWN: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

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

pub(super) fn is_enabled() -> bool {
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
#[doc(hidden)]
#[derive(Clone, Debug)]
pub enum Label {
    /// Where it was made.
    Site(&'static Location<'static>),
    /// What the user called it.
    Named(Arc<str>),
}

impl Label {
    /// The caller's location (`#[track_caller]`: the constructor's caller when the
    /// constructor is `#[track_caller]` too).
    #[track_caller]
    pub fn caller() -> Self {
        Self::Site(Location::caller())
    }
    /// A name given by the user.
    pub fn named(name: &str) -> Self {
        Self::Named(name.into())
    }
}

/// What lock names a probe builds: the class of locks it records.
#[doc(hidden)]
#[derive(Debug)]
pub enum ProbeKind {
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
    Distributed {
        /// The backend.
        backend: &'static str,
    },
}

/// Which lock within a probe's class.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum KeyRef<'a> {
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
#[doc(hidden)]
pub type LockAddr = usize;

/// The recorder of one lock class instance (a manager, a stripe set, a room set, a
/// locker level): cheap to make (`const`), allocates its classes on first use while enabled.
#[doc(hidden)]
pub struct Probe {
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
    pub const fn new(kind: ProbeKind) -> Self {
        Self {
            kind,
            classes: OnceLock::new(),
        }
    }

    /// Renames the probe's class (a manager's `telemetry_name`); only before its first
    /// recording (the statistics already recorded keep their name).
    pub fn rename(&mut self, label: Label) {
        match &mut self.kind {
            ProbeKind::Keyed { manager: old }
            | ProbeKind::Striped { set: old }
            | ProbeKind::Rooms { rooms: old } => *old = label,
            ProbeKind::Level { .. } | ProbeKind::Walk { .. } | ProbeKind::Distributed { .. } => {}
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

    fn class_of(&self, key: KeyRef<'_>) -> ClassRef<'_> {
        match (self.classes(), key) {
            (Classes::One(class), _) => ClassRef::Probe(class),
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
                    Some(slot) => ClassRef::Probe(slot.get_or_init(make)),
                    None => ClassRef::Own(more.lock().entry(index).or_insert_with(make).clone()),
                }
            }
            (Classes::Hashed(hot), key) => {
                let capacity = HOT_KEYS.load(Ordering::Relaxed);
                ClassRef::Own(match key {
                    KeyRef::Hash(hash, describe) => {
                        hot_class(hot, hash, capacity, describe, register)
                    }
                    KeyRef::Index(index) => {
                        hot_class(hot, index as u64, capacity, &|| index.to_string(), register)
                    }
                    KeyRef::None => hot_class(hot, 0, capacity, &|| "0".into(), register),
                })
            }
        }
    }

    /// An acquisition of the lock `key` begins: the first thing in an acquire, at the
    /// caller's site (`#[track_caller]`). Disabled: one relaxed load and a branch.
    #[track_caller]
    #[inline(always)]
    pub fn begin(&self, key: KeyRef<'_>) -> Attempt<'_> {
        if !ENABLED.load(Ordering::Relaxed) {
            return Attempt::off();
        }
        self.begin_enabled(key, Location::caller())
    }

    #[inline(never)]
    fn begin_enabled(&self, key: KeyRef<'_>, site: &'static Location<'static>) -> Attempt<'_> {
        // The thread's countdown decides first: an unsampled acquisition takes its class
        // and nothing else (no allocation, no clock, no table) until it has to wait.
        let sampled = COUNTDOWN
            .try_with(|countdown| {
                let left = countdown.get();
                if left <= 1 {
                    countdown.set(SAMPLE_EVERY.load(Ordering::Relaxed));
                    true
                } else {
                    countdown.set(left - 1);
                    false
                }
            })
            .unwrap_or(false);
        let class = self.class_of(key);
        let state = if sampled {
            State::Full(Box::new(Active {
                class: class.owned(),
                site,
                start: Some(Instant::now()),
                wait: None,
                task: false,
            }))
        } else {
            State::Lite {
                class,
                site,
                task: false,
            }
        };
        Attempt {
            state,
            _probe: PhantomData,
        }
    }
}

/// A [`Probe`] over the keys of type `K` of a keyed registry: names a hot key by its
/// `Debug` when the user opted in ([`key_debug`](Self::key_debug)), else by `#<hash>`.
#[doc(hidden)]
pub struct KeyProbe<K: ?Sized> {
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
    pub const fn new(kind: ProbeKind) -> Self {
        Self {
            probe: Probe::new(kind),
            debug: None,
        }
    }

    /// Renames the class (see [`Probe::rename`]).
    pub fn rename(&mut self, label: Label) {
        self.probe.rename(label);
    }

    /// Names hot keys by `debug` from now on.
    pub fn key_debug(&mut self, debug: fn(&K) -> String) {
        self.debug = Some(debug);
    }

    /// An acquisition of `key` begins; `hash` (the registry's hash of the key) is called
    /// only when enabled.
    #[track_caller]
    #[inline(always)]
    pub fn begin(&self, key: &K, hash: impl FnOnce(&K) -> u64) -> Attempt<'_> {
        if !ENABLED.load(Ordering::Relaxed) {
            return Attempt::off();
        }
        let hash = hash(key);
        let describe = || match self.debug {
            Some(debug) => debug(key),
            None => format!("#{hash:016x}"),
        };
        self.probe
            .begin_enabled(KeyRef::Hash(hash, &describe), Location::caller())
    }
}

/// The class of a key of a keyed manager or distributed backend. The key's name is made
/// with the table unlocked: it is the user's `Debug`, which may itself lock (even a lock of
/// the same manager, whose acquisitions take this table).
fn hot_class(
    hot: &Mutex<HotKeys>,
    hash: u64,
    capacity: usize,
    describe: &dyn Fn() -> String,
    register: impl Fn(&Arc<Class>),
) -> Arc<Class> {
    let mut table = hot.lock();
    match table.class_of(hash, capacity) {
        Found::Class(class) => class,
        Found::Promote { base } => {
            let key = parking_lot::MutexGuard::unlocked(&mut table, describe);
            table.promote(hash, base, key, &register)
        }
    }
}

/// An acquisition in progress, from [`Probe::begin`]. Dropped without
/// [`acquired`](Self::acquired) it counts as [`gave_up`](Self::gave_up).
#[doc(hidden)]
pub struct Attempt<'a> {
    state: State<'a>,
    _probe: PhantomData<&'a Probe>,
}

/// A class as an unsampled attempt holds it: borrowed from its probe when the probe keeps
/// it for as long as it lives (a level, the first stripes, rooms and depths: no reference
/// count touched), else by reference count (a hot key can be evicted meanwhile).
enum ClassRef<'a> {
    Probe(&'a Arc<Class>),
    Own(Arc<Class>),
}

impl ClassRef<'_> {
    #[inline(always)]
    fn get(&self) -> &Class {
        match self {
            ClassRef::Probe(class) => class,
            ClassRef::Own(class) => class,
        }
    }

    fn owned(self) -> Arc<Class> {
        match self {
            ClassRef::Probe(class) => class.clone(),
            ClassRef::Own(class) => class,
        }
    }
}

/// What an attempt records.
enum State<'a> {
    /// Nothing: telemetry was off when it began.
    Off,
    /// Unsampled and not (yet) waiting: on acquisition its class counts it, nothing else.
    Lite {
        class: ClassRef<'a>,
        site: &'static Location<'static>,
        task: bool,
    },
    /// Sampled, or waiting: timed, and in the live table while it waits and holds.
    Full(Box<Active>),
}

impl std::fmt::Debug for Attempt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attempt")
            .field("active", &!matches!(self.state, State::Off))
            .finish()
    }
}

struct Active {
    class: Arc<Class>,
    site: &'static Location<'static>,
    /// Set if sampled: when the acquisition began.
    start: Option<Instant>,
    /// Set once waiting: the live table's id, the lock, when the wait began.
    wait: Option<(u64, LockId, Instant)>,
    task: bool,
}

impl Default for Attempt<'_> {
    /// An attempt that records nothing (an acquisition telemetry does not follow).
    #[inline]
    fn default() -> Self {
        Self::off()
    }
}

impl<'a> Attempt<'a> {
    #[inline]
    fn off() -> Self {
        Self {
            state: State::Off,
            _probe: PhantomData,
        }
    }

    #[inline(always)]
    fn take(&mut self) -> State<'a> {
        std::mem::replace(&mut self.state, State::Off)
    }

    /// The same attempt, free of its probe's lifetime (an attempt holds its class by
    /// reference count; the lifetime only ties call sites to their probe), for futures
    /// that store it.
    #[inline]
    pub fn detach(mut self) -> Attempt<'static> {
        let state = match self.take() {
            State::Off => State::Off,
            State::Lite { class, site, task } => State::Lite {
                class: ClassRef::Own(class.owned()),
                site,
                task,
            },
            State::Full(active) => State::Full(active),
        };
        Attempt {
            state,
            _probe: PhantomData,
        }
    }

    /// The acquisition belongs to a task (an async face): its wait is never an edge of a
    /// wait-for cycle, and its hold counts in `hold_across_await`.
    #[inline]
    pub fn mark_async(&mut self) {
        match &mut self.state {
            State::Off => {}
            State::Lite { task, .. } => *task = true,
            State::Full(active) => active.task = true,
        }
    }

    /// The slow path begins: the thread (or task) waits for the lock `on` (again: no effect).
    #[inline(always)]
    pub fn waiting(&mut self, on: LockAddr) {
        match &mut self.state {
            State::Off => {}
            State::Lite { .. } => self.start_lite_wait(on),
            State::Full(active) => {
                if active.wait.is_none() {
                    start_wait(active, on);
                }
            }
        }
    }

    /// An unsampled attempt begins to wait: it takes the full record from now on.
    #[cold]
    #[inline(never)]
    fn start_lite_wait(&mut self, on: LockAddr) {
        if let State::Lite { class, site, task } = self.take() {
            let mut active = Box::new(Active {
                class: class.owned(),
                site,
                start: None,
                wait: None,
                task,
            });
            start_wait(&mut active, on);
            self.state = State::Full(active);
        }
    }

    /// Whether this acquisition is recorded (telemetry enabled when it began): a lock that
    /// cannot tell a wait from the outside tries first only then.
    #[inline]
    pub fn is_recording(&self) -> bool {
        !matches!(self.state, State::Off)
    }

    /// The lock `lock` was granted to a guard that cannot carry a [`Held`] (a `lock_api`
    /// guard returned as is): counted and its wait timed, its hold not followed.
    #[inline]
    pub fn acquired_unheld(mut self, lock: LockAddr) {
        match self.take() {
            State::Off => {}
            State::Lite { class, .. } => {
                class.get().acquisitions.fetch_add(1, Ordering::Relaxed);
            }
            State::Full(mut active) => {
                // Not in the live table as a holder: nothing would take it out.
                active.start = active.start.filter(|_| active.wait.is_none());
                finish_acquired(active, lock).forget();
            }
        }
    }

    /// The lock `lock` was granted; the [`Held`] goes into the guard.
    #[inline(always)]
    pub fn acquired(mut self, lock: LockAddr) -> Held {
        match self.take() {
            State::Off => Held { record: None },
            State::Lite { class, .. } => {
                // Unsampled and uncontended: counted, nothing else.
                class.get().acquisitions.fetch_add(1, Ordering::Relaxed);
                Held { record: None }
            }
            State::Full(active) => finish_acquired(active, lock),
        }
    }

    /// The acquisition ended without the lock (timed out, cancelled, absent).
    #[inline(always)]
    pub fn gave_up(mut self) {
        if let State::Full(active) = self.take() {
            finish_gave_up(&active);
        }
    }
}

impl Drop for Attempt<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if let State::Full(active) = self.take() {
            finish_gave_up(&active);
        }
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
fn start_wait(active: &mut Active, on: LockAddr) {
    let since = Instant::now();
    let lock = live::lock_id(&active.class, on);
    let (id, cycle) = live::waiting(&active.class, lock, active.site, since, active.task);
    active.wait = Some((id, lock, since));
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
fn end_wait(active: &Active, id: u64, since: Instant, now: Instant, acquired: bool) -> Duration {
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

#[inline(never)]
fn finish_acquired(active: Box<Active>, lock: LockAddr) -> Held {
    active.class.acquisitions.fetch_add(1, Ordering::Relaxed);
    if active.start.is_none() && active.wait.is_none() {
        // Counted, nothing else.
        return Held { record: None };
    }
    let now = Instant::now();
    let class = &active.class;
    if let Some((id, _, since)) = active.wait {
        let waited = end_wait(&active, id, since, now, true);
        class.contended.fetch_add(1, Ordering::Relaxed);
        class.wait.record(nanos(waited));
        class.waiter_sites.record(active.site, 1, nanos(waited));
    } else if let Some(start) = active.start {
        class
            .wait
            .record(nanos(now.saturating_duration_since(start)));
    }
    let lock = live::lock_id(class, lock);
    let id = live::held(class, lock, active.site, now, active.task);
    Held {
        record: Some(Box::new(Record {
            class: active.class,
            site: active.site,
            since: now,
            lock,
            id,
            task: active.task,
        })),
    }
}

#[cold]
fn finish_gave_up(active: &Active) {
    if let Some((id, _, since)) = active.wait {
        end_wait(active, id, since, Instant::now(), false);
    }
}

/// A hold, stored in the guard: released explicitly by the guard before it unlocks, or
/// when dropped. Without a record (unsampled, or telemetry off when acquired) it is one
/// null pointer.
#[doc(hidden)]
#[derive(Default)]
pub struct Held {
    record: Option<Box<Record>>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("recorded", &self.record.is_some())
            .finish()
    }
}

struct Record {
    class: Arc<Class>,
    site: &'static Location<'static>,
    since: Instant,
    lock: LockId,
    id: u64,
    task: bool,
}

impl Held {
    /// Ends the record without counting a hold (a guard that cannot carry it).
    fn forget(mut self) {
        if let Some(record) = self.record.take() {
            live::released(record.id, record.lock);
        }
    }

    /// The hold ends (call just before the lock is given back; dropping does it too).
    #[inline(always)]
    pub fn released(self) {
        drop(self);
    }

    /// The hold belongs to a task: its time counts in `hold_across_await`.
    #[inline(always)]
    pub fn mark_async(&mut self) {
        if let Some(record) = &mut self.record
            && !record.task
        {
            record.task = true;
            live::held_by_task(record.id);
        }
    }
}

impl Drop for Held {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            finish_released(&record);
        }
    }
}

#[cold]
#[inline(never)]
fn finish_released(record: &Record) {
    let now = Instant::now();
    let held = nanos(now.saturating_duration_since(record.since));
    let class = &record.class;
    if record.task {
        class.hold_across_await.record(held);
    } else {
        class.hold.record(held);
    }
    // A wait this release ends that passed the slow-wait threshold: reported now, while
    // this holder is still in the snapshot (the waiter reports again when its wait ends).
    let threshold = SLOW_WAIT.load(Ordering::Relaxed);
    if threshold > 0 && live::waited_past(record.lock, now, threshold) {
        let snapshot = live::snapshot();
        emit_event(|| {
            tracing::warn!(
                target: "chainlock::telemetry",
                lock = %class.name,
                holder_site = %record.site,
                held = ?now.saturating_duration_since(record.since),
                live = %snapshot,
                "a release ends a slow wait for a chainlock lock"
            );
        });
    }
    let (waiters, oldest) = live::released(record.id, record.lock);
    if waiters > 0 {
        class
            .waiters_at_release
            .fetch_add(waiters, Ordering::Relaxed);
        // Go's mutex profile: the delay this release ends (the longest wait so far),
        // times the waiters, charged to the releaser's site.
        let delay = oldest.map_or(0, |oldest| nanos(now.saturating_duration_since(oldest)));
        class
            .holder_sites
            .record(record.site, 1, delay.saturating_mul(waiters));
    }
}
