//! Human units in configuration: sizes ("64MiB") and durations ("500ms").

use std::time::Duration;

/// Parses a size: a number followed by B, KiB, MiB, GiB (powers of 1024) or
/// kB, MB, GB (powers of 1000). Spaces between number and unit are allowed.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) =
        split_number(text).ok_or_else(|| format!("`{text}` is not a size such as \"64MiB\""))?;
    let factor: u64 = match unit {
        "B" | "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit `{other}` (use B, KiB, MiB, GiB, kB, MB or GB)"
            ));
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Parses a duration: a number followed by ms, s, m or h.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = split_number(text)
        .ok_or_else(|| format!("`{text}` is not a duration such as \"500ms\" or \"2s\""))?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => Ok(Duration::from_secs(number.saturating_mul(60))),
        "h" => Ok(Duration::from_secs(number.saturating_mul(3600))),
        "" => Err(format!(
            "`{text}` has no unit (write for example \"{text}ms\" or \"{text}s\")"
        )),
        other => Err(format!(
            "unknown duration unit `{other}` (use ms, s, m or h)"
        )),
    }
}

/// Formats a byte count with the largest binary unit that divides it.
pub fn format_size(bytes: u64) -> String {
    for (unit, factor) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= factor && bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes}B")
}

/// A leading whole number and the unit after it; none when there is no
/// number or it does not fit in 64 bits.
fn split_number(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number = text[..digits].parse::<u64>().ok()?;
    Some((number, text[digits..].trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_size("10kB"), Ok(10_000));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("MiB").unwrap_err().contains("not a size"));
        assert!(
            parse_size("3 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(parse_size("99999999999999999999GiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("10").unwrap_err().contains("no unit"));
        assert!(parse_duration("1.5s").is_err());
        assert!(
            parse_duration("fast")
                .unwrap_err()
                .contains("not a duration")
        );
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(64 << 20), "64MiB");
        assert_eq!(format_size(1536), "1536B");
        assert_eq!(format_size(2048), "2KiB");
        assert_eq!(format_size(1 << 30), "1GiB");
    }
}
