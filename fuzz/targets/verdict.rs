//! Fuzz target: `wharf::fuzzing::verdict` (see host/src/fuzzing.rs).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        wharf::fuzzing::verdict(data);
    });
}
