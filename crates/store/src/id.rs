//! The row ids, one UUID newtype per aggregate. In one module of their own because the
//! aggregates refer to each other's ids (a lease names its scale set, a scale set its entity)
//! while the fenced writes of one take another's proof: with the ids here, no two aggregate
//! modules need each other.

/// Declares a UUID id newtype.
macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub uuid::Uuid);

        impl $name {
            /// A new random id.
            pub fn generate() -> Self {
                Self(uuid::Uuid::new_v4())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<uuid::Uuid> for $name {
            fn from(id: uuid::Uuid) -> Self {
                Self(id)
            }
        }
    };
}

id_type! {
    /// The id of an API token row.
    ApiTokenId
}

id_type! {
    /// The id of a credentials row.
    CredentialsId
}

id_type! {
    /// The id of an entity row.
    EntityId
}

id_type! {
    /// The id of a scale-set row.
    ScaleSetId
}
