//! A TOML or type error as one line: the line and its text, the section it sits in (named as
//! the build steps name it), serde's message, and what to write instead.

use serde_json::{Map, Value};

use super::error::Place;
use super::file::ScenarioFile;

/// The most characters of a line an error quotes (the rest shown as `…`).
const QUOTED_LINE: usize = 80;

/// `line N (`text`): [[section]] i (name): message; hint` for a parse error of `text`.
pub fn describe(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let (line, source) = line_at(text, span.start);
            let quoted: String = if source.chars().count() > QUOTED_LINE {
                source.chars().take(QUOTED_LINE).chain(['…']).collect()
            } else {
                source.to_string()
            };
            format!("line {line} (`{quoted}`): {}", reason(text, e))
        }
        None => reason(text, e),
    }
}

/// [`describe`] without the line: for text the user did not write (a scenario rewritten by
/// `--set`), whose line numbers would point nowhere in their file.
pub fn describe_unlocated(text: &str, e: &toml::de::Error) -> String {
    reason(text, e)
}

/// The line (from 1) that byte `at` of `text` sits on, and that line's text, trimmed.
fn line_at(text: &str, at: usize) -> (usize, &str) {
    let start = boundary(text, at);
    let line = text[..start].matches('\n').count() + 1;
    (line, text.lines().nth(line - 1).unwrap_or("").trim())
}

/// The char boundary at or before byte `at` of `text`.
fn boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// `[[section]] i (name): message; hint`: what is wrong, never empty.
fn reason(text: &str, e: &toml::de::Error) -> String {
    let lines: Vec<&str> = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let msg = if lines.is_empty() {
        unexplained(text, e.span().map(|s| s.start))
    } else {
        with_type_hint(&lines.join("; "))
    };
    let Some(at) = e.span().map(|s| s.start) else {
        return msg;
    };
    let (line, source) = line_at(text, at);
    match Section::at(text, line) {
        Some(section) => {
            let hint = if msg.starts_with("unknown field `include`") {
                "; include goes at the top of the file, above its first [section]".to_string()
            } else {
                section.hint(&msg).unwrap_or_else(|| key_guess(&msg))
            };
            // A table's own header line names it already.
            if section.place.to_string() == source {
                format!("{msg}{hint}")
            } else {
                format!("{}: {msg}{hint}", section.place)
            }
        }
        None => format!("{msg}{}", key_guess(&msg)),
    }
}

/// `; did you mean `KEY`?` for serde's `unknown field `X`, expected one of `A`, `B`` (or
/// `unknown variant`) where one of the keys it expects is close to X; else nothing.
fn key_guess(msg: &str) -> String {
    let Some(rest) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| msg.strip_prefix(p))
    else {
        return String::new();
    };
    let Some((word, after)) = rest.split_once('`') else {
        return String::new();
    };
    let Some((_, expected)) = after.split_once("expected") else {
        return String::new();
    };
    let keys = expected.split('`').skip(1).step_by(2);
    crate::error::closest(word, keys).map_or_else(String::new, |k| format!("; did you mean `{k}`?"))
}

/// What is wrong at byte `at` of `text` where the TOML parser gives no message: a control
/// character, a key without its value, a file that ends mid-line, or the character it stops at.
fn unexplained(text: &str, at: Option<usize>) -> String {
    let Some(at) = at.map(|a| boundary(text, a)) else {
        return "the text is not TOML; compare it with `tlpsim schema` and the files in scenarios/"
            .into();
    };
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..at].chars().count() + 1;
    let rest = &text[at..];
    let rest_of_line = rest.lines().next().unwrap_or("");
    match rest.chars().next() {
        Some(c) if c.is_control() && c != '\n' && c != '\t' => format!(
            "the control character {} at column {column} is not allowed in TOML, not even in a \
             comment; delete it (inside quotes write it as \\u{:04X})",
            c.escape_default(),
            u32::from(c)
        ),
        _ if text[line_start..at].trim_end().ends_with('=') && rest_of_line.trim().is_empty() => {
            "the value after `=` is missing; write one, e.g. 8, \"4KiB\" or true".into()
        }
        None => "the file ends in the middle of this line; finish it (close its quotes and \
                 brackets, give its key a value)"
            .into(),
        Some(c) => format!(
            "TOML cannot read {} at column {column}; check this line's quotes, brackets and \
             `key = value` form",
            crate::error::one_line(&format!("{c:?}"))
        ),
    }
}

