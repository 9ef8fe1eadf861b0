//! What an election's observers are told: [`Leader`] (the value and token of the candidacy
//! that leads now) and the [`Publisher`] an observing task sends leaders with. A leaf of the
//! module: the seam (`backend.rs`) passes these, so they import nothing of it.

use super::super::FencingToken;
#[cfg(doc)]
use super::super::LockClient;
#[cfg(doc)]
use super::LeaderWatch;
use std::fmt;
use tokio::sync::watch;

/// The leader of a name as an observer sees it ([`LockClient::leader`], [`LeaderWatch`]): the
/// value it proclaimed and its fencing token.
///
/// # Examples
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
/// let client = chainlock::distributed::LockClient::file(&dir)?;
/// let leadership = client.blocking_campaign("scheduler", "10.0.0.7:8080")?;
/// let leader = client.blocking_leader("scheduler")?.expect("a leader");
/// assert_eq!(leader.value(), b"10.0.0.7:8080");
/// assert_eq!(leader.token(), leadership.token());
/// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), chainlock::distributed::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Leader {
    pub(crate) value: Vec<u8>,
    pub(crate) token: FencingToken,
}

impl fmt::Debug for Leader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leader")
            .field("value", &String::from_utf8_lossy(&self.value))
            .field("token", &self.token)
            .finish()
    }
}

impl Leader {
    /// The value the leader campaigned with, or proclaimed since.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let _leadership = client.blocking_campaign("scheduler", "10.0.0.7:8080")?;
    /// let leader = client.blocking_leader("scheduler")?.expect("a leader");
    /// assert_eq!(std::str::from_utf8(leader.value()), Ok("10.0.0.7:8080"));
    /// # drop(_leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// The leader's fencing token ([`Leadership::token`](super::Leadership::token)): a later leader's is greater.
    ///
    /// # Examples
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("chainlock-doc-{}-{}", line!(), std::process::id()));
    /// let client = chainlock::distributed::LockClient::file(&dir)?;
    /// let leadership = client.blocking_campaign("scheduler", "a")?;
    /// let token = client.blocking_leader("scheduler")?.expect("a leader").token();
    /// assert_eq!(token, leadership.token());
    /// # drop(leadership); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chainlock::distributed::Error>(())
    /// ```
    #[must_use]
    pub fn token(&self) -> FencingToken {
        self.token
    }
}

/// The sending side of a [`LeaderWatch`], owned by the observing task: publishes a leader only
/// if it differs from the latest and is not older (by token) than any leader published before.
pub(crate) struct Publisher {
    sender: watch::Sender<Option<Leader>>,
    /// The highest token published so far.
    highest: Option<FencingToken>,
}

impl Publisher {
    /// A publisher whose first value is `now` (seen already by the receiver's holder), and
    /// the receiver a [`LeaderWatch`] wraps.
    pub(crate) fn new(now: Option<Leader>) -> (Self, watch::Receiver<Option<Leader>>) {
        let highest = now.as_ref().map(Leader::token);
        let (sender, receiver) = watch::channel(now);
        (Self { sender, highest }, receiver)
    }

    /// Publishes `leader` (see the type's docs).
    pub(crate) fn publish(&mut self, leader: Option<Leader>) {
        if let Some(new) = &leader {
            if self.highest.is_some_and(|highest| new.token < highest) {
                return;
            }
            self.highest = Some(new.token);
        }
        self.sender.send_if_modified(|now| {
            if *now == leader {
                false
            } else {
                *now = leader;
                true
            }
        });
    }

    /// Completes when every [`LeaderWatch`] is gone.
    pub(crate) async fn closed(&self) {
        self.sender.closed().await;
    }

    /// Whether every [`LeaderWatch`] is gone.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))] // used by the etcd observer
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}
