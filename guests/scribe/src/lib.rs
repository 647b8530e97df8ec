//! `scribe`: an agent that streams its work. Over A2A, sent text, it writes
//! the text back word by word as chunks of one artifact, then completes. A
//! few words steer it, for tests and benchmarks: `count N` streams N chunks
//! (one event each), `ping` is answered `pong` as a direct reply (a
//! message, no task; `ping slowly` reports working first), `spin` works until canceled or out of time, `fail`
//! and `reject` end the task failed or rejected, `flood` reports more
//! events than a turn may, `trap` traps.
//!
//! Over plain HTTP (`/agents/scribe`), its `handle` streams too: the words
//! of the body as server-sent events, one per word, then `event: done`.
//! Other paths exercise the streaming contract: `/plain` does not stream,
//! `/spin` streams one chunk then works until its deadline, `/overflow`
//! writes past the response-body limit, `/fail` fails after its first
//! chunk, and `/misuse` reports what `write` before `start` and a second
//! `start` answer.

use wharf_guest::a2a::{Artifact, Message, Outcome, Part, Turn, add_artifact, working};
use wharf_guest::{Card, Error, Head, Health, Request, Response, Skill, stream};

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
            ["ping"] => Ok(Outcome::reply("pong")),
            ["ping", "slowly"] => {
                working(Some(&Message::agent("thinking")));
                Ok(Outcome::reply("pong"))
            }
            ["spin"] => {
                working(Some(&Message::agent("spinning until stopped")));
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            ["sleep", n] => {
                // Blocked in a host call, out of the epoch's reach.
                let secs = n.parse().unwrap_or(30);
                std::thread::sleep(std::time::Duration::from_secs(secs));
                Ok(Outcome::completed("slept"))
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
    fn handle(req: Request) -> Result<Response, Error> {
        let head = Head::decode(&req.head).map_err(|e| Error::BadRequest(e.into()))?;
        let sse = stream::headers(&[("content-type", "text/event-stream")]);
        let text = |why: String| Error::Internal(why);
        match head.path.as_str() {
            "/plain" => Ok(Response::new(200, "not streamed\n")),
            "/spin" => {
                stream::start(200, &sse).map_err(text)?;
                stream::write(b"data: started\n\n").map_err(text)?;
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "/overflow" => {
                stream::start(200, &[]).map_err(text)?;
                let chunk = vec![b'x'; 64 * 1024];
                while stream::write(&chunk).is_ok() {}
                Ok(Response::new(200, "the end\n"))
            }
            "/fail" => {
                stream::start(200, &[]).map_err(text)?;
                stream::write(b"partial\n").map_err(text)?;
                Err(Error::Internal("asked to fail after starting".into()))
            }
            "/misuse" => {
                let early = stream::write(b"too early").unwrap_err();
                stream::start(201, &[]).map_err(text)?;
                let again = stream::start(500, &[]).unwrap_err();
                stream::write(format!("{early}\n{again}\n").as_bytes()).map_err(text)?;
                Ok(Response::new(500, "ignored status, kept body\n"))
            }
            _ => {
                let body = String::from_utf8_lossy(&req.body);
                stream::start(200, &sse).map_err(text)?;
                for word in body.split_whitespace() {
                    let event = format!("data: {}\n\n", wharf_guest::json_string(word));
                    stream::write(event.as_bytes()).map_err(text)?;
                }
                Ok(Response::new(200, "event: done\ndata: {}\n\n"))
            }
        }
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
