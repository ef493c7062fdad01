//! The `GARM_COMMAND` values of the external-provider protocol.

use std::fmt;

/// One operation of the GARM external-provider protocol, as passed in
/// `GARM_COMMAND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// Create an instance from the bootstrap JSON on stdin.
    CreateInstance,
    /// Delete one instance (idempotent).
    DeleteInstance,
    /// Describe one instance.
    GetInstance,
    /// List the instances of one pool.
    ListInstances,
    /// Remove every instance tagged with the controller ID.
    RemoveAllInstances,
    /// Start a stopped instance.
    StartInstance,
    /// Stop a running instance.
    StopInstance,
    /// Print the provider's version.
    GetVersion,
}

impl Command {
    /// The exact string GARM providers expect in `GARM_COMMAND`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CreateInstance => "CreateInstance",
            Self::DeleteInstance => "DeleteInstance",
            Self::GetInstance => "GetInstance",
            Self::ListInstances => "ListInstances",
            Self::RemoveAllInstances => "RemoveAllInstances",
            Self::StartInstance => "StartInstance",
            Self::StopInstance => "StopInstance",
            Self::GetVersion => "GetVersion",
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
