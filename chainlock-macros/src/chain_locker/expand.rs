//! Code generation: a zero-sized locker type with one method per way to descend.
//!
//! For a chain of `n` levels the locker gets, for each flavor (blocking, deadline, async,
//! async with deadline), a `descend*` method that returns the leaf's owned guard and a
//! `run*` method that runs a last closure on the leaf. The body is the straight-line
//! hand-over-hand sequence a careful person writes by hand: lock level `i + 1` while
//! level `i` is still held, only then release level `i`.

use super::ast::{Chain, Input, Level};
use super::validate::Mode;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::{Attribute, Type};

/// The identifier of the locker type of the expression form; never visible by name.
const ANONYMOUS_LOCKER: &str = "__ChainLocker";

pub(crate) fn expand(input: &Input) -> TokenStream {
    match input {
        Input::Anonymous(chain) => {
            let ident = Ident::new(ANONYMOUS_LOCKER, Span::call_site());
            let locker = locker(&[], &TokenStream::new(), &ident, chain);
            quote! {{ #locker #ident }}
        }
        Input::Named(lockers) => lockers
            .iter()
            .map(|named| {
                locker(
                    &named.attrs,
                    &named.vis.to_token_stream(),
                    &named.ident,
                    &named.chain,
                )
            })
            .collect(),
    }
}

/// The locker struct and its methods.
fn locker(attrs: &[Attribute], vis: &TokenStream, ident: &Ident, chain: &Chain) -> TokenStream {
    let levels: Vec<LevelCode<'_>> = chain
        .levels
        .iter()
        .enumerate()
        .map(LevelCode::new)
        .collect();
    let depth = levels.len();
    let summary = summary(&levels);
    let methods = Flavor::ALL.iter().map(|flavor| {
        let descend = descend_method(vis, &levels, *flavor, &summary);
        let run = run_method(vis, &levels, *flavor, &summary);
        quote! { #descend #run }
    });
    quote! {
        #(#attrs)*
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;

        const _: () = {
            use ::chainlock::__private as __chainlock;
            #[allow(unused_imports)]
            use __chainlock::{ProbeNode as _, ProbeOther as _};

            #[allow(clippy::too_many_arguments, clippy::type_complexity, clippy::needless_pass_by_value)]
            impl #ident {
                /// The number of levels of this chain, root included.
                #vis const DEPTH: usize = #depth;

                #(#methods)*
            }
        };
    }
}

/// What the generator needs to know of one level.
struct LevelCode<'a> {
    index: usize,
    ty: &'a Type,
    mode: Mode,
    /// The generic parameter for this level's lock type.
    lock: Ident,
    /// The local holding this level's guard.
    guard: Ident,
}

impl<'a> LevelCode<'a> {
    fn new((index, level): (usize, &'a Level)) -> Self {
        LevelCode {
            index,
            ty: &level.ty,
            mode: level.mode(),
            lock: format_ident!("__L{}", index),
            guard: format_ident!("__guard{}", index),
        }
    }

    /// `&mut T` or `&T`: what a stage running on this level receives.
    fn reference(&self) -> TokenStream {
        let ty = self.ty;
        match self.mode {
            Mode::Exclusive => quote!(&mut #ty),
            Mode::Shared => quote!(&#ty),
        }
    }

    /// Borrows this level's guard as [`Self::reference`].
    fn borrow_guard(&self) -> TokenStream {
        let guard = &self.guard;
        match self.mode {
            Mode::Exclusive => quote!(&mut *#guard),
            Mode::Shared => quote!(&*#guard),
        }
    }
}

/// A way of waiting for each lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Blocking,
    Deadline,
    Async,
    AsyncDeadline,
}

impl Flavor {
    const ALL: [Flavor; 4] = [
        Flavor::Blocking,
        Flavor::Deadline,
        Flavor::Async,
        Flavor::AsyncDeadline,
    ];

    fn suffix(self) -> &'static str {
        match self {
            Flavor::Blocking => "",
            Flavor::Deadline => "_until",
            Flavor::Async => "_async",
            Flavor::AsyncDeadline => "_async_until",
        }
    }

    fn is_async(self) -> bool {
        matches!(self, Flavor::Async | Flavor::AsyncDeadline)
    }

    fn has_deadline(self) -> bool {
        matches!(self, Flavor::Deadline | Flavor::AsyncDeadline)
    }

    /// The lock trait a level of `mode` must implement for this flavor.
    fn lock_trait(self, mode: Mode) -> TokenStream {
        match (self, mode) {
            (Flavor::Blocking, Mode::Exclusive) => quote!(__chainlock::ExclusiveLock),
            (Flavor::Blocking, Mode::Shared) => quote!(__chainlock::SharedLock),
            (Flavor::Deadline, Mode::Exclusive) => quote!(__chainlock::TimedExclusiveLock),
            (Flavor::Deadline, Mode::Shared) => quote!(__chainlock::TimedSharedLock),
            (Flavor::Async | Flavor::AsyncDeadline, Mode::Exclusive) => {
                quote!(__chainlock::AsyncExclusiveLock)
            }
            (Flavor::Async | Flavor::AsyncDeadline, Mode::Shared) => {
                quote!(__chainlock::AsyncSharedLock)
            }
        }
    }

    /// The trait that names the guard type (the timed traits extend the blocking ones).
    fn guard_trait(self, mode: Mode) -> TokenStream {
        match self {
            Flavor::Deadline => Flavor::Blocking.lock_trait(mode),
            _ => self.lock_trait(mode),
        }
    }

    /// Acquires `level` through `handle` (the root or the handle its parent's stage found).
    fn acquire(self, level: &LevelCode<'_>, handle: &TokenStream) -> TokenStream {
        let lock = &level.lock;
        let index = level.index;
        let lock_trait = self.lock_trait(level.mode);
        let timed_out = quote! {
            return __chainlock::Err(__chainlock::Exit::TimedOut { level: #index })
        };
        let method = match (self, level.mode) {
            (Flavor::Blocking, Mode::Exclusive) => "lock_exclusive",
            (Flavor::Blocking, Mode::Shared) => "lock_shared",
            (Flavor::Deadline, Mode::Exclusive) => "try_lock_exclusive_until",
            (Flavor::Deadline, Mode::Shared) => "try_lock_shared_until",
            (Flavor::Async, Mode::Exclusive) => "lock_exclusive_async",
            (Flavor::Async, Mode::Shared) => "lock_shared_async",
            (Flavor::AsyncDeadline, Mode::Exclusive) => "lock_exclusive_async_until",
            (Flavor::AsyncDeadline, Mode::Shared) => "lock_shared_async_until",
        };
        let method = Ident::new(method, Span::call_site());
        match self {
            Flavor::Blocking => quote!(<#lock as #lock_trait>::#method(#handle)),
            Flavor::Async => quote!(<#lock as #lock_trait>::#method(#handle).await),
            Flavor::Deadline => quote! {
                match <#lock as #lock_trait>::#method(#handle, deadline) {
                    __chainlock::Some(guard) => guard,
                    __chainlock::None => #timed_out,
                }
            },
            Flavor::AsyncDeadline => quote! {
                match <#lock as #lock_trait>::#method(#handle, deadline).await {
                    __chainlock::Some(guard) => guard,
                    __chainlock::None => #timed_out,
                }
            },
        }
    }
}

/// `A (shared) → B → C`, for the docs of the generated methods.
fn summary(levels: &[LevelCode<'_>]) -> String {
    levels
        .iter()
        .map(|level| {
            let ty = level
                .ty
                .to_token_stream()
                .to_string()
                .replace(" < ", "<")
                .replace(" >", ">")
                .replace(" :: ", "::");
            match level.mode {
                Mode::Exclusive => format!("`{ty}`"),
                Mode::Shared => format!("`{ty}` (shared)"),
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
    let mut generics: Vec<TokenStream> = levels
        .iter()
        .map(|level| level.lock.to_token_stream())
        .collect();
    let root_lock = &levels[0].lock;
    let mut params = vec![quote!(root: &__chainlock::Arc<#root_lock>)];
    if flavor.has_deadline() {
        params.push(quote!(deadline: __chainlock::Instant));
    }
    let mut bounds: Vec<TokenStream> = levels
        .iter()
        .map(|level| {
            let (lock, ty) = (&level.lock, level.ty);
            let lock_trait = flavor.lock_trait(level.mode);
            quote!(#lock: #lock_trait<Target = #ty> + ?::core::marker::Sized)
        })
        .collect();
    let mut stage_args = Vec::new();
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let stage = format_ident!("stage{}", parent.index);
        let stage_type = format_ident!("__S{}", parent.index);
        let (reference, child_lock) = (parent.reference(), &child.lock);
        generics.push(stage_type.to_token_stream());
        params.push(quote!(#stage: #stage_type));
        bounds.push(quote! {
            #stage_type: __chainlock::FnOnce(#reference) -> __chainlock::Option<__chainlock::Arc<#child_lock>>
        });
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

/// `descend*`: hand over hand to the leaf, returning its owned guard.
fn descend_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    summary: &str,
) -> TokenStream {
    let name = method_ident("descend", flavor);
    let Signature {
        generics,
        params,
        bounds,
        ..
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let (leaf_lock, leaf_trait) = (&leaf.lock, flavor.guard_trait(leaf.mode));
    let asyncness = flavor.is_async().then(|| quote!(async));

    let root = &levels[0];
    let root_handle = if flavor.is_async() {
        quote!(__chainlock::Arc::clone(root))
    } else {
        quote!(root)
    };
    let (root_guard, acquire_root) = (&root.guard, flavor.acquire(root, &root_handle));
    let mut body = vec![quote!(let #root_guard = #acquire_root;)];
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let (stage, stage_index) = (format_ident!("stage{}", parent.index), parent.index);
        let borrow = parent.borrow_guard();
        let handle = if flavor.is_async() {
            quote!(__next)
        } else {
            quote!(&__next)
        };
        let acquire = flavor.acquire(child, &handle);
        let (parent_guard, child_guard, child_index) = (&parent.guard, &child.guard, child.index);
        let mutability =
            (child.mode == Mode::Exclusive && !std::ptr::eq(child, leaf)).then(|| quote!(mut));
        body.push(quote! {
            let __next = match #stage(#borrow) {
                __chainlock::Some(next) => next,
                __chainlock::None => return __chainlock::Err(__chainlock::Exit::Absent { stage: #stage_index }),
            };
            // The child is locked while its parent is still held; only then is the parent released.
            let #mutability #child_guard = #acquire;
            ::core::mem::drop(#parent_guard);
            if (&__chainlock::ClosedProbe(&*#child_guard)).level_is_closed() {
                return __chainlock::Err(__chainlock::Exit::Closed { level: #child_index });
            }
        });
    }
    // The root guard needs `mut` when a stage borrows it mutably.
    if root.mode == Mode::Exclusive && levels.len() > 1 {
        body[0] = quote!(let mut #root_guard = #acquire_root;);
    }
    let leaf_guard = &leaf.guard;

    let doc = format!(
        "Locks {summary} hand over hand and returns the leaf's owned guard, with only the leaf \
         still locked.\n\nStage `i` runs on level `i` and returns the lock of level `i + 1`, which is \
         acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`]; a \
         closed level ([`ChainNode`]) with [`Exit::Closed`]{}. Every lock taken is released before \
         an `Err` is returned, and on panic.\n\n[`Exit::Absent`]: ::chainlock::Exit::Absent\n\
         [`Exit::Closed`]: ::chainlock::Exit::Closed\n[`Exit::TimedOut`]: ::chainlock::Exit::TimedOut\n\
         [`ChainNode`]: ::chainlock::ChainNode",
        if flavor.has_deadline() {
            "; a lock not taken by `deadline` with [`Exit::TimedOut`]"
        } else {
            ""
        },
    );
    quote! {
        #[doc = #doc]
        #[inline]
        #vis #asyncness fn #name<#(#generics),*>(&self, #(#params),*)
            -> __chainlock::Result<<#leaf_lock as #leaf_trait>::Guard, __chainlock::Exit>
        where
            #(#bounds,)*
        {
            #(#body)*
            __chainlock::Ok(#leaf_guard)
        }
    }
}

/// `run*`: descend, then run a last closure on the leaf and release it.
fn run_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    summary: &str,
) -> TokenStream {
    let name = method_ident("run", flavor);
    let descend = method_ident("descend", flavor);
    let Signature {
        mut generics,
        mut params,
        mut bounds,
        stage_args,
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let leaf_reference = leaf.reference();
    generics.extend([quote!(__F), quote!(__R)]);
    params.push(quote!(leaf: __F));
    bounds.push(quote!(__F: __chainlock::FnOnce(#leaf_reference) -> __R));
    let asyncness = flavor.is_async().then(|| quote!(async));
    let dot_await = flavor.is_async().then(|| quote!(.await));
    let deadline_arg = flavor.has_deadline().then(|| quote!(deadline,));
    let mutability = (leaf.mode == Mode::Exclusive).then(|| quote!(mut));
    let leaf_guard = &leaf.guard;
    let borrow = leaf.borrow_guard();
    let doc = format!(
        "Locks {summary} hand over hand like [`{descend}`](Self::{descend}), runs `leaf` on the \
         leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`](::chainlock::Exit) that \
         ended the descent early."
    );
    quote! {
        #[doc = #doc]
        #[inline]
        #vis #asyncness fn #name<#(#generics),*>(&self, #(#params),*) -> __chainlock::Result<__R, __chainlock::Exit>
        where
            #(#bounds,)*
        {
            let #mutability #leaf_guard = self.#descend(root, #deadline_arg #(#stage_args),*) #dot_await ?;
            __chainlock::Ok(leaf(#borrow))
        }
    }
}
