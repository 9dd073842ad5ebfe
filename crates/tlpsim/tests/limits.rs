//! Size limits of the crate's source: no file over 1,000 lines and no function over 100
//! (issue 37), so that each file and function keeps to one job.

use std::fs;
use std::path::{Path, PathBuf};

/// Most lines a source file may have.
const FILE_LIMIT: usize = 1000;
/// Most lines a function may have, its `fn` line and closing brace included.
const FN_LIMIT: usize = 100;

/// A function found in a source text: its name, first line (1-based) and length in lines.
#[derive(Debug, PartialEq, Eq)]
struct Func {
    name: String,
    line: usize,
    lines: usize,
}

/// The `.rs` files under `dir`, in a fixed order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// The rest of `s` after a visibility (`pub`, `pub(crate)`, `pub(in a::b)`, ...), if it
/// starts with one.
fn strip_visibility(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("pub")?;
    if let Some(inner) = rest.strip_prefix('(') {
        let close = inner.find(')')?;
        return Some(inner[close + 1..].trim_start());
    }
    rest.starts_with(char::is_whitespace)
        .then(|| rest.trim_start())
}

/// The name of the function a (trimmed) line declares, if it declares one: any visibility
/// and `const`, `async`, `unsafe`, `extern "ABI"` qualifiers, then `fn name`.
fn fn_name(line: &str) -> Option<&str> {
    let mut s = line;
    if let Some(rest) = strip_visibility(s) {
        s = rest;
    }
    loop {
        let before = s;
        for q in ["const ", "async ", "unsafe "] {
            if let Some(rest) = s.strip_prefix(q) {
                s = rest.trim_start();
            }
        }
        if let Some(rest) = s.strip_prefix("extern ") {
            s = rest.trim_start();
            if let Some(abi) = s.strip_prefix('"') {
                s = abi.split_once('"').map_or("", |(_, r)| r).trim_start();
            }
        }
        if s == before {
            break;
        }
    }
    let rest = s.strip_prefix("fn ")?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..end];
    name.starts_with(|c: char| c.is_alphabetic() || c == '_')
        .then_some(name)
}

/// The line with its `//` comment (if any, outside string literals) taken off.
fn code_part(line: &str) -> &str {
    let mut in_str = false;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '"' if prev != '\\' => in_str = !in_str,
            '/' if !in_str && prev == '/' => return &line[..i - 1],
            _ => {}
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    line
}

/// Leading whitespace of `line`.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Every function of a source text with its length: from its `fn` line to the line of its
/// closing brace at the same indentation; one line for `fn x() {}` and declarations ending
/// in `;`. A function whose closing brace is missing runs to the end of the text.
fn functions(text: &str) -> Vec<Func> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let Some(name) = fn_name(trimmed) else {
            continue;
        };
        // The end of the signature: the first line with the body's `{` or ending in `;`.
        let mut open = None;
        for (j, l) in lines.iter().enumerate().skip(i) {
            let code = code_part(l).trim_end();
            if code.contains('{') {
                open = Some((j, code.ends_with('}')));
                break;
            }
            if code.ends_with(';') {
                break;
            }
        }
        let end = match open {
            // A declaration, or a body closed on the line that opens it.
            None | Some((_, true)) => open.map_or(i, |(j, _)| j),
            Some((j, false)) => {
                let ind = indent(line);
                lines
                    .iter()
                    .enumerate()
                    .skip(j + 1)
                    .find(|(_, l)| indent(l) == ind && l.trim_start().starts_with('}'))
                    .map_or(lines.len() - 1, |(k, _)| k)
            }
        };
        out.push(Func {
            name: name.to_string(),
            line: i + 1,
            lines: end - i + 1,
        });
    }
    out
}

/// What is over the limits in the file at `path` with contents `text`, one line each.
fn violations(path: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let n = text.lines().count();
    if n > FILE_LIMIT {
        out.push(format!(
            "{path} has {n} lines (most {FILE_LIMIT}): split it by job into modules"
        ));
    }
    for f in functions(text) {
        if f.lines > FN_LIMIT {
            out.push(format!(
                "{path}:{} fn {} has {} lines (most {FN_LIMIT}): split it by job into helpers",
                f.line, f.name, f.lines
            ));
        }
    }
    out
}

#[test]
fn files_and_functions_stay_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut all = Vec::new();
    let files = rust_files(&src);
    assert!(!files.is_empty(), "no sources under {}", src.display());
    for p in files {
        let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let shown = format!(
            "crates/tlpsim/{}",
            p.strip_prefix(root).unwrap_or(&p).display()
        );
        all.extend(violations(&shown, &text));
    }
    assert!(
        all.is_empty(),
        "files over {FILE_LIMIT} lines or functions over {FN_LIMIT} lines in \
         crates/tlpsim/src; split each by job:\n{}",
        all.join("\n")
    );
}

#[test]
fn finds_every_kind_of_function() {
    let text = r#"
pub fn a() {}
pub(crate) fn b() -> u32 { 1 }
pub(in crate::x) const unsafe fn c<T: Copy>(x: T) -> T {
    x
}
impl S {
    pub async fn d(&self) {
        let f: fn(u32) = drop;
    }
    fn e<F>(f: F)
    where
        F: Fn(),
    {
        f()
    }
}
trait T {
    fn f(&self) -> u32;
    fn g(
        &self,
        a: [u8; 4],
    ) -> u32 {
        0 // } not this one
    }
}
mod tests {
    #[test]
    fn h() {
        // fn not_one() {
        let _ = "fn not_two() {";
    }
}
"#;
    let got: Vec<(String, usize, usize)> = functions(text)
        .into_iter()
        .map(|f| (f.name, f.line, f.lines))
        .collect();
    let want = [
        ("a", 2, 1),
        ("b", 3, 1),
        ("c", 4, 3),
        ("d", 8, 3),
        ("e", 11, 6),
        ("f", 19, 1),
        ("g", 20, 6),
        ("h", 29, 4),
    ];
    let want: Vec<(String, usize, usize)> = want
        .iter()
        .map(|&(n, l, k)| (n.to_string(), l, k))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn names_what_is_too_long() {
    let body = "    let _ = 0;\n".repeat(FN_LIMIT - 1);
    let text = format!("fn long() {{\n{body}}}\nfn short() {{\n    let _ = 0;\n}}\n");
    let v = violations("x.rs", &text);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("x.rs:1 fn long has 101 lines"), "{v:?}");
    assert!(v[0].contains("split it by job"), "{v:?}");
    let v = violations("y.rs", &"\n".repeat(FILE_LIMIT + 1));
    assert!(v[0].starts_with("y.rs has 1001 lines"), "{v:?}");
}
