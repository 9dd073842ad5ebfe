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

/// The longest word [`closest`] compares (longer ones are no typo of a short name).
const LONGEST_GUESS: usize = 64;

/// The candidate nearest `word` by edit distance (letters added, dropped, changed or
/// swapped, case ignored), if near enough to be a typo of it: at most a third of its
/// length apart, and not `word` itself; ties go to the earlier candidate.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let given = word;
    let word: Vec<char> = word.to_lowercase().chars().collect();
    if word.is_empty() || word.len() > LONGEST_GUESS {
        return None;
    }
    let limit = (word.len() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let cand: Vec<char> = c.to_lowercase().chars().collect();
        if cand.len().abs_diff(word.len()) > limit || c == given {
            continue;
        }
        let d = edit_distance(&word, &cand);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `; did you mean "NAME"?` for the candidate [`closest`] finds, or nothing.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates).map_or_else(String::new, |c| format!("; did you mean {c:?}?"))
}

/// Edits (a letter added, dropped, changed, or two neighbours swapped) from `a` to `b`.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let change = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + change);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

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
    use super::{closest, did_you_mean, one_line};

    #[test]
    fn a_typo_finds_the_name_it_misses() {
        let names = ["latency", "bandwidth", "name"];
        assert_eq!(closest("lattency", names), Some("latency"));
        assert_eq!(closest("Bandwith", names), Some("bandwidth"));
        assert_eq!(closest("NAME", names), Some("name"));
        assert_eq!(closest("nme", names), Some("name"));
        assert_eq!(closest("pcei", ["simulation", "pcie", "cpu"]), Some("pcie"));
        assert_eq!(
            did_you_mean("sw9", ["sw1", "ex"]),
            "; did you mean \"sw1\"?"
        );
    }

    #[test]
    fn a_word_far_from_every_name_finds_none() {
        assert_eq!(closest("credits", ["latency", "name"]), None);
        assert_eq!(closest("x", ["latency"]), None);
        assert_eq!(closest(&"y".repeat(10_000_000), ["yy"]), None);
        assert_eq!(did_you_mean("zzz", ["rc"]), "");
    }

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
