//! scaleset-store (work in progress).
