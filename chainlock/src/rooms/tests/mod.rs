//! loom models of the rooms lock (run with RUSTFLAGS="--cfg loom").
mod loom_rooms;
