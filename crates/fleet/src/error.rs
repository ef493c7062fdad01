//! The fleet operations fail with the loop's error ([`scaleset_control::Error`]): one enum
//! that the API maps to status codes once.

pub(crate) use scaleset_control::Error;
pub(crate) use scaleset_control::store_error as store;
pub(crate) use scaleset_store::chain;
