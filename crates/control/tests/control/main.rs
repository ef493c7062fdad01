//! Integration tests of the control loop.
