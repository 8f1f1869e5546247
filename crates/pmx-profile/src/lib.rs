//! # pmx-profile — from samples to hotspots
//!
//! (Being written: symbolization, hotspot tables, folded stacks, flame
//! graphs.)
