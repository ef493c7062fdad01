//! scaleset-adopt (work in progress).
