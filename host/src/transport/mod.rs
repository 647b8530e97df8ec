//! Transports: bytes on a socket ⇄ the neutral request. Transports call the
//! pipeline and never the runtime.

mod a2a;
pub mod binary;
mod error;
mod http;
pub mod nats;
mod serve;
pub mod slots;
mod stall;

pub use error::ApiError;
pub use http::{AppState, router};
pub use serve::serve;
