//! Errors a user can cause: every message names the setting, the bad value and what is allowed.

use thiserror::Error;

/// A configuration value outside what PCI Express (or tlpsim) allows.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// A setting with a value outside its allowed set.
    #[error("{setting} {value} is not allowed; allowed: {allowed}")]
    NotAllowed {
        /// The setting's name as the user wrote it (e.g. `width`).
        setting: &'static str,
        /// The offending value, printed as given.
        value: String,
        /// The allowed values or range, in words.
        allowed: String,
    },
    /// Two settings that cannot be used together.
    #[error("{0}")]
    Conflict(String),
}

impl ConfigError {
    /// Shorthand for [`ConfigError::NotAllowed`].
    pub fn not_allowed(
        setting: &'static str,
        value: impl ToString,
        allowed: impl ToString,
    ) -> Self {
        ConfigError::NotAllowed {
            setting,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }
}

/// Result type of every fallible tlpsim call.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// The longest run of characters without a space that an error quotes whole.
const LONGEST_WORD: usize = 160;

/// The most characters an error line holds; longer lines keep their start and end.
const LONGEST_LINE: usize = 1000;

/// `text` as one printable line: control characters escaped (`\n`, `\x1b`), any word (a run
/// without spaces, a path included) over 160 characters shortened to its start, `…` and its
/// length, and the whole line kept under 1000 characters, so a name holding a newline, an
/// escape or 10 MB reaches the terminal as a short line.
pub fn one_line(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len().min(4 * LONGEST_LINE));
    for word in text.split(' ') {
        if !escaped.is_empty() {
            escaped.push(' ');
        }
        let chars = word.chars().count();
        if chars > LONGEST_WORD {
            push_escaped(&mut escaped, word.chars().take(LONGEST_WORD / 2));
            escaped.push_str(&format!("…({chars} characters)"));
        } else {
            push_escaped(&mut escaped, word.chars());
        }
    }
    let chars: Vec<char> = escaped.chars().collect();
    if chars.len() <= LONGEST_LINE {
        return escaped;
    }
    let head: String = chars[..LONGEST_LINE / 2].iter().collect();
    let tail: String = chars[chars.len() - LONGEST_LINE / 4..].iter().collect();
    format!("{head} … {tail}")
}

/// Appends `chars`, control characters written as Rust escapes (`\n`, `\t`, `\u{1b}`).
fn push_escaped(out: &mut String, chars: impl Iterator<Item = char>) {
    for c in chars {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(one_line("a\nb\u{1b}[31m c"), "a\\nb\\u{1b}[31m c");
    }

    #[test]
    fn a_huge_name_gives_a_short_line() {
        let name = "x".repeat(10_000_000);
        let line = one_line(&format!("[[endpoint]] 1 ({name}): no such key"));
        assert!(line.chars().count() < 200, "{}", line.len());
        assert!(line.contains("…(10000003 characters)"), "{line}");
        assert!(line.ends_with(" no such key"));
    }

    #[test]
    fn a_long_line_of_short_words_keeps_its_start_and_end() {
        let line = one_line(&format!("start {} end", "ab ".repeat(100_000)));
        assert!(line.chars().count() <= 1003);
        assert!(line.starts_with("start ") && line.ends_with(" end"));
    }

    #[test]
    fn an_ordinary_line_is_unchanged() {
        let text = "[[link]] 3 (between sw2, ex): width 5 is not allowed; allowed: 1, 2, 4, 8, 16";
        assert_eq!(one_line(text), text);
    }
}
