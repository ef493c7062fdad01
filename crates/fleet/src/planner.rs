//! The pure planners of the fleet operations: no I/O and no clock, each property-tested. The
//! fleet planner (declared fleet × store × GitHub → plan/apply steps) is [`fleet`]; whether
//! deleting a scale set deletes it on GitHub is [`deletion`]'s; what tearing the controller
//! down removes is [`decommission`]'s.

pub(crate) mod decommission;
pub(crate) mod deletion;
pub(crate) mod fleet;
