//! The one total order in which multi-lock calls take their locks.
//!
//! Callers that lock several locks at once never deadlock one another when all of them
//! take the locks in one agreed order, each lock once. [`keyed`](crate::keyed) orders keys
//! by `Ord`, [`striped`](crate::striped) orders stripe indices; both go through
//! [`ascending_unique`].

/// The items of `items` in ascending order, each once: the order in which a multi-lock
/// call takes them.
pub(crate) fn ascending_unique<T: Ord>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut items: Vec<T> = items.into_iter().collect();
    items.sort_unstable();
    items.dedup();
    items
}