/// A TOML type error with what to write instead: serde names only the Rust type it wanted.
fn with_type_hint(msg: &str) -> String {
    let hint = if !msg.starts_with("invalid type") && !msg.starts_with("invalid value") {
        None
    } else if msg.ends_with("expected a string") {
        Some("write the value in quotes with its unit, e.g. \"200us\", \"150ns\", \"4KiB\", \"2.5GB/s\"")
    } else if msg.starts_with("invalid value") && msg.contains("expected u") {
        Some("write a whole number of 0 or more")
    } else if ["i64", "u64", "u32", "u8"]
        .iter()
        .any(|t| msg.ends_with(&format!("expected {t}")))
    {
        Some("write a whole number without quotes or units, e.g. 8")
    } else if msg.contains("expected f64") {
        Some("write a number without quotes, e.g. ber = 1e-12")
    } else if msg.contains("expected a boolean") {
        Some("write true or false without quotes")
    } else {
        None
    };
    match hint {
        Some(h) => format!("{msg}: {h}"),
        None => msg.to_string(),
    }
}

/// The section a line of a scenario file sits in, found from the table headers above it.
struct Section {
    /// As the build steps name it: `[pcie]`, `[[switch]] 2 (sw1)`.
    place: Place,
    /// The path of keys to its table: `["pcie"]`, `["ntb", "window"]`.
    path: Vec<String>,
    /// Its `kind`, for `[[endpoint]]` and `[[workload]]`.
    kind: Option<String>,
}

impl Section {
    /// The section line `line` (from 1) sits in; None above the first header, or where the
    /// text is not TOML (the message is then about the line itself).
    fn at(text: &str, line: usize) -> Option<Section> {
        let doc: toml::Table = text.parse().ok()?;
        // Elements seen so far of each array of tables, reset when its parent array moves on.
        let mut counts: Vec<(String, usize)> = Vec::new();
        let mut current: Option<(Vec<String>, bool)> = None;
        for l in text.lines().take(line) {
            let Some((path, array)) = header(l) else {
                continue;
            };
            if array {
                let key = path.join(".");
                counts.retain(|(k, _)| !k.starts_with(&format!("{key}.")));
                match counts.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((key, 1)),
                }
            }
            current = Some((path, array));
        }
        let (path, array) = current?;
        let index = |depth: usize| {
            let key = path[..depth].join(".");
            counts.iter().find(|(k, _)| *k == key).map(|(_, n)| n - 1)
        };
        // The element of the top-level array of tables the line sits in.
        let element = doc
            .get(&path[0])
            .and_then(toml::Value::as_array)
            .zip(index(1))
            .and_then(|(a, i)| a.get(i));
        // The element as the build steps name it: by its name, or a link by its ends.
        let place_of = |section: &str, i: usize| {
            let e = element;
            let name = e.and_then(|t| t.get("name")).and_then(toml::Value::as_str);
            let between = e
                .and_then(|t| t.get("between"))
                .and_then(toml::Value::as_array);
            match (name, between) {
                (Some(n), _) => Place::element(section, i, n),
                (None, Some(b)) => {
                    let b: Vec<&str> = b.iter().filter_map(toml::Value::as_str).collect();
                    Place::element(section, i, &format!("between {}", b.join(", ")))
                }
                _ => Place::nth(section, i),
            }
        };
        let place = match (array, path.as_slice()) {
            (true, [top, inner]) if inner == "window" => place_of(top, index(1)?).window(index(2)?),
            _ if index(1).is_some() => place_of(&path[0], index(1)?),
            _ => Place::table(&path.join(".")),
        };
        let kind = element
            .and_then(|t| t.get("kind"))
            .and_then(toml::Value::as_str)
            .map(str::to_string);
        Some(Section { place, path, kind })
    }

    /// What to add to serde's message: the allowed words or a description of a missing key,
    /// or the kinds an unknown key belongs to.
    fn hint(&self, msg: &str) -> Option<String> {
        let schema = schemars::schema_for!(ScenarioFile);
        let root = schema.as_value();
        if let Some(key) = quoted_key(msg, "missing field `") {
            if key == "kind" {
                let kinds = kinds_with(root, &self.path, None)?;
                return Some(format!("; allowed: {}", kinds.join(", ")));
            }
            let props = properties(root, &self.path, self.kind.as_deref())?;
            let p = resolve(root, props.get(key)?)?;
            if let Some(words) = p.get("enum").and_then(Value::as_array) {
                let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
                return Some(format!("; allowed: {}", words.join(", ")));
            }
            let d = props.get(key)?.get("description")?.as_str()?;
            return Some(format!(" ({})", parenthetical(d)));
        }
        let key = quoted_key(msg, "unknown field `")?;
        let kinds: Vec<String> = kinds_with(root, &self.path, Some(key))?
            .iter()
            .map(|k| format!("{k:?}"))
            .collect();
        (!kinds.is_empty()).then(|| format!("; {key} needs kind = {}", kinds.join(" or ")))
    }
}

