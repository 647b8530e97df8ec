// SQL injection blacklist checker - matches C implementation exactly

use super::sqli_data;

/// Check if a fingerprint is blacklisted
/// This matches libinjection_sqli_blacklist from the C version
pub fn is_blacklisted(fingerprint: &str) -> bool {
    // Match the C version: convert v0 fingerprint to v1 format
    // v0: up to 5 chars, mixed case  
    // v1: '0' prefix, up to 5 more chars, upper case
    
    if fingerprint.is_empty() {
        return false;
    }
    
    // Build the v1 fingerprint with '0' prefix and uppercase, on the
    // stack (a fingerprint has at most 5 tokens; a longer one, never
    // made by the tokenizer, takes the allocating path)
    let fp = fingerprint.as_bytes();
    let mut buf = [0u8; 8];
    if fp.len() < buf.len() {
        buf[0] = b'0';
        for (to, &b) in buf[1..].iter_mut().zip(fp) {
            *to = b.to_ascii_uppercase();
        }
        // Only ASCII letters changed, so the bytes are still UTF-8.
        let fp2 = core::str::from_utf8(&buf[..fp.len() + 1]).unwrap_or("");
        return sqli_data::lookup_word(fp2) == crate::sqli::TokenType::Fingerprint;
    }
    let mut fp2 = String::with_capacity(8);
    fp2.push('0');
    
    for ch in fingerprint.chars() {
        if ch >= 'a' && ch <= 'z' {
            // Convert to uppercase
            fp2.push((ch as u8 - 0x20) as char);
        } else {
            fp2.push(ch);
        }
    }
    
    // Check if this fingerprint exists in the keywords table with type 'F'
    sqli_data::lookup_word(&fp2) == crate::sqli::TokenType::Fingerprint
}