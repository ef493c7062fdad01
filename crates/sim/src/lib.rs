//! scaleset-sim (work in progress).
