//! Whether a generated call records ([`Rec`]: [`On`] or [`Off`], asked once per call by
//! [`records`] through `__private::recording_branches!`), the site it records at (the
//! `#[track_caller]` its methods get through `__private::tracked!`), and its recording copy
//! run [`out_of_line`].
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use crate::chain::{Absence, Exit};
use crate::telemetry::sampling::{CallChances, skips_all, spend_unreached};
use crate::telemetry::state::recording;
use std::panic::Location;

/// Whether a generated body records: asked once per call (`__private::recording_branches!`,
/// which runs the body with [`On`] while telemetry is enabled and the sampler is due within
/// the call's levels, with [`Off`] otherwise), not at each level. With [`Off`] a helper is its lock's own call and an empty record, so
/// the whole descent compiles to what it is without the telemetry feature.
pub trait Rec: Copy {
    /// Whether the helpers record (each still asks the sampler).
    const ON: bool;
    /// The site the acquisitions are recorded at: the generated method's caller.
    fn site(self) -> &'static Location<'static>;
}

/// The call may record (see [`Rec`]): each level asks the sampler, and records at
/// the method's caller (taken when the call began: the recording copy of a blocking body
/// runs in a closure, which cannot be `#[track_caller]`).
#[derive(Clone, Copy, Debug)]
pub struct On(&'static Location<'static>);

impl On {
    /// At the caller's site (the user's call, through the `#[track_caller]` method).
    #[inline(always)]
    #[cfg_attr(feature = "telemetry", track_caller)]
    #[must_use]
    pub fn here() -> Self {
        On(Location::caller())
    }
}

/// The call does not record: telemetry not enabled, or none of its levels due to be
/// sampled.
#[derive(Clone, Copy, Debug)]
pub struct Off;

impl Rec for On {
    const ON: bool = true;
    #[inline(always)]
    fn site(self) -> &'static Location<'static> {
        self.0
    }
}

impl Rec for Off {
    const ON: bool = false;
    #[inline(always)]
    fn site(self) -> &'static Location<'static> {
        Location::caller()
    }
}

/// Runs the recording copy of a generated blocking body out of line, so that the copy that
/// does not record keeps its function as small as without the telemetry (inlined, the
/// second copy cost the inliner's budget: a guard's drop of an eight-level chain went out
/// of line).
///
/// `levels`: the call's locked levels, as given to [`records`]: the levels the body did not
/// reach spend their chances after it (as the copy that does not record spends them), so
/// that a call ending early does not make the next acquisitions sampled too often; also
/// when the body unwinds (a stage or leaf closure panicked: `CallChances` is a guard).
#[inline(never)]
pub fn out_of_line<T>(levels: u32, body: impl FnOnce() -> T) -> T {
    let _chances = CallChances::start(levels);
    body()
}

/// After the recording copy of a generated async body: the chances of the levels it did not
/// reach are spent, as the copy that does not record spends them ([`out_of_line`] does so
/// for a blocking body). A future may move between threads and interleave with other tasks
/// on one, so the levels reached are read from the outcome, not counted on the thread:
/// all `levels` when it is `Ok`; `level` when no node was found at `level`; `level + 1`
/// when the node at `level` was taken and found closed, or its wait ran out of time (the
/// attempt asked the sampler). An async locker has no optimistic levels, whose levels the
/// `Exit`'s would not match. A mixed chain's `Exit` counts its walk's depths too: its
/// reached levels are then at most `levels` (none spent: the walk's steps ask the sampler
/// one by one).
pub fn spend_unreached_async<T>(out: &Result<T, Exit>, levels: u32) {
    let reached = match out {
        Err(Exit::Absent {
            level,
            cause: Absence::Missing,
        }) => *level,
        Err(Exit::Absent { level, .. } | Exit::TimedOut { level }) => level.saturating_add(1),
        Ok(_) | Err(_) => return,
    };
    if levels != u32::MAX {
        let reached = u32::try_from(reached).unwrap_or(u32::MAX);
        spend_unreached(levels.saturating_sub(reached));
    }
}

/// Makes the generated method it wraps `#[track_caller]` when chainlock's `telemetry`
/// feature is on, so that the sites the telemetry records are the user's calls; without the
/// feature, the method as it is (no hidden location argument, nothing to pay).
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_tracked {
    ($($item:tt)*) => { #[track_caller] $($item)* };
}

/// See the `telemetry` twin above: without the feature, the method unchanged.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_tracked {
    ($($item:tt)*) => { $($item)* };
}

