//! `scribe`: an A2A agent that streams its work. Sent text, it writes the
//! text back word by word as chunks of one artifact, then completes. A few
//! words steer it, for tests and benchmarks: `count N` streams N chunks
//! (one event each), `spin` works until canceled or out of time, `fail`
//! and `reject` end the task failed or rejected, `flood` reports more
//! events than a turn may, `trap` traps.

use wharf_guest::a2a::{Artifact, Message, Outcome, Part, Turn, add_artifact, working};
use wharf_guest::{Card, Error, Health, Request, Response, Skill};

struct Scribe;

impl wharf_guest::a2a::Guest for Scribe {
    fn on_message(turn: Turn) -> Result<Outcome, Error> {
        let text = turn.message.text();
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["count", n] => {
                let n: u32 = n
                    .parse()
                    .map_err(|_| Error::BadRequest(format!("`{n}` is not a count")))?;
                chunks("count", (0..n).map(|i| format!("{i}\n")));
                Ok(Outcome::completed(format!("counted to {n}")))
            }
            ["spin"] => {
                working(Some(&Message::agent("spinning until stopped")));
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            ["fail"] => Err(Error::Unavailable("asked to fail".into())),
            ["reject"] => Err(Error::BadRequest("I will not write that".into())),
            ["flood"] => {
                chunks("flood", (0..10_001).map(|i| i.to_string()));
                Ok(Outcome::completed("flooded"))
            }
            ["trap"] => panic!("asked to trap"),
            [] => Ok(Outcome::input_required("What shall I write?")),
            words => {
                working(Some(&Message::agent(format!(
                    "writing {} words",
                    words.len()
                ))));
                chunks("text", words.iter().map(|w| format!("{w} ")));
                Ok(Outcome::completed(format!("wrote {} words", words.len())))
            }
        }
    }
}

/// One artifact, one chunk per item.
fn chunks(id: &str, items: impl ExactSizeIterator<Item = String>) {
    let last = items.len().saturating_sub(1);
    for (i, text) in items.enumerate() {
        let artifact = Artifact {
            artifact_id: id.to_string(),
            name: id.to_string(),
            parts: vec![Part::text(text)],
        };
        add_artifact(&artifact, i > 0, i == last);
    }
}

impl wharf_guest::Guest for Scribe {
    fn handle(_req: Request) -> Result<Response, Error> {
        Ok(Response::new(200, "scribe speaks A2A at /a2a/scribe\n"))
    }

    fn describe() -> Card {
        Card {
            name: "scribe".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Writes what it is sent back, word by word, as a streamed artifact".into(),
            skills: vec![Skill {
                id: "write".into(),
                name: "Write".into(),
                description: "Streams the words it is sent back as artifact chunks".into(),
                tags: vec!["streaming".into(), "text".into()],
            }],
        }
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_a2a_agent!(Scribe);