/// The kinds of the section at `path` (None if it has none), only those with `key` if given.
fn kinds_with<'a>(root: &'a Value, path: &[String], key: Option<&str>) -> Option<Vec<&'a str>> {
    let variants = section_schema(root, path)?.get("oneOf")?.as_array()?;
    let has = |v: &Value| key.is_none_or(|k| v.get("properties").and_then(|p| p.get(k)).is_some());
    Some(
        variants
            .iter()
            .filter(|v| has(v))
            .filter_map(|v| v.pointer("/properties/kind/const")?.as_str())
            .collect(),
    )
}

/// The table header on line `l`: its path of keys and whether it is an array of tables.
fn header(l: &str) -> Option<(Vec<String>, bool)> {
    let l = l.trim();
    let (inner, array) = if let Some(rest) = l.strip_prefix("[[") {
        (rest.split_once("]]")?, true)
    } else {
        (l.strip_prefix('[')?.split_once(']')?, false)
    };
    let (name, after) = inner;
    let after = after.trim();
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    let path: Vec<String> = name
        .split('.')
        .map(|k| k.trim().trim_matches('"').to_string())
        .collect();
    let bare = |k: &String| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    path.iter().all(bare).then_some((path, array))
}

/// The key in backquotes after `prefix` at the start of `msg`.
fn quoted_key<'m>(msg: &'m str, prefix: &str) -> Option<&'m str> {
    msg.strip_prefix(prefix)?.split('`').next()
}

/// A schema with its `$ref` followed and an optional value's `null` alternative dropped.
fn resolve<'a>(root: &'a Value, v: &'a Value) -> Option<&'a Value> {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return root.pointer(r.strip_prefix('#')?);
    }
    if let Some(any) = v.get("anyOf").and_then(Value::as_array) {
        let not_null: Vec<&Value> = any
            .iter()
            .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if let [one] = not_null.as_slice() {
            return resolve(root, one);
        }
    }
    Some(v)
}

/// The schema of the table at `path` (an element's, for an array of tables).
fn section_schema<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = root;
    for key in path {
        node = resolve(root, node.get("properties")?.get(key)?)?;
        if let Some(items) = node.get("items") {
            node = resolve(root, items)?;
        }
    }
    Some(node)
}

/// The keys of the table at `path`, of its `kind` where the section has kinds.
fn properties<'a>(
    root: &'a Value,
    path: &[String],
    kind: Option<&str>,
) -> Option<&'a Map<String, Value>> {
    let mut node = section_schema(root, path)?;
    if let Some(variants) = node.get("oneOf").and_then(Value::as_array) {
        node = variants
            .iter()
            .find(|v| v.pointer("/properties/kind/const").and_then(Value::as_str) == kind)?;
    }
    node.get("properties")?.as_object()
}

/// A description inside parentheses: one line, no final period.
fn parenthetical(d: &str) -> String {
    d.replace('\n', " ")
        .trim()
        .trim_end_matches('.')
        .to_string()
}