/// Runs a generated descent's body with `$rec` bound to [`On`] when this call may record,
/// with [`Off`] otherwise: the telemetry is asked once per call, and with `Off` every
/// level's helper is its lock's own call (the body, duplicated, compiles to what it is
/// without the feature). The call may record when the telemetry is enabled and this
/// thread's sampling countdown ends within the call's `$levels` acquisitions
/// ([`records`]): else the countdown moves past them all at once and the call runs
/// without hooks, so that a call costs one check, not one per level, unless one of its
/// acquisitions is sampled. Without chainlock's `telemetry` feature: the body with
/// `Off`, once, as statements (so that the generated code, which invokes the macro with
/// braces at the end of a method's body, reads as the body itself). A body may begin by
/// binding its steps, `let __s = __cl::Steps(__w, @rec, &__CL_LEVELS)`: the macro binds them
/// with the record-or-not in place of `@rec` (one line less in every generated body).
#[cfg(feature = "telemetry")]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_recording_branches {
    // A body whose steps are bound first, `let __s = __cl::Steps(.., @rec, ..)`: the
    // record-or-not in the steps (`$cl`: the generated code's path to `__private`).
    (let $s:ident = $cl:ident :: $steps:ident ($($pre:expr,)* @rec $(, $post:expr)*),
     $levels:expr => $($body:tt)*) => {
        $crate::__private::recording_branches! { __rec, $levels =>
            let $s = $cl::$steps($($pre,)* __rec $(, $post)*);
            $($body)*
        }
    };
    (async let $s:ident = $cl:ident :: $steps:ident ($($pre:expr,)* @rec $(, $post:expr)*),
     $levels:expr => $($body:tt)*) => {
        $crate::__private::recording_branches! { async __rec, $levels =>
            let $s = $cl::$steps($($pre,)* __rec $(, $post)*);
            $($body)*
        }
    };
    // A blocking body: its recording copy runs out of line (`out_of_line`), the site taken
    // here, in the `#[track_caller]` method.
    ($rec:ident, $levels:expr => $($body:tt)*) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            $crate::__private::out_of_line($levels, move || { $($body)* })
        } else {
            let $rec = $crate::__private::RecOff;
            $($body)*
        }
    };
    // An async body: both copies in the future (`async fn`s are not `#[track_caller]`).
    // The recording copy runs in a block of its own, so that its early exits (`?`) come
    // back here, where its unreached levels spend their chances (`spend_unreached_async`).
    (async $rec:ident, $levels:expr => $($body:tt)*) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            let out = async move { $($body)* }.await;
            $crate::__private::spend_unreached_async(&out, $levels);
            out
        } else {
            let $rec = $crate::__private::RecOff;
            $($body)*
        }
    };
}

/// See the `telemetry` twin above: without the feature, the body once, not recording.
#[cfg(not(feature = "telemetry"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __chainlock_recording_branches {
    (let $s:ident = $cl:ident :: $steps:ident ($($pre:expr,)* @rec $(, $post:expr)*),
     $levels:expr => $($body:tt)*) => {
        let $s = $cl::$steps($($pre,)* $cl::RecOff $(, $post)*);
        $($body)*
    };
    (async let $s:ident = $cl:ident :: $steps:ident ($($pre:expr,)* @rec $(, $post:expr)*),
     $levels:expr => $($body:tt)*) => {
        let $s = $cl::$steps($($pre,)* $cl::RecOff $(, $post)*);
        $($body)*
    };
    (async $rec:ident, $levels:expr => $($body:tt)*) => {
        $crate::__private::recording_branches! { $rec, $levels => $($body)* }
    };
    ($rec:ident, $levels:expr => $($body:tt)*) => {
        let $rec = $crate::__private::RecOff;
        $($body)*
    };
}

/// Whether a generated call of (at most) `levels` acquisitions may record: the telemetry
/// is enabled and this thread's sampling countdown ends within them. If not, the countdown
/// moves past all of them (none is sampled; each real acquisition still had its chance of
/// one in `sample_every`, so the estimates stay unbiased: a call that exits early only
/// spends the chances of acquisitions that did not happen). `u32::MAX`: the count is not
/// known (records whenever enabled).
#[inline(always)]
#[must_use]
pub fn records(levels: u32) -> bool {
    recording() && !skips_all(levels)
}
