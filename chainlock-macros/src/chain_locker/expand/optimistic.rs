//! The `optimistic` levels of a fixed chain: the passes of optimistic lock coupling over the
//! chain's first levels (`__private::optimistic`, one closure run per pass), ending at the
//! first locked level, after which the descent goes on as in every other mode.

use super::super::validate::Mode;
use super::LevelCode;
use super::literal;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// How many of the chain's first levels are optimistic (validated: a prefix, never the leaf).
pub(super) fn optimistic_levels(levels: &[LevelCode<'_>]) -> usize {
    levels
        .iter()
        .take_while(|level| level.mode == Mode::Optimistic)
        .count()
}

/// Where the passes end, at level `optimistic` (the first locked one).
pub(super) enum End {
    /// It is taken (with the descent's strategy `__w`, its hold as the tokens say) before
    /// its optimistic parent validates: the passes give its guard and record.
    Take(TokenStream),
    /// Its lock is only found (`lock_leaves`): the passes give its `Arc`, cloned once its
    /// parent validated.
    Find,
}

/// The expression (a `Res`) that runs the passes over the first `optimistic` levels: at each,
/// its version read (`__p.root`, `__p.child`, which validates the parent after the child's
/// version is read), its closed check and its stage's answer validated before they are acted
/// on (`check`); then the end. Each pass runs the stages again (`FnMut`); a pass that meets a
/// writer is thrown away, and after the restart bound the pass is pessimistic (the same
/// steps, each optimistic level held shared).
pub(super) fn passes(levels: &[LevelCode<'_>], optimistic: usize, end: &End) -> TokenStream {
    let seen = |index: usize| format_ident!("__o{}", index);
    let mut steps = Vec::new();
    for level in &levels[..optimistic] {
        let (index, at) = (level.index, literal(level.index));
        let here = seen(index);
        steps.push(match index.checked_sub(1) {
            None => quote!(let #here = __p.root(root)?;),
            Some(parent) => {
                let parent = seen(parent);
                quote!(let #here = __p.child(#parent, __next, #at)?;)
            }
        });
        let (stage, child) = (format_ident!("stage{}", index), literal(index + 1));
        steps.push(quote! {
            #here.check((&__cl::ClosedProbe(#here.data(), #at)).open())?;
            let __next = #here.check(__cl::found(#stage(#here.data(), __pin), #child))?;
        });
    }
    let parent = seen(optimistic - 1);
    let end = match end {
        End::Take(taken_as) => {
            let first = &levels[optimistic];
            let (guard, held, step, at) = (
                &first.guard,
                &first.held,
                first.step(),
                literal(first.index),
            );
            quote! {
                let (#guard, #held) = __cl::Steps(__w, __rec, &__CL_LEVELS).#step(#taken_as, __next, #at)?;
                #parent.validate()?;
                (&__cl::ClosedProbe(&*#guard, #at)).open()?;
                __cl::Ok((#guard, #held))
            }
        }
        End::Find => quote!(__cl::leaf_found(#parent, __next)),
    };
    // The optimistic levels' stages, lent to each pass in turn (the two bodies are two
    // closures, which cannot both borrow them).
    let stages: Vec<_> = levels[..optimistic]
        .iter()
        .map(|level| format_ident!("stage{}", level.index))
        .collect();
    let body = quote! {
        |__p, __pin, (#(#stages,)*)| {
            #(#steps)*
            #end
        }
    };
    // The same pass twice: optimistic (versions), then pessimistic (shared holds), each
    // knowing its kind at compile time.
    quote! {
        __cl::optimistic(__w, __rec, &__CL_LEVELS, &mut (#(#stages,)*), #body, #body)
    }
}
