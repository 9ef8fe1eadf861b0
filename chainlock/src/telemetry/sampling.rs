//! Which acquisitions are recorded: one in `sample_every` per thread, at random intervals
//! averaging it (a countdown per thread, redrawn after each sampled acquisition), and the
//! [`Sampled`] acquisition whose record the probe then makes.
#![expect(
    clippy::inline_always,
    reason = "the countdown is inlined into every hook: one thread-local access"
)]

use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

use super::state::sample_every;

/// A sampled acquisition whose record is not made yet (from `Probe::is_sampled`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sampled {
    /// Where it was made.
    pub(super) site: &'static Location<'static>,
    /// How many acquisitions it stands for: the sampling rate in force.
    pub(super) weight: u64,
}

impl Sampled {
    /// A sampled acquisition (`Probe::is_sampled` or `Probe::begin`) at `site`: if it
    /// takes its lock without queueing, it waited nothing (no clock read); if not, its wait
    /// is timed from `Attempt::waiting`.
    #[inline]
    pub(crate) fn start(site: &'static Location<'static>) -> Self {
        Self {
            site,
            weight: u64::from(next_interval()),
        }
    }

    /// A sampled event of an optimistic descent (`Probe::is_sampled_side`) at `site`: as
    /// [`Sampled::start`], the next one drawn on the side countdown.
    #[inline]
    pub(crate) fn start_side(site: &'static Location<'static>) -> Self {
        let rate = sample_every().max(1);
        let interval = draw_interval(rate);
        let _ = SIDE_COUNTDOWN.try_with(|countdown| countdown.set(interval));
        Self {
            site,
            weight: u64::from(rate),
        }
    }
}

std::thread_local! {
    /// Acquisitions until this thread's next sampled one (0: the next one is).
    static COUNTDOWN: Cell<u32> = const { Cell::new(0) };
    /// This thread's generator of sampling intervals (0: not seeded yet).
    static RANDOM: Cell<u64> = const { Cell::new(0) };
    /// The chances the levels of this thread's innermost recording chain-locker call have
    /// spent so far (see [`CallChances`]).
    static CALL_SPENT: Cell<u32> = const { Cell::new(0) };
    /// Events of optimistic descents until this thread's next sampled one (see
    /// [`side_sampled_now`]; 0: the next one is, or not drawn yet).
    static SIDE_COUNTDOWN: Cell<u32> = const { Cell::new(0) };
}

/// The chances a generated chain-locker call's recording copy spends, so that it spends as
/// many as the copy the sampler skips (one per locked level, whether reached or not):
/// else a call that ends early (an absent child, a closed node, a deadline, a panic in a
/// stage) leaves the chances of its unreached levels unspent, and the next acquisitions
/// are sampled too often (issue #30: the estimates biased up, +32 % with half the calls
/// ending at the root). Only the call's own levels count ([`level_chance`], from its
/// levels' hooks): not a restart (both copies ask the sampler for it), not a lock taken in
/// the leaf closure, nor a nested chain-locker call's levels (each call counts its own:
/// the count is saved at a call's start and put back at its end). A guard: the call's end
/// is its drop, so that a call unwinding from a user closure's panic spends them too.
pub(crate) struct CallChances {
    /// The enclosing recording call's count, put back at the end.
    outer: u32,
    /// The call's locked levels (`u32::MAX`: not known; it records whenever enabled,
    /// nothing to spend).
    levels: u32,
}

impl CallChances {
    /// A recording call of `levels` locked levels begins: its count starts at 0.
    #[inline]
    pub(crate) fn start(levels: u32) -> Self {
        CallChances {
            outer: CALL_SPENT.try_with(|spent| spent.replace(0)).unwrap_or(0),
            levels,
        }
    }
}

impl Drop for CallChances {
    /// The call ended, returned or unwound: the chances of the levels it did not reach are
    /// spent, and the enclosing call's count is put back.
    #[inline]
    fn drop(&mut self) {
        let used = CALL_SPENT
            .try_with(|spent| spent.replace(self.outer))
            .unwrap_or(0);
        if self.levels != u32::MAX {
            spend_unreached(self.levels.saturating_sub(used));
        }
    }
}

/// One of a recording chain-locker call's levels asked the sampler (see [`CallChances`]).
#[inline(always)]
pub(crate) fn level_chance() {
    let _ = CALL_SPENT.try_with(|spent| spent.set(spent.get().wrapping_add(1)));
}

/// A recording call ended before `unreached` of its levels: their chances are spent as a
/// call the sampler skips spends them, so that every acquisition keeps its chance of one
/// in `sample_every`. A sample that falls on an unreached level is lost: the next
/// interval is drawn.
pub(crate) fn spend_unreached(mut unreached: u32) {
    let _ = COUNTDOWN.try_with(|countdown| {
        while unreached > 0 {
            let left = countdown.get();
            if left == 0 {
                return;
            }
            if left > unreached {
                countdown.set(left - unreached);
                return;
            }
            unreached -= left;
            countdown.set(draw_interval(sample_every().max(1)));
        }
    });
}

/// Whether none of this thread's next `n` acquisitions is sampled (the countdown ends after
/// them; it is moved past them if so): a generated chain-locker call of `n` levels asks this
/// once instead of each level asking `Probe::skips`. Called while enabled.
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
pub(super) fn countdown_skips() -> bool {
    skips_all(1)
}

/// Whether this acquisition is sampled: counts this thread's countdown down. Inlined into
/// every hook; a thread-local `Cell` without a destructor is one access relative to the
/// thread pointer.
#[inline(always)]
pub(super) fn sampled_now() -> bool {
    sampled_on(&COUNTDOWN)
}

/// Counts `countdown` down: whether its interval ended (drawn first if it never was).
#[inline(always)]
fn sampled_on(countdown: &'static std::thread::LocalKey<Cell<u32>>) -> bool {
    countdown
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

/// Whether this event of an optimistic descent is sampled, on a countdown of its own: a
/// restart, and an acquisition of a generated descent's pessimistic pass. Their number is
/// not known when a chain-locker call decides whether it records (by its locked levels, on
/// the main countdown: `records`), so on the main countdown they would take its samples in
/// one copy and not the other (issue #30: a call that fell back after nine restarts had
/// its leaf estimated 100 times too low at 1 in 100, its restarts 10 % too high). Both
/// copies ask this one for them, in the same order, so each keeps its one chance in
/// `sample_every`.
#[inline(always)]
pub(super) fn side_sampled_now() -> bool {
    sampled_on(&SIDE_COUNTDOWN)
}

/// A thread's first acquisition while enabled: its place in its first interval is drawn
/// too. (Sampling every thread's first acquisition biased the sample: threads started
/// together all contend at once, and each such sample counts for `n`.)
#[cold]
#[inline(never)]
fn first_draw(countdown: &Cell<u32>) -> bool {
    let left = draw_interval(sample_every().max(1));
    countdown.set(left);
    left == 1
}

/// After a sampled acquisition: draws the number of acquisitions until this thread's next
/// one and returns the weight of this one (the sampling rate in force). The interval is
/// uniform in `1..2n` (mean `n`), not `n` itself: a fixed period would alias with a loop
/// that acquires the same locks in a fixed order (with `n = 3`, a three-level chain would
/// only ever sample its first level), and the estimates (count × `n`) would be wrong.
fn next_interval() -> u32 {
    let rate = sample_every().max(1);
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
