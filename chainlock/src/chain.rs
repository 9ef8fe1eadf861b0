//! Hand-over-hand chain locking (to be written).
