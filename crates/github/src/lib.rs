//! scaleset-github (work in progress).
