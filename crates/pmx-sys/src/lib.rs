//! What this machine is (being written).
