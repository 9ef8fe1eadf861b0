//! Code generation: a zero-sized locker type with one method per way to descend.
//!
//! For a chain of `n` levels the locker gets, for each flavor (blocking, deadline, async,
//! async with deadline), a `descend*` method that returns the leaf's owned guard and a
//! `run*` method that runs a last closure on the leaf. Those are thin wrappers, and so are
//! the key-path methods (their keys the body's stages as they are): the descent itself is
//! written once per kind of waiting, a function beside the locker's `impl` (`fixed.rs`:
//! `__descend`, given the runtime's `Blocking` strategy or a deadline, which `lock_leaves`
//! shares, its leaf only found; `__descend_async`, given an optional deadline), the
//! straight-line hand-over-hand sequence a careful person writes by hand: lock level
//! `i + 1` while level `i` is still held, only then release level `i`. The telemetry is
//! asked once per call, in the body. Mixed chains (`mixed.rs`) keep a body per flavor.

mod fixed;
mod flavor;
mod keys;
mod leaves;
mod mixed;
mod optimistic;

use super::validate::{Mode, Valid, ValidLevel, ValidLocker};
use fixed::{body_method, descend_method, run_method};
use flavor::Flavor;
use keys::keys_methods;
use leaves::lock_leaves_methods;
use mixed::mixed_locker;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::Type;
use syn::ext::IdentExt;

