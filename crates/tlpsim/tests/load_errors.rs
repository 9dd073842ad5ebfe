//! Every load error is one line with a reason: what is wrong and what to do, never empty,
//! whatever bytes the file holds.

use proptest::prelude::*;
use tlpsim::scenario::load_str;

const EXAMPLE: &str = include_str!("../../../scenarios/t5220-two-switches.toml");

/// The load error of `text` as the user sees it.
fn error(text: &str) -> String {
    load_str(text, "f.toml")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// The reason of an error line: what follows the file name and any `line N (`...`): `.
fn reason(line: &str) -> &str {
    let rest = line.strip_prefix("f.toml: ").unwrap_or(line);
    match rest.strip_prefix("line ") {
        Some(_) => rest.split_once("`): ").map_or("", |(_, r)| r),
        None => rest,
    }
}

/// Fails unless `line` is one line with a reason that does not end in a colon.
fn assert_reasoned(line: &str) {
    assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
    let r = reason(line).trim();
    assert!(!r.is_empty() && !r.ends_with(':'), "no reason: {line:?}");
}

#[test]
fn a_control_character_in_a_comment_is_named_with_the_fix() {
    let e = error(include_str!("../../../tests/data/ctrl_in_comment.toml"));
    assert_reasoned(&e);
    assert!(
        e.contains("line 1 (")
            && e.contains("the control character \\u{1b} at column 16 is not allowed")
            && e.contains("delete it"),
        "{e}"
    );
}

#[test]
fn a_file_ending_after_the_equals_sign_asks_for_the_value() {
    let e = error(include_str!("../../../tests/data/truncated_value.toml"));
    assert_reasoned(&e);
    assert!(
        e.contains("line 2 (`duration =`)") && e.contains("the value after `=` is missing"),
        "{e}"
    );
}

#[test]
fn a_multi_line_parser_message_becomes_one_line() {
    let e = error("[pcie]\nmps = [1,");
    assert_reasoned(&e);
    assert!(e.contains("invalid array; expected `]`"), "{e}");
}

/// A char boundary of `text` at `fraction` of its length.
fn cut(text: &str, fraction: f64) -> usize {
    let mut at = (text.len() as f64 * fraction) as usize;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_bytes_give_one_line_with_a_reason(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = load_str(&text, "f.toml") {
            assert_reasoned(&e.to_string());
        }
    }

    #[test]
    fn a_cut_scenario_gives_one_line_with_a_reason(fraction in 0.0..1.0f64) {
        let text = &EXAMPLE[..cut(EXAMPLE, fraction)];
        if let Err(e) = load_str(text, "f.toml") {
            assert_reasoned(&e.to_string());
        }
    }

    #[test]
    fn a_byte_put_into_a_scenario_gives_one_line_with_a_reason(
        fraction in 0.0..1.0f64,
        c in proptest::char::range('\u{0}', '\u{7f}'),
        truncate in any::<bool>(),
    ) {
        let at = cut(EXAMPLE, fraction);
        let end = if truncate { cut(EXAMPLE, (fraction + 0.01).min(1.0)) } else { EXAMPLE.len() };
        let text = format!("{}{c}{}", &EXAMPLE[..at], &EXAMPLE[at..end.max(at)]);
        if let Err(e) = load_str(&text, "f.toml") {
            assert_reasoned(&e.to_string());
        }
    }
}

#[test]
fn an_error_without_a_reason_still_says_what_to_do() {
    for message in ["", "  ", "line 2 (`duration =`): "] {
        let e = tlpsim::scenario::ScenarioError {
            origin: "f.toml".into(),
            message: message.into(),
        };
        let line = e.to_string();
        assert_reasoned(&line);
        assert!(line.contains("tlpsim schema"), "{line}");
    }
}

#[test]
fn a_misspelt_key_gets_the_closest_key_of_its_section() {
    let e = error(&EXAMPLE.replacen("mps = ", "mpss = ", 1));
    assert!(
        e.contains("unknown field `mpss`") && e.ends_with("did you mean `mps`?"),
        "{e}"
    );
    let e = error(&format!("{EXAMPLE}\n[simulaton]\nseed = 2\n"));
    assert!(e.ends_with("did you mean `simulation`?"), "{e}");
}

#[test]
fn a_misspelt_node_name_gets_the_closest_node() {
    let e = error(&EXAMPLE.replacen(
        "between = [\"sw2\", \"ex\"]",
        "between = [\"sw2\", \"exx\"]",
        1,
    ));
    assert!(
        e.contains("\"exx\" is not a node; known nodes: ") && e.ends_with("did you mean \"ex\"?"),
        "{e}"
    );
}

#[test]
fn a_misspelt_word_gets_the_closest_word() {
    let e = error(&EXAMPLE.replacen("direction = \"read\"", "direction = \"raed\"", 1));
    assert!(e.ends_with("did you mean \"read\"?"), "{e}");
}
