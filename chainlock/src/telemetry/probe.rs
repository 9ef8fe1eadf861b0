//! The hooks' lifecycle, with the feature on: a [`Probe`] per lock class instance (a
//! [`KeyProbe`] for keyed registries) begins an [`Attempt`] (`begin` → `waiting` →
//! `acquired` / `gave_up`), whose record becomes the guard's [`Held`] (`released`). Their
//! twins without the feature are in `off.rs`; the locks reach both through `hooks.rs` only.
//!
//! The hooks are `#[inline(always)]` down to the first branch on "recording?": with
//! telemetry off at run time an acquisition costs one relaxed load and a branch, a release
//! a null check (measured in `docs/telemetry.md`); the work is out of line.
#![allow(clippy::inline_always)]

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::class::Class;
use super::live::{self, LockId};
use super::naming::{KeyRef, Label, LockAddr, Names, ProbeKind};
use super::sampling::{Sampled, countdown_skips, sampled_now, side_sampled_now};
use super::state::{recording, slow_wait_nanos};

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The recorder of one lock class instance (a manager, a stripe set, a room set, a
/// locker level): cheap to make (`const`), allocates its classes on first use while enabled.
pub(crate) struct Probe {
    names: Names,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("kind", &self.names)
            .finish_non_exhaustive()
    }
}

impl Probe {
    /// A probe for the locks `kind` names.
    pub(crate) const fn new(kind: ProbeKind) -> Self {
        Self {
            names: Names::new(kind),
        }
    }

    /// Renames the probe's class (a manager's `telemetry_name`); only before its first
    /// recording (the statistics already recorded keep their name).
    pub(crate) fn rename(&mut self, label: Label) {
        self.names.rename(label);
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
        !recording() || countdown_skips()
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
        recording() && sampled_now()
    }

    /// Whether this event of an optimistic descent (a restart, a pessimistic pass's
    /// acquisition) is sampled, on the side countdown (see `sampling.rs`'s
    /// `side_sampled_now`); then [`Sampled::start_side`] starts its sample.
    #[inline(always)]
    #[expect(
        clippy::unused_self,
        reason = "the sampler is per thread, not per probe; call sites ask the probe they record into"
    )]
    pub(crate) fn is_sampled_side(&self) -> bool {
        recording() && side_sampled_now()
    }

    /// A sampled optimistic restart at the lock `key` (`sampled`: its weight), which sent
    /// the descent to its pessimistic pass if `fallback`: counted, nothing else (a restart
    /// holds nothing and waits for nothing).
    #[cold]
    #[inline(never)]
    pub(crate) fn restarted(&self, key: KeyRef<'_>, sampled: Sampled, fallback: bool) {
        let class = self.names.class_of(key, sampled.weight);
        class.restarts.fetch_add(sampled.weight, Ordering::Relaxed);
        if fallback {
            class.fallbacks.fetch_add(sampled.weight, Ordering::Relaxed);
        }
    }

    /// The record of the sampled acquisition `sampled` of the lock `key`.
    #[cold]
    #[inline(never)]
    pub(crate) fn attempt(&self, key: KeyRef<'_>, sampled: Sampled) -> Attempt<'_> {
        let class = self.names.class_of(key, sampled.weight);
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
            // A wait that ended without the lock: the releases during it were charged to
            // their holders, so it is timed too (else the charges exceed the waits).
            let waited = end_wait(self, id, since, Instant::now(), false);
            self.class.gave_up.record(nanos(waited));
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
    let threshold = slow_wait_nanos();
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
        let threshold = slow_wait_nanos();
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
        // Into the class each waiter waited in (this hold's, unless the lock was also taken
        // through another class: another locker's level, the lock taken by itself).
        for ended in live::released(id, lock, now) {
            // Each sampled release stands for `weight` releases, each sampled waiter for its
            // own weight (already in `ended`).
            ended
                .class
                .waiters_at_release
                .fetch_add(ended.waiters.saturating_mul(self.weight), Ordering::Relaxed);
            // Go's mutex profile (1.22): the waiting this release ended since the last
            // recorded one, summed over the waiters, charged to the releaser's site. With
            // every acquisition recorded the charges sum to the waiting time; under sampling
            // a wait is charged only up to the last sampled release before it ends.
            ended
                .class
                .holder_sites
                .record(self.site, self.weight, ended.delay);
        }
    }
}
