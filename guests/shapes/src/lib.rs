//! `shapes`: benchmark fixture exporting one echo through several record
//! shapes, so their costs can be compared on the same guest.

// The naive shape's generated export glue takes one argument per flattened
// field; that cost is what this fixture exists to measure.
#![allow(clippy::too_many_arguments)]

wit_bindgen::generate!({ path: "wit", world: "shapes" });

struct Shapes;

impl Guest for Shapes {
    fn noop() {}

    fn echo_naive(req: NaiveRequest) -> NaiveResponse {
        NaiveResponse {
            status: 200,
            headers: req.headers,
            body: req.body,
        }
    }

    fn echo_packed(req: PackedRequest) -> PackedResponse {
        PackedResponse {
            status: 200,
            headers: req.headers,
            body: req.body,
        }
    }

    fn echo_compact(req: CompactRequest) -> PackedResponse {
        PackedResponse {
            status: 200,
            headers: Vec::new(),
            body: req.body,
        }
    }

    fn echo_body(body: Vec<u8>) -> Vec<u8> {
        body
    }
}

export!(Shapes);
