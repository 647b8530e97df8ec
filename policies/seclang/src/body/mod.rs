//! Request body processors: multipart/form-data, JSON and XML into the
//! collections rules read (`ARGS_POST`, `FILES`, `MULTIPART_PART_HEADERS`,
//! `XML`). URL-encoded bodies are split like the query string
//! (`tx::request`). Each is bounded: arguments by the arguments limit,
//! nesting by the depth limit, and a body that does not parse sets
//! `REQBODY_ERROR` with the reason.

pub mod json;
pub mod multipart;
pub mod xml;
