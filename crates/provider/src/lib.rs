//! scaleset-provider (work in progress).
