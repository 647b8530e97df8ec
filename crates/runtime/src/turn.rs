//! One turn of an A2A task in the guest: the `on-message` call, the `a2a`
//! host imports that report progress while it runs, and the conversions
//! between the protocol's model (`wharf-tasks`) and the guest's records.
//! What the turn reports goes to the turn's event channel; what it means
//! for the task is the A2A service's business, not this module's.

use std::sync::atomic::Ordering;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use wharf_a2a_model::{Artifact, Message, Part, Role, TaskState};

use super::bindings::{
    A2aHost, ContentParam, ContentResult, GuestArtifact, GuestError, GuestOutcome, GuestRole,
    GuestTurn, GuestTurnState, MessageParam, MessageResult, PartParam, PartResult,
};
use super::call::{CallError, Live, by_deadline, classify};
use super::state::GuestState;
use wharf_core::request::{Request, Turn, TurnEvent};

/// How often a turn blocked in a host call looks at its cancel flag.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Resolves once `flag` is set.
async fn canceled(flag: &std::sync::atomic::AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// Most events one turn may report; past it the turn fails.
const MAX_TURN_EVENTS: u32 = 10_000;

impl Live {
    /// Runs one turn: `on-message` on a fiber, with the turn's cancel flag
    /// checked at every epoch tick. Progress goes to the turn's channel as
    /// the guest reports it; the outcome is sent last.
    pub async fn turn_async(&mut self, req: &Request, turn: &Turn) -> Result<(), CallError> {
        if self.a2a.is_none() {
            return Err(CallError::NotFound(
                "the agent does not serve A2A (it exports no `on-message`)".into(),
            ));
        };
        self.begin(req, true);
        {
            let data = self.store.data_mut();
            data.turn = Some(super::state::TurnScope {
                events: turn.events.clone(),
                reported: 0,
            });
            data.cancel = Some(turn.cancel.clone());
        }
        // The turn is lowered from borrowed views of the task's messages;
        // only JSON data and base64 bytes are converted first.
        let messages: Vec<&Message> = turn.history.iter().chain([&turn.message]).collect();
        let staged: Vec<Vec<Staged<'_>>> = messages.iter().map(|m| stage(m)).collect();
        let parts: Vec<Vec<PartParam<'_>>> = staged
            .iter()
            .map(|s| s.iter().map(Staged::param).collect())
            .collect();
        let params: Vec<MessageParam<'_>> = messages
            .iter()
            .zip(&parts)
            .map(|(m, parts)| message_param(m, parts))
            .collect();
        let (message, history) = params.split_last().expect("the new message is last");
        let guest_turn = GuestTurn {
            task_id: &turn.task_id,
            context_id: &turn.context_id,
            message: message.clone(),
            history,
            metadata: &turn.metadata,
        };
        let a2a = self.a2a.as_ref().expect("checked above");
        let func = a2a.wharf_plugin_a2a_handler().func_on_message();
        let deadline = self.store.data().deadline_at;
        let call = func.call_async(&mut self.store, (guest_turn,));
        // The epoch sees a cancel only in wasm code; a guest blocked in a
        // host call is stopped by these. Either way `in_call` stays set and
        // the instance is abandoned.
        let result = tokio::select! {
            called = by_deadline(deadline, call) => called.ok_or(CallError::Deadline)?,
            () = canceled(&turn.cancel) => return Err(CallError::Canceled),
        }
        .map(|(r,)| r);
        self.in_call = false;
        let canceled = turn.cancel.load(Ordering::Relaxed);
        let data = self.store.data_mut();
        let scope = data.turn.take();
        data.cancel = None;
        let overflowed = scope.is_some_and(|s| s.reported > MAX_TURN_EVENTS);
        let finished = match result {
            Err(_) if canceled => return Err(CallError::Canceled),
            Err(err) => return Err(classify(&self.store, err)),
            Ok(_) if overflowed => {
                return Err(CallError::InvalidResponse(format!(
                    "the turn reported more than {MAX_TURN_EVENTS} events"
                )));
            }
            Ok(Err(guest)) => return Err(guest_error(guest)),
            Ok(Ok(outcome)) => finished(outcome)?,
        };
        let _ = turn.events.send(finished);
        Ok(())
    }
}

impl GuestState {
    fn report(&mut self, event: TurnEvent) {
        let Some(scope) = self.turn.as_mut() else {
            tracing::debug!("an A2A event outside a turn is ignored");
            return;
        };
        scope.reported += 1;
        if scope.reported <= MAX_TURN_EVENTS {
            // A closed channel means nobody waits for the turn any more.
            let _ = scope.events.send(event);
        }
    }
}

impl A2aHost for GuestState {
    fn working(&mut self, message: Option<MessageResult>) {
        self.report(TurnEvent::Working(message.map(message_from_guest)));
    }

    fn add_artifact(&mut self, artifact: GuestArtifact, append: bool, last_chunk: bool) {
        let artifact = Artifact {
            artifact_id: artifact.artifact_id,
            name: Some(artifact.name).filter(|n| !n.is_empty()),
            description: None,
            parts: artifact.parts.into_iter().map(part_from_guest).collect(),
            metadata: None,
            extensions: Vec::new(),
        };
        self.report(TurnEvent::Artifact {
            artifact,
            append,
            last_chunk,
        });
    }
}

/// How an `error` from `on-message` ends the turn: a bad request is the
/// guest refusing the work (the task is rejected, the text shown); the
/// rest fail the task.
fn guest_error(err: GuestError) -> CallError {
    match err {
        GuestError::BadRequest(m) => CallError::BadRequest(m),
        other => other.into(),
    }
}

fn finished(outcome: GuestOutcome) -> Result<TurnEvent, CallError> {
    let state = match outcome.state {
        GuestTurnState::DirectReply => {
            return match outcome.message {
                Some(message) => Ok(TurnEvent::Replied(message_from_guest(message))),
                None => Err(CallError::InvalidResponse(
                    "a direct reply must carry a message".into(),
                )),
            };
        }
        GuestTurnState::Completed => TaskState::Completed,
        GuestTurnState::InputRequired => TaskState::InputRequired,
        GuestTurnState::AuthRequired => TaskState::AuthRequired,
        GuestTurnState::Failed => TaskState::Failed,
        GuestTurnState::Rejected => TaskState::Rejected,
    };
    Ok(TurnEvent::Finished {
        state,
        message: outcome.message.map(message_from_guest),
    })
}

/// A part's content ready to be lent to the guest.
struct Staged<'a> {
    part: &'a Part,
    data: Option<String>,
    raw: Option<Vec<u8>>,
}

