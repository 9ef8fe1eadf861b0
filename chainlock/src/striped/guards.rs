//! The stripes one bulk call holds together.

use std::fmt;

/// Guards of the stripes locked by one bulk call, in ascending stripe order.
///
/// Dropping it releases every stripe. Returned by the bulk calls of
/// [`Striped`](super::Striped): `lock_all`, `read_all`, `write_all`, `acquire_all` and
/// their `try_`, `try_…_for` and `try_…_until` forms. It has `len`, `is_empty`,
/// `into_guards`, as every multi-hold guard of chainlock, plus the stripe indices.
#[must_use = "if unused the locks will immediately unlock"]
#[clippy::has_significant_drop]
pub struct StripeGuards<G> {
    /// `(stripe index, guard)`, strictly ascending by index.
    pub(super) guards: Vec<(usize, G)>,
}

impl<G> StripeGuards<G> {
    /// The number of distinct stripes held.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(1);
    /// assert_eq!(locks.lock_all(["a", "b"]).len(), 1); // one stripe holds both
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether no stripe is held (no keys were given).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(4);
    /// assert!(locks.lock_all(Vec::<u32>::new()).is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// The indices of the held stripes, strictly ascending.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(16);
    /// let held = locks.lock_all(["c", "a", "b"]);
    /// assert_eq!(held.stripes(), locks.indices_of(["a", "b", "c"]));
    /// ```
    #[must_use]
    pub fn stripes(&self) -> Vec<usize> {
        self.guards.iter().map(|(index, _)| *index).collect()
    }

    /// The guard of stripe `index`, if it is held.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<u32>> = Striped::new(4);
    /// let held = totals.lock_all(["a"]);
    /// assert_eq!(held.get(totals.index_of("a")).map(|guard| **guard), Some(0));
    /// ```
    #[must_use]
    pub fn get(&self, index: usize) -> Option<&G> {
        self.position(index).map(|at| &self.guards[at].1)
    }

    /// The guard of stripe `index`, mutably, if it is held (to reach the guarded data).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<u32>> = Striped::new(4);
    /// let mut held = totals.lock_all(["a", "b"]);
    /// **held.get_mut(totals.index_of("a")).unwrap() += 1;
    /// drop(held);
    /// assert_eq!(*totals.lock("a"), 1);
    /// ```
    #[must_use]
    pub fn get_mut(&mut self, index: usize) -> Option<&mut G> {
        self.position(index).map(|at| &mut self.guards[at].1)
    }

    /// `(stripe index, guard)` pairs in ascending index order.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<u32>> = Striped::new(4);
    /// let held = totals.lock_all(["a", "b"]);
    /// let sum: u32 = held.iter().map(|(_, guard)| **guard).sum();
    /// assert_eq!(sum, 0);
    /// ```
    #[must_use]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (usize, &G)> {
        self.guards.iter().map(|(index, guard)| (*index, guard))
    }

    /// `(stripe index, guard)` pairs in ascending index order, guards mutable.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let totals: Striped<Mutex<usize>> = Striped::new(4);
    /// let mut held = totals.lock_all(["a", "b"]);
    /// for (index, guard) in held.iter_mut() {
    ///     **guard = index;
    /// }
    /// drop(held);
    /// assert_eq!(*totals.lock("a"), totals.index_of("a"));
    /// ```
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (usize, &mut G)> {
        self.guards.iter_mut().map(|(index, guard)| (*index, guard))
    }

    /// The individual guards, in ascending stripe order (the order of
    /// [`stripes`](Self::stripes)), to release them one by one.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::parking_lot::Mutex;
    /// use chainlock::striped::Striped;
    ///
    /// let locks: Striped<Mutex<()>> = Striped::new(64);
    /// let held = locks.lock_all(["a", "b"]);
    /// let first = held.stripes()[0];
    /// let mut guards = held.into_guards();
    /// drop(guards.remove(0)); // release the first stripe early
    /// assert!(locks.stripe(first).unwrap().try_lock().is_some());
    /// ```
    #[must_use]
    pub fn into_guards(self) -> Vec<G> {
        self.guards.into_iter().map(|(_, guard)| guard).collect()
    }

    fn position(&self, index: usize) -> Option<usize> {
        self.guards.binary_search_by_key(&index, |(at, _)| *at).ok()
    }
}

impl<G> fmt::Debug for StripeGuards<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StripeGuards")
            .field("stripes", &self.stripes())
            .finish()
    }
}
