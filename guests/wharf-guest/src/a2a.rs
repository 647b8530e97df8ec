//! Rust bindings for the `a2a-agent` world: an agent that also runs A2A
//! tasks. Implement [`crate::Guest`] (its `handle`, `describe`, `health`)
//! and [`Guest`] (`on_message`) on one type and call [`export_a2a_agent!`].
//!
//! ```ignore
//! struct Scribe;
//! impl wharf_guest::Guest for Scribe { /* handle, describe, health */ }
//! impl wharf_guest::a2a::Guest for Scribe {
//!     fn on_message(turn: Turn) -> Result<Outcome, Error> {
//!         working(Some(&Message::agent("reading…")));
//!         Ok(Outcome::completed("done"))
//!     }
//! }
//! wharf_guest::export_a2a_agent!(Scribe);
//! ```

pub use crate::a2a_bindings::exports::wharf::plugin::a2a_handler::Guest;
pub use crate::a2a_bindings::wharf::plugin::a2a::{
    Artifact, Content, Message, Outcome, Part, Role, Turn, TurnState, add_artifact, working,
};
pub use crate::bindings::wharf::plugin::types::Error;

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            content: Content::Text(text.into()),
            media_type: String::new(),
            filename: String::new(),
        }
    }
}

impl Message {
    /// A message from the agent with one text part; the host gives it an id.
    pub fn agent(text: impl Into<String>) -> Message {
        Message {
            message_id: String::new(),
            role: Role::Agent,
            parts: vec![Part::text(text)],
        }
    }

    /// The text of every text part, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match &p.content {
                Content::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

impl Outcome {
    /// The task is done; `text` is the answer.
    pub fn completed(text: impl Into<String>) -> Outcome {
        Outcome {
            state: TurnState::Completed,
            message: Some(Message::agent(text)),
        }
    }

    /// A direct reply: `text` answers the client as a message, and no task
    /// is kept (on a new task's first turn that reported nothing; else the
    /// task completes with it).
    pub fn reply(text: impl Into<String>) -> Outcome {
        Outcome {
            state: TurnState::DirectReply,
            message: Some(Message::agent(text)),
        }
    }

    /// The agent needs more from the client; `question` says what.
    pub fn input_required(question: impl Into<String>) -> Outcome {
        Outcome {
            state: TurnState::InputRequired,
            message: Some(Message::agent(question)),
        }
    }
}

/// An A2A agent's `handle`, `describe` and `health` are its [`crate::Guest`]
/// ones: the world's own trait forwards to them.
impl<T: crate::Guest> crate::a2a_bindings::Guest for T {
    fn handle(req: crate::Request) -> Result<crate::Response, Error> {
        <T as crate::Guest>::handle(req)
    }

    fn describe() -> crate::Card {
        <T as crate::Guest>::describe()
    }

    fn health() -> crate::Health {
        <T as crate::Guest>::health()
    }
}
