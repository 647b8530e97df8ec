//! What a name of an agent, a filter or a pipeline may be: the stem of a
//! file in the agents directory.

/// Longest agent name accepted.
pub const MAX_NAME_LEN: usize = 64;

/// Agent names are file stems: 1–64 of `A-Z a-z 0-9 - _ .`, not starting with `.`.
pub fn valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names() {
        assert!(valid_agent_name("echo"));
        assert!(valid_agent_name("my-agent_2.v1"));
        assert!(!valid_agent_name(""));
        assert!(!valid_agent_name(".hidden"));
        assert!(!valid_agent_name("with space"));
        assert!(!valid_agent_name("ünï"));
        assert!(!valid_agent_name(&"a".repeat(65)));
    }
}
