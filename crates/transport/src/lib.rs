//! Transports: bytes on a socket ⇄ the neutral request. Transports call the
//! pipeline and never the runtime.

#![deny(missing_docs)]

mod a2a;
pub mod binary;
mod error;
mod http;
mod ingress;
pub mod nats;
mod routes;
mod serve;
pub mod slots;
mod stall;
pub mod tls;

pub use error::ApiError;
pub use ingress::AppState;
pub use routes::router;
pub use serve::serve;
pub use tls::{ServerTls, ServerTlsError};
