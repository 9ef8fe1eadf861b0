//! loom models of the recording path.
