//! A personal access token as the client sends it, `Authorization: Bearer <token>`: the one
//! rule of what a token may hold, used by every door that takes one (the API, the
//! configuration file, a `token_file` read again at rotation) so that a token the client could
//! never send is refused where it is given.

use http::HeaderValue;

/// A token that cannot be sent in an HTTP header; the message never quotes the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the token holds {what}, which cannot be sent in an HTTP header; give the token alone, on \
     one line"
)]
pub struct UnsendableToken {
    /// The kind of character in the way (`a line break (CR or LF)`, `the control character
    /// U+0000`).
    pub what: String,
}

/// Checks that `token` can be sent in an HTTP header ([`HeaderValue`]'s rule: no CR, LF or
/// other control character).
///
/// # Errors
///
/// [`UnsendableToken`] saying which kind of character is in the way.
pub fn check_pat(token: &str) -> Result<(), UnsendableToken> {
    if HeaderValue::from_str(&format!("Bearer {token}")).is_ok() {
        return Ok(());
    }
    let bad = token
        .chars()
        .find(|c| c.is_control() && *c != '\t')
        .unwrap_or('\u{0}');
    let what = match bad {
        '\r' | '\n' => "a line break (CR or LF)".to_owned(),
        other => format!("the control character U+{:04X}", u32::from(other)),
    };
    Err(UnsendableToken { what })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_with_a_line_break_or_control_character_cannot_be_sent() {
        assert!(check_pat("ghp_abcDEF123").is_ok());
        assert!(check_pat("github_pat_11ABC_def").is_ok());
        let injected = check_pat("ghp_a\r\nX-Evil: 1").unwrap_err().to_string();
        assert!(injected.contains("line break"), "{injected}");
        assert!(!injected.contains("ghp_a"), "{injected}");
        assert!(check_pat("ghp_a\nb").is_err());
        assert!(check_pat("ghp_a\u{7f}").is_err());
        assert!(check_pat("ghp_a\u{0}").is_err());
    }
}