pub(crate) fn expand(valid: &Valid<'_>) -> TokenStream {
    let lockers = valid
        .lockers
        .iter()
        .map(|named| locker(&valid.krate, named));
    if valid.anonymous {
        let ident = &valid.lockers[0].ident;
        quote! {{ #(#lockers)* #ident }}
    } else {
        let carried = lockers
            .zip(&valid.lockers)
            .map(|(items, named)| carried(&valid.krate, named.attrs, &named.ident, &items));
        carried.collect()
    }
}

/// A named locker's items as one struct item of its name that carries them:
/// `#[__private::chain_locker_items(items)] struct Name;` expands to `items`. Where a struct
/// cannot be (inside an `impl` or a trait), the carrier is one error, "struct is not
/// supported in `trait`s or `impl`s", at the locker's name, and the items, never seen, add
/// none of their own. The locker's `#[cfg(..)]`s go on the carrier too: configured out, it
/// vanishes whole.
pub(crate) fn carried(
    krate: &TokenStream,
    attrs: &[syn::Attribute],
    ident: &Ident,
    items: &TokenStream,
) -> TokenStream {
    let span = ident.span();
    let (keyword, semi) = (quote_spanned!(span=> struct), quote_spanned!(span=> ;));
    let cfgs = super::ast::cfgs(attrs);
    quote! {
        #(#cfgs)*
        #[#krate::__private::chain_locker_items(#items)]
        #keyword #ident #semi
    }
}

/// The locker struct and its methods, in one `impl`: the blocking flavors always, the async
/// ones inside `if_tokio!`, which keeps them only when chainlock's `tokio` feature is on.
pub(crate) fn locker(krate: &TokenStream, locker: &ValidLocker<'_>) -> TokenStream {
    let ValidLocker {
        attrs, vis, ident, ..
    } = locker;
    let traits = locker_traits(ident);
    let mut levels: Vec<LevelCode<'_>> = locker
        .levels
        .iter()
        .enumerate()
        .map(LevelCode::new)
        .collect();
    name_lock_params(ident, &mut levels);
    let depth = levels.len();
    let docs = Docs::new(krate, &levels);
    // One body per kind of waiting (blocking, async), the public methods thin wrappers.
    let methods = |flavors: &[Flavor]| -> TokenStream {
        let wrappers = flavors.iter().map(|flavor| {
            let descend = descend_method(vis, &levels, *flavor, &docs);
            let run = run_method(vis, &levels, *flavor);
            let keys = (levels.len() > 1).then(|| keys_methods(vis, &levels, *flavor, &docs));
            quote! { #descend #run #keys }
        });
        quote! { #(#wrappers)* }
    };
    let repeated = locker.levels.iter().position(|level| level.repeated);
    if let Some(repeated) = repeated {
        return mixed_locker(krate, locker, &levels, repeated, &docs);
    }
    let allows = impl_allows(true);
    let blocking = methods(&[Flavor::Blocking, Flavor::Deadline]);
    let blocking_body = body_method(&levels, false);
    // No async lock has an upgradable mode, and an optimistic level's pessimistic pass parks
    // the thread (its epoch guard is not `Send`): such chains are blocking only.
    let (async_body, asynchronous) = if locker
        .levels
        .iter()
        .any(|level| matches!(level.mode, Mode::Upgradable | Mode::Optimistic))
    {
        (TokenStream::new(), TokenStream::new())
    } else {
        let methods = methods(&[Flavor::Async, Flavor::AsyncDeadline]);
        let body = body_method(&levels, true);
        (
            quote!(__cl::if_tokio! { #body }),
            quote!(__cl::if_tokio! { #methods }),
        )
    };
    let lock_leaves = lock_leaves_methods(vis, &levels, &docs);
    let levels_static = levels_static(ident, &levels);
    let impl_doc = format!(
        "Generated by [`chain_locker!`](macro@{krate}::chain_locker), whose page has runnable \
         examples of every method (`descend`, `run`, their `_keys`, `_until` and async flavors, \
         `lock_leaves`).",
        krate = docs.krate
    );
    // The bodies are functions of the block, beside the locker's one `impl` of thin
    // wrappers; the lints the block allows hold for both.
    quote! {
        #(#attrs)*
        #vis struct #ident;

        #allows
        const _: () = {
            use #krate::__private as __cl;
            #traits
            #levels_static
            use __cl::{ProbeNode as _, ProbeOther as _, StageS as _, StageU as _, StageX as _};
            #blocking_body
            #async_body

            #[doc = #impl_doc]
            impl #ident {
                /// The number of levels of this chain, root included.
                #vis const DEPTH: usize = #depth;

                #blocking
                #lock_leaves
                #asynchronous
            }
        };
    }
}

/// `<__L0 as Link<Parent, Child>>`: the step from `parent` to `child` of a key path, named
/// through the root's lock type (see `__private::Link`).
fn link(root_lock: &TokenStream, parent: &LevelCode<'_>, child: &LevelCode<'_>) -> TokenStream {
    let (parent_ty, child_ty) = (parent.ty, child.ty);
    quote!(<#root_lock as __cl::Link<#parent_ty, #child_ty>>)
}

/// `3`, not `3usize`: indices as a person writes them.
pub(super) fn literal(index: usize) -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(index)
}

/// `__CL_LEVELS`: what the telemetry calls each level (`LockName::Level`: the locker, the
/// level's place, its type), one `__private::Level` each, which the acquisitions are given.
/// Without chainlock's `telemetry` feature nothing reads the names, and `__private::levels!`
/// leaves them out (the levels are zero-sized).
fn levels_static(ident: &Ident, levels: &[LevelCode<'_>]) -> TokenStream {
    let locker = ident.to_string();
    let depth = levels.len();
    let depth = literal(depth);
    let entries = levels.iter().map(|level| {
        let (index, name) = (literal(level.index), crate::text::text(level.ty));
        quote!(#locker #index #name)
    });
    // Through `__private::levels!`, which names them only with the telemetry feature.
    quote! {
        __cl::levels!(__cl, __CL_LEVELS: [#(#entries),*; #depth]);
    }
}

/// `Clone`, `Copy`, `Debug` and `Default` for the locker, written inside the block that
/// imports the runtime crate once: a wrong `crate = "..."` path is then one unresolved
/// import, not one error more per derive.
fn locker_traits(ident: &Ident) -> TokenStream {
    let name = ident.to_string();
    quote! {
        #[automatically_derived]
        impl __cl::Clone for #ident {
            fn clone(&self) -> Self { *self }
        }
        #[automatically_derived]
        impl __cl::Copy for #ident {}
        #[automatically_derived]
        impl __cl::Debug for #ident {
            fn fmt(&self, f: &mut __cl::Formatter<'_>) -> __cl::FmtResult {
                f.write_str(#name)
            }
        }
        #[automatically_derived]
        impl __cl::Default for #ident {
            fn default() -> Self { #ident }
        }
    }
}

/// The lints the generated `impl` blocks allow. `private_interfaces` and `private_bounds`:
/// the methods are as visible as the locker, and a `pub` locker over private level types is
/// legitimate (it is usable where they are). `dead_code`: a user calls the methods they need
/// of the dozen generated. Written out rather than left to rustc's silence in external
/// macros, which holds only while an item's span starts in the macro's own tokens: through a
/// user's `macro_rules!` wrapper it starts at the wrapper's `pub`, and every method warned
/// once per level type (issue 23).
fn impl_allows(imports: bool) -> TokenStream {
    // On a fixed chain's block: its import of the probe and stage traits, whether or not the
    // chain needs each (one line of every locker less than an `allow` on the import).
    let imports = imports.then(|| quote!(, unused_imports));
    quote! {
        #[allow(clippy::complexity, clippy::pedantic)]
        #[allow(dead_code, private_interfaces, private_bounds #imports)]
    }
}

/// What the generated docs say about a chain: the levels, and where the runtime's items are.
struct Docs {
    /// `A (shared) → B → C`.
    summary: String,
    /// The runtime crate's path as doc links need it.
    krate: String,
}

impl Docs {
    fn new(krate: &TokenStream, levels: &[LevelCode<'_>]) -> Self {
        Docs {
            summary: summary(levels),
            krate: krate.to_string().replace(' ', ""),
        }
    }
}

/// What the generator needs to know of one level.
#[derive(Clone)]
struct LevelCode<'a> {
    index: usize,
    ty: &'a Type,
    mode: Mode,
    /// `Dir*`: the repeated level of a mixed chain.
    repeated: bool,
    /// This level's lock type: a generic parameter of the closure methods named after the
    /// level (`LectureLock`, see [`name_lock_params`]); in the
    /// key-path methods, past the root, the projection found through the parent's `Children`.
    lock: TokenStream,
    /// Whether the closure methods (`descend*`, `run*`) take `lock` as a generic parameter:
    /// every level's but an `optimistic` one below the root of a chain without a repeated
    /// level, whose lock can only be a `HybridLock` of its type, which they name instead
    /// ([`Self::public_lock`]): then a stage into it that always returns `None` still
    /// infers, and no message names a parameter the user cannot write. The bodies keep every
    /// lock a parameter (the key-path methods give them projections).
    generic: bool,
    /// The local holding this level's guard.
    guard: Ident,
    /// The local holding the telemetry's record of this level's hold (see `__private::Held`).
    held: Ident,
}

impl<'a> LevelCode<'a> {
    fn new((index, level): (usize, &ValidLevel<'a>)) -> Self {
        LevelCode {
            index,
            ty: level.ty,
            mode: level.mode,
            repeated: level.repeated,
            lock: format_ident!("__L{}", index).to_token_stream(),
            generic: true,
            guard: format_ident!("__g{}", index),
            held: format_ident!("__h{}", index),
        }
    }

    /// The lock as the closure methods name it: the parameter, or `HybridLock<T>` (see
    /// [`Self::generic`]).
    fn public_lock(&self) -> TokenStream {
        if self.generic {
            self.lock.clone()
        } else {
            let ty = self.ty;
            quote!(__cl::HybridLock<#ty>)
        }
    }

    /// `&mut T` or `&T`: what a stage running on this level receives.
    fn reference(&self) -> TokenStream {
        let ty = self.ty;
        match self.mode {
            Mode::Exclusive => quote!(&mut #ty),
            Mode::Shared | Mode::Optimistic => quote!(&#ty),
            Mode::Upgradable => {
                let lock = &self.lock;
                quote!(&mut __cl::Upgradable<#lock>)
            }
        }
    }

    /// What a stage running on this level receives in the blocking body, whose guard types
    /// are the strategy's (`__W`).
    fn body_reference(&self) -> TokenStream {
        match self.mode {
            Mode::Upgradable => {
                let lock = &self.lock;
                quote!(&mut <__W as __cl::WaitU<#lock>>::Guard)
            }
            _ => self.reference(),
        }
    }

    /// The blocking body's bound on its strategy for this level (`__private::WaitX`, ...);
    /// an optimistic level is read by the pass, not taken through the strategy.
    fn wait_trait(&self) -> TokenStream {
        match self.mode {
            Mode::Exclusive => quote!(__cl::WaitX),
            Mode::Shared => quote!(__cl::WaitS),
            Mode::Upgradable => quote!(__cl::WaitU),
            Mode::Optimistic => unreachable!("an optimistic level has no guard"),
        }
    }

    /// The blocking body's bound for this level: on its strategy `__W` (whose guard types it
    /// uses), or, optimistic, on the lock itself.
    fn body_bound(&self) -> TokenStream {
        let (lock, ty) = (&self.lock, self.ty);
        if self.mode == Mode::Optimistic {
            quote!(#lock: __cl::OptimisticLock<Target = #ty>)
        } else {
            let wait = self.wait_trait();
            quote!(__W: #wait<#lock, Target = #ty>)
        }
    }

    /// The type of the stage that runs on this level and finds `child`'s lock: `FnOnce` on
    /// the level's reference returning an owned `Arc`, or, optimistic, `FnMut` (it may run
    /// once per pass) on `&T` and the epoch guard, returning the child's `Arc` lent by them.
    /// `body`: as the blocking body sees it (its guard types the strategy's).
    fn stage_type(&self, child: &LevelCode<'_>, body: bool) -> TokenStream {
        let ty = self.ty;
        let child_lock = if body {
            child.lock.clone()
        } else {
            child.public_lock()
        };
        if self.mode == Mode::Optimistic {
            return quote! {
                impl for<'__g> __cl::FnMut(&'__g #ty, &'__g __cl::EpochGuard)
                    -> __cl::Option<&'__g __cl::Arc<#child_lock>>
            };
        }
        let reference = if body {
            self.body_reference()
        } else {
            self.reference()
        };
        quote!(impl __cl::FnOnce(#reference) -> __cl::Option<__cl::Arc<#child_lock>>)
    }

    /// The type of this level's stage as the one body of a fixed chain takes it: a
    /// `__private::StageS` (`StageX`, `StageU`) that finds `child`'s lock, so that the
    /// closure methods pass their closures and the key-path methods their keys (`(key,)`),
    /// named through the root's lock `root`; an optimistic level's as [`Self::stage_type`].
    /// `is_async`: the async body's (no upgradable level; the blocking body's upgradable
    /// guard is its strategy's).
    fn body_stage_type(
        &self,
        child: &LevelCode<'_>,
        root: &TokenStream,
        is_async: bool,
    ) -> TokenStream {
        let (ty, child_ty, child_lock) = (self.ty, child.ty, &child.lock);
        match self.mode {
            Mode::Optimistic => self.stage_type(child, !is_async),
            Mode::Shared => quote!(impl __cl::StageS<#root, #ty, #child_ty, #child_lock>),
            Mode::Exclusive => quote!(impl __cl::StageX<#root, #ty, #child_ty, #child_lock>),
            Mode::Upgradable => {
                let lock = &self.lock;
                quote!(impl __cl::StageU<#root, <__W as __cl::WaitU<#lock>>::Guard, #child_ty, #child_lock>)
            }
        }
    }

    /// How a body's end sees this level as its leaf (`__private::End`'s mode).
    fn end_mode(&self) -> TokenStream {
        match self.mode {
            Mode::Exclusive => quote!(__cl::ModeX),
            Mode::Shared => quote!(__cl::ModeS),
            Mode::Upgradable => quote!(__cl::ModeU),
            Mode::Optimistic => unreachable!("validated: never the leaf"),
        }
    }

    /// The method of `__private::Steps` (and `AsyncSteps`) that takes this level.
    fn step(&self) -> Ident {
        let name = match self.mode {
            Mode::Exclusive => "x",
            Mode::Shared => "s",
            Mode::Upgradable => "u",
            Mode::Optimistic => unreachable!("an optimistic level is read by the pass"),
        };
        Ident::new(name, Span::call_site())
    }

    /// [`Self::step`] at a level of the descent other than its declared place (below a
    /// repeated level): `Steps::x_at`, ...
    fn step_at(&self) -> Ident {
        format_ident!("{}_at", self.step())
    }

    /// The type of this level's owned guard as a descent returns it.
    fn guard_type(&self, flavor: Flavor) -> TokenStream {
        let lock = &self.lock;
        match self.mode {
            Mode::Upgradable => quote!(__cl::Upgradable<#lock>),
            Mode::Optimistic => unreachable!("validated: never the leaf"),
            Mode::Exclusive if flavor.is_async() => quote!(__cl::AXGuard<#lock>),
            Mode::Shared if flavor.is_async() => quote!(__cl::ASGuard<#lock>),
            Mode::Exclusive => quote!(__cl::XGuard<#lock>),
            Mode::Shared => quote!(__cl::SGuard<#lock>),
        }
    }

    /// Borrows this level's guard as [`Self::reference`].
    fn borrow_guard(&self) -> TokenStream {
        let guard = &self.guard;
        match self.mode {
            Mode::Exclusive => quote!(&mut *#guard),
            Mode::Shared => quote!(&*#guard),
            Mode::Upgradable => quote!(&mut #guard),
            Mode::Optimistic => unreachable!("an optimistic level has no guard"),
        }
    }
}

/// Names each level's lock parameter after the level's type, `LectureLock` for `Lecture`
/// (`Lock{i}` for a type that is not a path): what rustc prints where it cannot infer a lock
/// (a stage that always returns `None`: "consider specifying the generic argument:
/// `None::<&Arc<LectureLock>>`") and what the docs show. A name that a level's type or the
/// locker already uses, or an earlier level took, gets the level's index, then the `__L{i}`
/// no user writes.
fn name_lock_params(locker: &Ident, levels: &mut [LevelCode<'_>]) {
    fn idents(tokens: TokenStream, out: &mut Vec<String>) {
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(ident) => out.push(ident.unraw().to_string()),
                proc_macro2::TokenTree::Group(group) => idents(group.stream(), out),
                _ => {}
            }
        }
    }
    // A mixed chain keeps every lock a parameter: its key-path methods hand its closure
    // stages projections of the root's lock, which a named lock would not match.
    let mixed = levels.iter().any(|level| level.repeated);
    let mut taken = vec![locker.unraw().to_string()];
    for level in levels.iter() {
        idents(level.ty.to_token_stream(), &mut taken);
    }
    for level in levels.iter_mut() {
        let base = match level.ty {
            Type::Path(path) => path.path.segments.last().map(|last| {
                let name = last.ident.unraw().to_string();
                // Upper camel case, as a type parameter is (`my_node` → `MyNode`).
                name.split('_')
                    .map(|part| {
                        let mut chars = part.chars();
                        chars.next().map_or_else(String::new, |first| {
                            first.to_uppercase().chain(chars).collect()
                        })
                    })
                    .collect::<String>()
            }),
            _ => None,
        };
        let base = base.map_or_else(
            || format!("Lock{}", level.index),
            |base| format!("{base}Lock"),
        );
        let name = [base.clone(), format!("{base}{}", level.index)]
            .into_iter()
            .find(|name| !taken.contains(name))
            .unwrap_or_else(|| format!("__L{}", level.index));
        taken.push(name.clone());
        level.lock = Ident::new(&name, Span::call_site()).to_token_stream();
        level.generic = !(level.mode == Mode::Optimistic && level.index > 0 && !mixed);
    }
}

/// `A (shared) → B → C`, for the docs of the generated methods.
fn summary(levels: &[LevelCode<'_>]) -> String {
    levels
        .iter()
        .map(|level| {
            let ty = crate::text::text(level.ty);
            let ty = if level.repeated { format!("{ty}*") } else { ty };
            match level.mode {
                Mode::Exclusive => format!("`{ty}`"),
                Mode::Shared => format!("`{ty}` (shared)"),
                Mode::Upgradable => format!("`{ty}` (upgradable)"),
                Mode::Optimistic => format!("`{ty}` (optimistic)"),
            }
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

/// The parts of a method signature shared by `descend*` and `run*`.
struct Signature {
    generics: Vec<TokenStream>,
    params: Vec<TokenStream>,
    bounds: Vec<TokenStream>,
    stage_args: Vec<Ident>,
}

fn signature(levels: &[LevelCode<'_>], flavor: Flavor) -> Signature {
    let generics: Vec<TokenStream> = levels
        .iter()
        .filter(|level| level.generic)
        .map(|level| level.lock.clone())
        .collect();
    let root_lock = &levels[0].lock;
    let mut params = vec![quote!(root: &__cl::Arc<#root_lock>)];
    if flavor.has_deadline() {
        params.push(quote!(deadline: __cl::Instant));
    }
    let bounds: Vec<TokenStream> = levels
        .iter()
        .filter(|level| level.generic)
        .map(|level| {
            let (lock, ty) = (&level.lock, level.ty);
            let lock_trait = flavor.lock_trait(level.mode);
            quote!(#lock: #lock_trait<Target = #ty> + ?__cl::Sized)
        })
        .collect();
    let mut stage_args = Vec::new();
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let stage = format_ident!("stage{}", parent.index);
        let stage_type = parent.stage_type(child, false);
        params.push(quote!(#stage: #stage_type));
        stage_args.push(stage);
    }
    Signature {
        generics,
        params,
        bounds,
        stage_args,
    }
}

fn method_ident(base: &str, flavor: Flavor) -> Ident {
    Ident::new(&format!("{base}{}", flavor.suffix()), Span::call_site())
}
