//! Fuzz target: `wharf::fuzzing::frame` (see host/src/fuzzing.rs).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        wharf::fuzzing::frame(data);
    });
}
