//! Whether a generated call records ([`Rec`]: [`On`] or [`Off`], asked once per call by
//! [`records`] through `__private::recording_branches!`), the site it records at (the
//! `#[track_caller]` its methods get through `__private::tracked!`), and its recording copy
//! run [`out_of_line`].
#![expect(
    clippy::inline_always,
    reason = "the generated code's steps must inline into the caller to cost nothing"
)]

use crate::telemetry::sampling::skips_all;
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
#[inline(never)]
pub fn out_of_line<T>(body: impl FnOnce() -> T) -> T {
    body()
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
            $crate::__private::out_of_line(move || { $($body)* })
        } else {
            let $rec = $crate::__private::RecOff;
            $($body)*
        }
    };
    // An async body: both copies in the future (`async fn`s are not `#[track_caller]`).
    (async $rec:ident, $levels:expr => $($body:tt)*) => {
        if $crate::__private::records($levels) {
            let $rec = $crate::__private::RecOn::here();
            $($body)*
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
