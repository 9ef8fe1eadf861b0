//! Code generation: a zero-sized locker type with one method per way to descend.
//!
//! For a chain of `n` levels the locker gets, for each flavor (blocking, deadline, async,
//! async with deadline), a `descend*` method that returns the leaf's owned guard and a
//! `run*` method that runs a last closure on the leaf. The body is the straight-line
//! hand-over-hand sequence a careful person writes by hand: lock level `i + 1` while
//! level `i` is still held, only then release level `i`.

use super::validate::{Mode, Valid, ValidLevel, ValidLocker};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::Type;

pub(crate) fn expand(valid: &Valid<'_>) -> TokenStream {
    let lockers = valid
        .lockers
        .iter()
        .map(|named| locker(&valid.krate, named));
    if valid.anonymous {
        let ident = &valid.lockers[0].ident;
        quote! {{ #(#lockers)* #ident }}
    } else {
        lockers.collect()
    }
}

/// The locker struct and its methods: the blocking flavors always, the async ones inside
/// `if_tokio!`, which keeps them only when chainlock's `tokio` feature is on.
fn locker(krate: &TokenStream, locker: &ValidLocker<'_>) -> TokenStream {
    let ValidLocker {
        attrs, vis, ident, ..
    } = locker;
    let levels: Vec<LevelCode<'_>> = locker
        .levels
        .iter()
        .enumerate()
        .map(LevelCode::new)
        .collect();
    let depth = levels.len();
    let docs = Docs::new(krate, &levels);
    let key_levels = share_repeated_steps(&levels);
    let methods = |flavors: &[Flavor]| -> TokenStream {
        flavors
            .iter()
            .map(|flavor| {
                let descend = descend_method(vis, &levels, *flavor, &docs);
                let run = run_method(vis, &levels, *flavor, &docs);
                let keys =
                    (levels.len() > 1).then(|| keys_methods(vis, &key_levels, *flavor, &docs));
                quote! { #descend #run #keys }
            })
            .collect()
    };
    let blocking = methods(&[Flavor::Blocking, Flavor::Deadline]);
    let asynchronous = methods(&[Flavor::Async, Flavor::AsyncDeadline]);
    let lock_leaves = lock_leaves_methods(vis, &key_levels, &docs);
    quote! {
        #(#attrs)*
        #[derive(#krate::__private::Clone, #krate::__private::Copy, #krate::__private::Debug, #krate::__private::Default)]
        #vis struct #ident;

        const _: () = {
            use #krate::__private as __chainlock;
            #[allow(unused_imports)]
            use __chainlock::{ProbeNode as _, ProbeOther as _};

            #[allow(clippy::too_many_arguments, clippy::type_complexity, clippy::needless_pass_by_value)]
            impl #ident {
                /// The number of levels of this chain, root included.
                #vis const DEPTH: usize = #depth;

                #blocking
                #lock_leaves
            }

            __chainlock::if_tokio! {
                #[allow(clippy::too_many_arguments, clippy::type_complexity, clippy::needless_pass_by_value)]
                impl #ident {
                    #asynchronous
                }
            }
        };
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
    /// The generic parameter for this level's lock type.
    lock: Ident,
    /// The local holding this level's guard.
    guard: Ident,
}

impl<'a> LevelCode<'a> {
    fn new((index, level): (usize, &ValidLevel<'a>)) -> Self {
        LevelCode {
            index,
            ty: level.ty,
            mode: level.mode,
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

/// For the key-path methods: a step between the same two types (`Node` → `Node`) always
/// finds the same lock type through the same `Children` impl, so later repeats reuse the
/// first one's lock parameter. Distinct parameters would make the `Children` bounds
/// ambiguous (`<Node as Children<Node>>::Lock` equal to two unrelated parameters).
fn share_repeated_steps<'a>(levels: &[LevelCode<'a>]) -> Vec<LevelCode<'a>> {
    let mut shared = levels.to_vec();
    let mut seen: Vec<(String, String, Ident)> = Vec::new();
    for child in 1..levels.len() {
        let parent_ty = levels[child - 1].ty.to_token_stream().to_string();
        let child_ty = levels[child].ty.to_token_stream().to_string();
        match seen
            .iter()
            .find(|(parent, kid, _)| *parent == parent_ty && *kid == child_ty)
        {
            Some((_, _, lock)) => shared[child].lock = lock.clone(),
            None => seen.push((parent_ty, child_ty, levels[child].lock.clone())),
        }
    }
    shared
}

/// The key type parameter of the step into `child`; a repeated step shares the first one's.
fn key_type(levels: &[LevelCode<'_>], child: &LevelCode<'_>) -> Ident {
    let first = levels
        .iter()
        .position(|level| level.lock == child.lock)
        .unwrap_or(child.index);
    format_ident!("__K{}", first - 1)
}

/// Keeps the first of each repeated generic parameter (see [`share_repeated_steps`]).
fn dedup_generics(generics: &mut Vec<TokenStream>) {
    let mut seen = Vec::new();
    generics.retain(|generic| {
        let text = generic.to_string();
        let first = !seen.contains(&text);
        seen.push(text);
        first
    });
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

    /// Acquires `level` through `handle` (the root or the handle its parent's stage found);
    /// a timed acquisition that fails returns [`Exit::TimedOut`] through `?`.
    fn acquire(self, level: &LevelCode<'_>, handle: &TokenStream) -> TokenStream {
        let index = level.index;
        let (function, deadline) = match (self, level.mode) {
            (Flavor::Blocking, Mode::Exclusive) => ("ExclusiveLock::lock_exclusive", None),
            (Flavor::Blocking, Mode::Shared) => ("SharedLock::lock_shared", None),
            (Flavor::Deadline, Mode::Exclusive) => ("exclusive_until", Some(index)),
            (Flavor::Deadline, Mode::Shared) => ("shared_until", Some(index)),
            (Flavor::Async, Mode::Exclusive) => ("AsyncExclusiveLock::lock_exclusive_async", None),
            (Flavor::Async, Mode::Shared) => ("AsyncSharedLock::lock_shared_async", None),
            (Flavor::AsyncDeadline, Mode::Exclusive) => ("exclusive_async_until", Some(index)),
            (Flavor::AsyncDeadline, Mode::Shared) => ("shared_async_until", Some(index)),
        };
        let function: syn::Path =
            syn::parse_str(&format!("__chainlock::{function}")).expect("a path");
        let dot_await = self.is_async().then(|| quote!(.await));
        match deadline {
            None => quote!(#function(#handle) #dot_await),
            Some(index) => quote!(#function(#handle, deadline, #index) #dot_await ?),
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
            quote!(#lock: #lock_trait<Target = #ty> + ?__chainlock::Sized)
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

/// How a stage finds the next lock: the user's closure, or a key lookup through `Children`.
#[derive(Clone, Copy)]
enum Stages {
    Closures,
    Keys,
}

impl Stages {
    /// The expression that runs the stage on `parent`, giving `Option<Arc<next lock>>`.
    fn call(self, parent: &LevelCode<'_>, child: &LevelCode<'_>) -> TokenStream {
        let index = parent.index;
        match self {
            Stages::Closures => {
                let stage = format_ident!("stage{}", index);
                let borrow = parent.borrow_guard();
                quote!(#stage(#borrow))
            }
            Stages::Keys => {
                let (guard, key, child_ty) =
                    (&parent.guard, format_ident!("key{}", index), child.ty);
                quote!(__chainlock::child::<#child_ty, _>(&*#guard, #key))
            }
        }
    }

    /// Whether a stage borrows its level mutably (so the guard binding needs `mut`).
    fn borrows_mutably(self, level: &LevelCode<'_>) -> bool {
        matches!(self, Stages::Closures) && level.mode == Mode::Exclusive
    }
}

/// The straight-line hand-over-hand statements that lock `levels` from the root down and
/// leave the last level's guard bound to its `guard` local.
fn hand_over_hand(levels: &[LevelCode<'_>], flavor: Flavor, stages: Stages) -> Vec<TokenStream> {
    let last = levels.len() - 1;
    let mutability = |level: &LevelCode<'_>| {
        (level.index < last && stages.borrows_mutably(level)).then(|| quote!(mut))
    };
    let root = &levels[0];
    let root_handle = if flavor.is_async() {
        quote!(<__chainlock::Arc<_> as __chainlock::Clone>::clone(root))
    } else {
        quote!(root)
    };
    let (root_guard, acquire_root, root_mut) = (
        &root.guard,
        flavor.acquire(root, &root_handle),
        mutability(root),
    );
    // A closed root behaves as absent, like any closed level.
    let open = |level: &LevelCode<'_>| {
        let (guard, index) = (&level.guard, level.index);
        quote!((&__chainlock::ClosedProbe(&*#guard, #index)).open()?;)
    };
    let root_open = open(root);
    let mut body = vec![quote! {
        let #root_mut #root_guard = #acquire_root;
        #root_open
    }];
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let find_next = stages.call(parent, child);
        let handle = if flavor.is_async() {
            quote!(__next)
        } else {
            quote!(&__next)
        };
        let acquire = flavor.acquire(child, &handle);
        let (parent_guard, child_guard, child_index, child_mut) =
            (&parent.guard, &child.guard, child.index, mutability(child));
        let child_open = open(child);
        body.push(quote! {
            let __next = __chainlock::found(#find_next, #child_index)?;
            let #child_mut #child_guard = #acquire;
            __chainlock::drop(#parent_guard);
            #child_open
        });
    }
    body
}

/// `descend*`: hand over hand to the leaf, returning its owned guard.
fn descend_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { summary, krate } = docs;
    let name = method_ident("descend", flavor);
    let Signature {
        generics,
        params,
        bounds,
        ..
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let (leaf_lock, leaf_trait, leaf_guard) =
        (&leaf.lock, flavor.guard_trait(leaf.mode), &leaf.guard);
    let asyncness = flavor.is_async().then(|| quote!(async));
    let body = hand_over_hand(levels, flavor, Stages::Closures);
    let doc = format!(
        "Locks {summary} hand over hand and returns the leaf's owned guard, with only the leaf \
         still locked.\n\nStage `i` runs on level `i` and returns the lock of level `i + 1`, which is \
         acquired before level `i` is released. `None` ends the descent with [`Exit::Absent`], and \
         so does a closed level ([`ChainNode`]), the root included{}. Every lock taken is released before \
         an `Err` is returned, and on panic.{runtime}\n\n[`Exit::Absent`]: {krate}::Exit::Absent\n\
         [`Exit::TimedOut`]: {krate}::Exit::TimedOut\n[`ChainNode`]: {krate}::ChainNode",
        if flavor.has_deadline() {
            "; a lock not taken by `deadline` with [`Exit::TimedOut`]"
        } else {
            ""
        },
        runtime = runtime_note(flavor),
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

/// Generics, parameters and bounds of the key-path methods: a key per stage instead of a
/// closure, and `Children` bounds that tie each level to the next. The bounds name the
/// methods' own generic parameters, so a chain whose types do not implement `Children`
/// still compiles; only calling these methods needs them.
fn keys_signature(levels: &[LevelCode<'_>], flavor: Flavor) -> Signature {
    let mut signature = signature(levels, flavor);
    let stage_count = levels.len() - 1;
    signature.generics.truncate(levels.len());
    signature
        .params
        .truncate(signature.params.len() - stage_count);
    signature.bounds.truncate(levels.len());
    signature.stage_args.clear();
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let key = format_ident!("key{}", parent.index);
        let key_type = key_type(levels, child);
        let (child_ty, child_lock) = (child.ty, &child.lock);
        signature.generics.push(key_type.to_token_stream());
        signature.params.push(quote!(#key: &#key_type));
        signature
            .bounds
            .push(quote!(#key_type: ?__chainlock::Sized));
        // Written on the lock's `Target` (which is `#parent_ty`) so that the bound names a
        // generic parameter: a bound on a concrete type would be checked where the locker is
        // defined, breaking every chain whose types do not implement `Children`.
        let (parent_lock, parent_trait) = (&parent.lock, flavor.guard_trait(parent.mode));
        signature.bounds.push(quote! {
            <#parent_lock as #parent_trait>::Target: __chainlock::Step<#child_ty, #key_type, #child_lock>
        });
        signature.stage_args.push(key);
    }
    dedup_generics(&mut signature.generics);
    dedup_generics(&mut signature.bounds);
    signature
}

/// `descend_keys*` and `run_keys*`: the same descents, each stage a key lookup.
fn keys_methods(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { summary, krate } = docs;
    let Signature {
        generics,
        params,
        bounds,
        ..
    } = keys_signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let (leaf_lock, leaf_trait, leaf_reference) =
        (&leaf.lock, flavor.guard_trait(leaf.mode), leaf.reference());
    let (descend, run) = (method_ident("descend", flavor), method_ident("run", flavor));
    let (descend_keys, run_keys) = (
        method_ident("descend_keys", flavor),
        method_ident("run_keys", flavor),
    );
    let asyncness = flavor.is_async().then(|| quote!(async));
    let dot_await = flavor.is_async().then(|| quote!(.await));
    let deadline_arg = flavor.has_deadline().then(|| quote!(deadline,));
    let stages = levels.windows(2).map(|pair| {
        let (child_ty, key) = (pair[1].ty, format_ident!("key{}", pair[0].index));
        let reference = pair[0].reference();
        quote!(|node: #reference| __chainlock::child::<#child_ty, _>(node, #key))
    });
    let stages: Vec<TokenStream> = stages.collect();
    let descend_doc = format!(
        "Like [`{descend}`](Self::{descend}), each stage looking the next level up by key \
         (`key{{i}}` on level `i`, through [`Children`]({krate}::chain::Children), which \
         `#[derive(ChainNode)]` implements): locks {summary} and returns the leaf's owned guard."
    );
    let run_doc = format!(
        "Like [`{run}`](Self::{run}), each stage looking the next level up by key: locks \
         {summary}, runs `leaf` on the leaf and releases it."
    );
    quote! {
        #[doc = #descend_doc]
        #[inline]
        #vis #asyncness fn #descend_keys<#(#generics),*>(&self, #(#params),*)
            -> __chainlock::Result<<#leaf_lock as #leaf_trait>::Guard, __chainlock::Exit>
        where
            #(#bounds,)*
        {
            self.#descend(root, #deadline_arg #(#stages),*) #dot_await
        }

        #[doc = #run_doc]
        #[inline]
        #vis #asyncness fn #run_keys<#(#generics,)* __F, __R>(&self, #(#params,)* leaf: __F)
            -> __chainlock::Result<__R, __chainlock::Exit>
        where
            #(#bounds,)*
            __F: __chainlock::FnOnce(#leaf_reference) -> __R,
        {
            self.#run(root, #deadline_arg #(#stages,)* leaf) #dot_await
        }
    }
}

/// `lock_leaves` and `lock_leaves_until`: several leaves by key path, all or nothing.
/// Generated for chains of two or more levels whose leaf is exclusive.
fn lock_leaves_methods(vis: &TokenStream, levels: &[LevelCode<'_>], docs: &Docs) -> TokenStream {
    let leaf = levels.last().expect("validated: at least one level");
    if levels.len() < 2 || leaf.mode == Mode::Shared {
        return TokenStream::new();
    }
    [Flavor::Blocking, Flavor::Deadline]
        .into_iter()
        .map(|flavor| lock_leaves_method(vis, levels, flavor, docs))
        .collect()
}

fn lock_leaves_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { summary, krate } = docs;
    let Signature {
        generics,
        params,
        bounds,
        stage_args: keys,
    } = keys_signature(levels, flavor);
    let (parents, leaf) = levels.split_at(levels.len() - 1);
    let leaf = &leaf[0];
    let parent = parents.last().expect("two or more levels");
    let (leaf_lock, leaf_level) = (&leaf.lock, leaf.index);
    let leaf_trait = Flavor::Blocking.lock_trait(Mode::Exclusive);
    let name = method_ident("lock_leaves", flavor);
    let lock_all = if flavor.has_deadline() {
        quote!(__chainlock::lock_leaves_until(&handles, #leaf_level, deadline))
    } else {
        quote!(__chainlock::lock_leaves(&handles, #leaf_level))
    };
    // Find each leaf's lock hand over hand down to its parent, then release everything.
    let mut find = hand_over_hand(parents, flavor, Stages::Keys);
    let find_leaf = Stages::Keys.call(parent, leaf);
    let leaf_index = leaf.index;
    find.push(quote!(__chainlock::found(#find_leaf, #leaf_index)));
    let key_types: Vec<Ident> = levels[1..]
        .iter()
        .map(|child| key_type(levels, child))
        .collect();
    let mut lifetime_bounds: Vec<TokenStream> = key_types
        .iter()
        .map(|key_type| quote!(#key_type: '__path))
        .collect();
    dedup_generics(&mut lifetime_bounds);
    let (path_item, path_pattern) = if keys.len() == 1 {
        let (key_type, key) = (&key_types[0], &keys[0]);
        (quote!(&'__path #key_type), quote!(#key))
    } else {
        (quote!((#(&'__path #key_types),*)), quote!((#(#keys),*)))
    };
    let mut params = params;
    params.truncate(params.len() - keys.len());
    let doc = format!(
        "Locks the leaves at the end of several key paths of {summary} at once, all or nothing, and \
         returns their guards in the order of `paths`.\n\nEach leaf's lock is found hand over hand \
         and its parents released; then the leaves are locked in one global order (by address), \
         holding nothing else, so that threads locking overlapping sets in any order never \
         deadlock. If any path is absent or closed{}, nothing stays locked and the \
         [`LeavesExit`]({krate}::chain::LeavesExit) names the path and why. Two paths to the same \
         leaf give [`LeavesExit::SameLeaf`]({krate}::chain::LeavesExit::SameLeaf).",
        if flavor.has_deadline() {
            ", or the deadline passes"
        } else {
            ""
        },
    );
    quote! {
        #[doc = #doc]
        #vis fn #name<'__path, #(#generics,)* __P>(&self, #(#params,)* paths: __P)
            -> __chainlock::Result<__chainlock::Vec<<#leaf_lock as #leaf_trait>::Guard>, __chainlock::LeavesExit>
        where
            #(#bounds,)*
            #leaf_lock: #leaf_trait,
            __P: __chainlock::IntoIterator<Item = #path_item>,
            #(#lifetime_bounds,)*
        {
            // Each leaf's lock, found hand over hand; every lock taken is released there.
            let handles = __chainlock::find_leaves(paths, |#path_pattern| { #(#find)* })?;
            let guards = #lock_all?;
            __chainlock::leaves_open(guards, #leaf_level, |guard| (&__chainlock::ClosedProbe(&**guard, #leaf_level)).level_is_closed())
        }
    }
}

/// `run*`: descend, then run a last closure on the leaf and release it.
fn run_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { summary, krate } = docs;
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
         leaf and releases it: `Ok` with `leaf`'s value, or the [`Exit`]({krate}::Exit) that \
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

/// What an async flavor needs of the runtime, for its docs.
fn runtime_note(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::AsyncDeadline => {
            "\n\n# Panics\n\nThe deadline is a `tokio::time` sleep: this future must run inside a Tokio \
             runtime with timers enabled (`enable_time`, on by `#[tokio::main]` and \
             `#[tokio::test]`), or it panics when first polled. The untimed `*_async` flavors \
             run on any executor."
        }
        _ => "",
    }
}
