//! The four ways of waiting for each lock (blocking, deadline, async, async with deadline):
//! the method suffix, the lock traits and the acquisition each flavor generates.

use super::super::validate::Mode;
use super::LevelCode;
use proc_macro2::TokenStream;
use quote::quote;

/// A way of waiting for each lock.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    Blocking,
    Deadline,
    Async,
    AsyncDeadline,
}

impl Flavor {
    pub(super) fn suffix(self) -> &'static str {
        match self {
            Flavor::Blocking => "",
            Flavor::Deadline => "_until",
            Flavor::Async => "_async",
            Flavor::AsyncDeadline => "_until_async",
        }
    }

    pub(super) fn is_async(self) -> bool {
        matches!(self, Flavor::Async | Flavor::AsyncDeadline)
    }

    pub(super) fn has_deadline(self) -> bool {
        matches!(self, Flavor::Deadline | Flavor::AsyncDeadline)
    }

    /// The lock trait a level of `mode` must implement for this flavor.
    pub(super) fn lock_trait(self, mode: Mode) -> TokenStream {
        match (self, mode) {
            (Flavor::Blocking, Mode::Exclusive) => quote!(__cl::ExclusiveLock),
            (Flavor::Blocking, Mode::Shared) => quote!(__cl::SharedLock),
            (Flavor::Deadline, Mode::Exclusive) => quote!(__cl::TimedExclusiveLock),
            (Flavor::Deadline, Mode::Shared) => quote!(__cl::TimedSharedLock),
            (Flavor::Async | Flavor::AsyncDeadline, Mode::Exclusive) => {
                quote!(__cl::AsyncExclusiveLock)
            }
            (Flavor::Async | Flavor::AsyncDeadline, Mode::Shared) => {
                quote!(__cl::AsyncSharedLock)
            }
            // Chains with an upgradable level get no async flavors (see `locker`).
            (Flavor::Blocking | Flavor::Async | Flavor::AsyncDeadline, Mode::Upgradable) => {
                quote!(__cl::UpgradableLock)
            }
            (Flavor::Deadline, Mode::Upgradable) => quote!(__cl::TimedUpgradableLock),
            // Chains with an optimistic level get no async flavors either.
            (_, Mode::Optimistic) => quote!(__cl::OptimisticLock),
        }
    }

    /// The `__private::Link*` bound of a key-path step into a level of `mode`.
    pub(super) fn link_trait(self, mode: Mode) -> TokenStream {
        match (self, mode) {
            (Flavor::Blocking, Mode::Exclusive) => quote!(__cl::LinkX),
            (Flavor::Blocking, Mode::Shared) => quote!(__cl::LinkS),
            (Flavor::Deadline, Mode::Exclusive) => quote!(__cl::LinkTX),
            (Flavor::Deadline, Mode::Shared) => quote!(__cl::LinkTS),
            (Flavor::Async | Flavor::AsyncDeadline, Mode::Exclusive) => quote!(__cl::LinkAX),
            (Flavor::Async | Flavor::AsyncDeadline, Mode::Shared) => quote!(__cl::LinkAS),
            (Flavor::Deadline, Mode::Upgradable) => quote!(__cl::LinkTU),
            (_, Mode::Upgradable) => quote!(__cl::LinkU),
            (_, Mode::Optimistic) => quote!(__cl::LinkO),
        }
    }

    /// The trait that names the guard type (the timed traits extend the blocking ones).
    pub(super) fn guard_trait(self, mode: Mode) -> TokenStream {
        match self {
            Flavor::Deadline => Flavor::Blocking.lock_trait(mode),
            _ => self.lock_trait(mode),
        }
    }

    /// Acquires `level` through `handle` (the root or the handle its parent's stage found),
    /// inside a body wrapped by [`recording_branches`]: a `(guard, held)` pair, `held` the
    /// telemetry's record of the hold (a zero-sized no-op without chainlock's `telemetry`
    /// feature); a timed acquisition that fails returns
    /// [`Exit::TimedOut`] through `?`.
    /// `unheld`: the `_unheld` helper, for a leaf whose guard a `descend*` hands out (its
    /// hold is not followed).
    pub(super) fn acquire(
        self,
        level: &LevelCode<'_>,
        handle: &TokenStream,
        unheld: bool,
    ) -> TokenStream {
        let index = level.index;
        self.acquire_at(level, handle, &quote!(#index), unheld)
    }

    /// [`Self::acquire`], the level's number (for [`Exit::TimedOut`]) given as an expression.
    /// The telemetry names the level by its place in the declaration (`__CL_LEVELS`).
    pub(super) fn acquire_at(
        self,
        level: &LevelCode<'_>,
        handle: &TokenStream,
        index: &TokenStream,
        unheld: bool,
    ) -> TokenStream {
        let (function, deadline) = match (self, level.mode) {
            (Flavor::Blocking, Mode::Exclusive) => ("exclusive", None),
            (Flavor::Blocking, Mode::Shared) => ("shared", None),
            (Flavor::Deadline, Mode::Exclusive) => ("exclusive_until", Some(index)),
            (Flavor::Deadline, Mode::Shared) => ("shared_until", Some(index)),
            (Flavor::Async, Mode::Exclusive) => ("exclusive_async", None),
            (Flavor::Async, Mode::Shared) => ("shared_async", None),
            (Flavor::AsyncDeadline, Mode::Exclusive) => ("exclusive_until_async", Some(index)),
            (Flavor::AsyncDeadline, Mode::Shared) => ("shared_until_async", Some(index)),
            (Flavor::Blocking | Flavor::Async, Mode::Upgradable) => ("upgradable", None),
            (Flavor::Deadline | Flavor::AsyncDeadline, Mode::Upgradable) => {
                ("upgradable_until", Some(index))
            }
            (_, Mode::Optimistic) => unreachable!("a mixed chain has no optimistic level"),
        };
        let suffix = if unheld { "_unheld" } else { "" };
        let function: syn::Path =
            syn::parse_str(&format!("__cl::{function}{suffix}")).expect("a path");
        let dot_await = self.is_async().then(|| quote!(.await));
        let declared = level.index;
        let probe = quote!(&__CL_LEVELS[#declared]);
        // `__rec`: whether this call records, bound once per call by `recording_branches`.
        match deadline {
            None => quote!(#function(__rec, #handle, #probe) #dot_await),
            Some(index) => quote!(#function(__rec, #handle, deadline, #index, #probe) #dot_await ?),
        }
    }

    /// Wraps a generated method so that, with chainlock's `telemetry` feature, it is
    /// `#[track_caller]` (the sites the telemetry records are the user's calls): blocking
    /// flavors only (`#[track_caller]` does nothing on an `async fn`).
    pub(super) fn tracked(self, method: TokenStream) -> TokenStream {
        if self.is_async() {
            method
        } else {
            quote!(__cl::tracked! { #method })
        }
    }
}

/// What an async flavor needs of the runtime, for its docs.
pub(super) fn runtime_note(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::AsyncDeadline => {
            " Panics when first polled outside a Tokio runtime with timers enabled (the deadline \
             is a `tokio::time` sleep; `#[tokio::main]` and `#[tokio::test]` enable them)."
        }
        _ => "",
    }
}

/// Wraps a descent's body (every acquisition in it; the whole body of the method that
/// the result ends) so that the telemetry is asked once
/// per call, not at each level: `__private::recording_branches!` binds `__rec` and runs the
/// body recording or not (the body appears twice with the telemetry feature, once without).
/// The body is a descent's: its value a `Res` (a blocking body's recording copy is a closure).
/// `levels`: how many acquisitions the body makes at most (`None`: not known), so that a
/// call none of whose acquisitions the sampler picks runs without hooks.
pub(super) fn recording_branches(
    flavor: Flavor,
    levels: Option<usize>,
    body: &TokenStream,
) -> TokenStream {
    let levels = levels
        .and_then(|levels| u32::try_from(levels).ok())
        .map_or_else(|| quote!(__cl::u32::MAX), |levels| quote!(#levels));
    // With braces, in statement position (the end of the method's body): without the
    // telemetry feature the body's statements are the method's.
    if flavor.is_async() {
        quote!(__cl::recording_branches! { async __rec, #levels => #body })
    } else {
        quote!(__cl::recording_branches! { __rec, #levels => #body })
    }
}

/// [`recording_branches`] of a body that begins by binding its steps `__s` (`__private::Steps`
/// or `AsyncSteps`, `steps` their constructor with `@rec` where the record-or-not goes): the
/// macro binds them, one line less in every body.
pub(super) fn recording_steps(
    flavor: Flavor,
    levels: usize,
    steps: &TokenStream,
    body: &TokenStream,
) -> TokenStream {
    let levels =
        u32::try_from(levels).map_or_else(|_| quote!(__cl::u32::MAX), |levels| quote!(#levels));
    let asyncness = flavor.is_async().then(|| quote!(async));
    quote!(__cl::recording_branches! { #asyncness let __s = #steps, #levels => #body })
}
