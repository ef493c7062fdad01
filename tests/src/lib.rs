//! Helpers for scaleset's whole-system tests.