/// Each part's JSON data as text and base64 as bytes; the service checked
/// that `raw` is valid base64.
fn stage(m: &Message) -> Vec<Staged<'_>> {
    m.parts
        .iter()
        .map(|part| Staged {
            part,
            data: part.data.as_ref().map(|d| d.to_string()),
            raw: part
                .raw
                .as_ref()
                .map(|r| BASE64.decode(r).unwrap_or_default()),
        })
        .collect()
}

impl Staged<'_> {
    fn param(&self) -> PartParam<'_> {
        let p = self.part;
        let content = match (&p.text, &self.data, &self.raw, &p.url) {
            (Some(text), ..) => ContentParam::Text(text),
            (None, Some(data), ..) => ContentParam::Data(data),
            (None, None, Some(raw), _) => ContentParam::Raw(raw),
            (None, None, None, url) => ContentParam::Url(url.as_deref().unwrap_or("")),
        };
        PartParam {
            content,
            media_type: p.media_type.as_deref().unwrap_or(""),
            filename: p.filename.as_deref().unwrap_or(""),
        }
    }
}

fn message_param<'a>(m: &'a Message, parts: &'a [PartParam<'a>]) -> MessageParam<'a> {
    MessageParam {
        message_id: &m.message_id,
        role: match m.role {
            Role::Agent => GuestRole::Agent,
            Role::User | Role::Unspecified => GuestRole::User,
        },
        parts,
    }
}

fn message_from_guest(m: MessageResult) -> Message {
    Message {
        message_id: m.message_id,
        context_id: None,
        task_id: None,
        role: match m.role {
            GuestRole::User => Role::User,
            GuestRole::Agent => Role::Agent,
        },
        parts: m.parts.into_iter().map(part_from_guest).collect(),
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

fn part_from_guest(p: PartResult) -> Part {
    let mut part = Part {
        media_type: Some(p.media_type).filter(|m| !m.is_empty()),
        filename: Some(p.filename).filter(|f| !f.is_empty()),
        ..Part::default()
    };
    match p.content {
        ContentResult::Text(t) => part.text = Some(t),
        // JSON that does not parse is passed on as a string value.
        ContentResult::Data(d) => {
            part.data = Some(serde_json::from_str(&d).unwrap_or(serde_json::Value::String(d)))
        }
        ContentResult::Raw(bytes) => part.raw = Some(BASE64.encode(bytes)),
        ContentResult::Url(u) => part.url = Some(u),
    }
    part
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(state: GuestTurnState, text: Option<&str>) -> GuestOutcome {
        GuestOutcome {
            state,
            message: text.map(|t| MessageResult {
                message_id: String::new(),
                role: GuestRole::Agent,
                parts: vec![PartResult {
                    content: ContentResult::Text(t.into()),
                    media_type: String::new(),
                    filename: String::new(),
                }],
            }),
        }
    }

    #[test]
    fn a_direct_reply_is_its_message_and_needs_one() {
        match finished(outcome(GuestTurnState::DirectReply, Some("pong"))) {
            Ok(TurnEvent::Replied(m)) => {
                assert_eq!(m.role, Role::Agent);
                assert_eq!(m.parts[0].text.as_deref(), Some("pong"));
            }
            other => panic!("{other:?}"),
        }
        match finished(outcome(GuestTurnState::DirectReply, None)) {
            Err(CallError::InvalidResponse(why)) => assert!(why.contains("message"), "{why}"),
            other => panic!("{other:?}"),
        }
        match finished(outcome(GuestTurnState::InputRequired, None)) {
            Ok(TurnEvent::Finished { state, message }) => {
                assert_eq!(state, TaskState::InputRequired);
                assert!(message.is_none());
            }
            other => panic!("{other:?}"),
        }
    }
}
