//! The repeated level of a mixed chain read optimistically (`chain_locker!(optimistic Volume,
//! optimistic Dir*, File)`): the walk's answers to a [`Step`] (its depth limit, the cycle
//! check, closed nodes: [`Walker::follow`], as every walk) over the chain's passes
//! (`chain/optimistic.rs`: [`Pass::child_at`] reads each repetition's version, or holds it
//! shared on the pessimistic pass, and validates the one above), so that the chain's fixed
//! optimistic levels, its repetitions and its first locked level are one pass with one
//! protocol and one restart bound. `__private` re-exports [`repeat`] for the generated code.
#![expect(
    clippy::inline_always,
    reason = "a step of the generated code: must inline into it to cost nothing"
)]

use crate::chain::exit::{open, walk_exit};
use crate::chain::optimistic::{Kind, Pass, Seen, Stop};
use crate::chain::{ChainNode, EpochGuard, OptimisticLock};
use crate::telemetry::hooks::Rec;
use crate::walk::{Step, Walker};
use std::sync::Arc;

/// Walks the repeated level declared at `index`, from its first repetition `first` (begun by
/// the pass, at level `index` of the descent): at each repetition its closed check, then
/// `step`'s answer (at the repetition's depth, 0 for the first), each acted on only once the
/// repetition validates (an exit) or with the child's version read before it validates
/// (a child, [`Pass::child_at`]): [`Step::Descend`] goes on into the child, [`Step::Target`]
/// ends at the child (the step not called on it, its closed check made), [`Step::Here`] ends
/// at the repetition, [`Step::Absent`] is [`Exit::Absent`](crate::Exit::Absent) one level
/// below it; a step that hands back the repetition's own lock is
/// [`Exit::Cycle`](crate::Exit::Cycle), and [`Walker::DEFAULT_MAX_DEPTH`] repetitions below
/// the first are [`Exit::TooDeep`](crate::Exit::TooDeep). The exits name levels from the
/// chain's root, repetitions included.
///
/// Returns the last repetition, not yet validated (the stage after the repeated level runs on
/// it, and it validates once the next level is read or taken), and its depth.
///
/// # Errors
///
/// A validated exit, or [`Stop::Restart`] at `index` (every repetition counts as the
/// declared level for the telemetry).
#[inline(always)]
#[cfg_attr(feature = "telemetry", track_caller)]
pub fn repeat<'g, R, K, L, N>(
    pass: Pass<R, K>,
    first: Seen<'g, N, K>,
    pinned: &'g EpochGuard,
    mut step: impl for<'x> FnMut(&'x N, usize, &'x EpochGuard) -> Step<&'x Arc<L>>,
    index: usize,
) -> Result<(Seen<'g, N, K>, usize), Stop>
where
    R: Rec,
    K: Kind,
    L: ?Sized + OptimisticLock<Target = N> + 'g,
    N: ?Sized + ChainNode,
{
    let walker = Walker::new();
    let mut seen = first;
    let mut depth = 0;
    loop {
        seen.check(open(seen.data().is_closed(), index + depth))?;
        let answer = step(seen.data(), depth, pinned);
        let (child, is_target) = match walker.follow(answer, &mut depth, &[seen.address()]) {
            Ok(Some(next)) => next,
            Ok(None) => return Ok((seen, depth)),
            Err(exit) => return seen.check(Err(walk_exit(exit, index))),
        };
        seen = pass.child_at(seen, child, index, index + depth)?;
        if is_target {
            seen.check(open(seen.data().is_closed(), index + depth))?;
            return Ok((seen, depth));
        }
    }
}
