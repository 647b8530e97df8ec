//! Rust bindings for Wharf's `agent` world, generated once so each agent
//! crate only implements [`Guest`] and calls [`export_agent!`].
//!
//! ```ignore
//! struct Echo;
//! impl wharf_guest::Guest for Echo {
//!     fn handle(req: Request) -> Result<Response, Error> { /* … */ }
//!     fn describe() -> Card { /* … */ }
//!     fn health() -> Health { Health::Ok }
//! }
//! wharf_guest::export_agent!(Echo);
//! ```

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "agent",
        pub_export_macro: true,
        export_macro_name: "export_agent",
        default_bindings_module: "wharf_guest::bindings",
    });
}

pub use bindings::wharf::plugin::host::{self, Level, config, log};
pub use bindings::wharf::plugin::types::Skill;
pub use bindings::{Card, Error, Guest, Health, Request, Response, export_agent};

impl Card {
    /// A card with no skills.
    pub fn simple(name: &str, version: &str, description: &str) -> Self {
        Card {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            skills: Vec::new(),
        }
    }
}

impl Response {
    /// A response with a status, no headers and a body.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}
