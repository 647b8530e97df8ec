//! Fuzz target: `wharf::fuzzing::config` (see host/src/fuzzing.rs).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        wharf::fuzzing::config(data);
    });
}
