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
    /// It is the leaf, taken (or only found) as the body's `__hold` says
    /// (`__private::End`) by its step, which validates its optimistic parent: the passes give
    /// the body's answer.
    Leaf,
}

/// The level `index` as the descent numbers it (every `Exit`): its place in the declaration,
/// or, below a repeated level (`repeated`), that plus the repetitions below the first
/// (`__depth`, which the passes return).
pub(super) fn level_at(index: usize, repeated: Option<usize>) -> TokenStream {
    let literal = literal(index);
    match repeated {
        Some(repeated) if index > repeated => quote!(__depth + #literal),
        _ => quote!(#literal),
    }
}

/// The stages the passes run (the optimistic levels'), in the order the descent's methods
/// take them: `stage{i}`, and the repeated level's `step` before its `stage{r}`.
pub(super) fn pass_stages(optimistic: usize, repeated: Option<usize>) -> Vec<proc_macro2::Ident> {
    let mut stages = Vec::new();
    for index in 0..optimistic {
        if repeated == Some(index) {
            stages.push(format_ident!("step"));
        }
        stages.push(format_ident!("stage{}", index));
    }
    stages
}

/// The expression (a `Res`) that runs the passes over the first `optimistic` levels: at each,
/// its version read (`__p.root`, `__p.child`, which validates the parent after the child's
/// version is read), its closed check and its stage's answer validated before they are acted
/// on (`check`); then the end. Each pass runs the stages again (`FnMut`); a pass that meets a
/// writer is thrown away, and after the restart bound the pass is pessimistic (the same
/// steps, each optimistic level held shared). A mixed chain's `repeated` level among them is
/// walked by `__private::repeat` (its `step` at each repetition), and the passes give the
/// repetitions below the first (`__depth`) with their end.
pub(super) fn passes(
    levels: &[LevelCode<'_>],
    optimistic: usize,
    repeated: Option<usize>,
    end: &End,
) -> TokenStream {
    let seen = |index: usize| format_ident!("__o{}", index);
    let at = |index: usize| level_at(index, repeated);
    let mut steps = Vec::new();
    for level in &levels[..optimistic] {
        let (index, here_at) = (level.index, at(level.index));
        let here = seen(index);
        steps.push(match index.checked_sub(1) {
            None => quote!(let #here = __p.root(root)?;),
            Some(parent) if parent >= repeated.unwrap_or(usize::MAX) => {
                let (parent, declared) = (seen(parent), literal(index));
                quote!(let #here = __p.child_at(#parent, __next, #declared, #here_at)?;)
            }
            Some(parent) => {
                let parent = seen(parent);
                quote!(let #here = __p.child(#parent, __next, #here_at)?;)
            }
        });
        if repeated == Some(index) {
            steps.push(
                quote!(let (#here, __depth) = __cl::repeat(__p, #here, __pin, step, #here_at)?;),
            );
        } else {
            steps.push(quote!(#here.check((&__cl::ClosedProbe(#here.data(), #here_at)).open())?;));
        }
        let (stage, child) = (format_ident!("stage{}", index), at(index + 1));
        steps.push(quote! {
            let __next = #here.check(__cl::found(#stage(#here.data(), __pin), #child))?;
        });
    }
    let parent = seen(optimistic - 1);
    let end = match end {
        End::Take(taken_as) => {
            let first = &levels[optimistic];
            let (guard, held, at) = (&first.guard, &first.held, at(first.index));
            let out = if repeated.is_some() {
                quote!((#guard, #held, __depth))
            } else {
                quote!((#guard, #held))
            };
            let take = if repeated.is_some() {
                let (step, declared) = (first.step_at(), literal(first.index));
                quote!(#step(#taken_as, __next, #at, #declared))
            } else {
                let step = first.step();
                quote!(#step(#taken_as, __next, #at))
            };
            quote! {
                let (#guard, #held) = #parent.taken(__cl::Steps(__p.first(__w, &__carry), __rec, &__CL_LEVELS).#take)?;
                #parent.validate()?;
                (&__cl::ClosedProbe(&*#guard, #at)).open()?;
                __cl::Ok(#out)
            }
        }
        End::Leaf => {
            let leaf = &levels[optimistic];
            let (step, at) = (format_ident!("{}_end", leaf.step()), at(leaf.index));
            quote! {
                __cl::Steps(__p.first(__w, &__carry), __rec, &__CL_LEVELS)
                    .#step(__hold, __next, #at, #parent, |__g, __i| (&__cl::ClosedProbe(&**__g, __i)).open())
            }
        }
    };
    // The optimistic levels' stages, lent to each pass in turn (the two bodies are two
    // closures, which cannot both borrow them).
    let stages = pass_stages(optimistic, repeated);
    let body = quote! {
        |__p, __pin, (#(#stages,)*)| {
            #(#steps)*
            #end
        }
    };
    // The same pass twice: optimistic (versions), then pessimistic (shared holds), each
    // knowing its kind at compile time; the first locked level carried between passes
    // (waited for out of the pin).
    let first = &levels[optimistic];
    let (lock, mode) = (&first.lock, first.end_mode());
    quote! {{
        let __carry = __cl::Carry::<#lock, __W, #mode>::new();
        __cl::optimistic(__w, __rec, &__CL_LEVELS, &__carry, &mut (#(#stages,)*), #body, #body)
    }}
}
