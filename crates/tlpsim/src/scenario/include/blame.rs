//! Error blame for a merged scenario: an error in the merged text traced back to the file
//! that wrote its section or key, by that file's own line, or its section numbered as in
//! that file.

use super::{label, Merged, NODE_SECTIONS};
use crate::scenario::file::ScenarioFile;
use crate::scenario::{located, ScenarioError};

/// What an element of an array of tables is called in messages: its `name`, or a link's
/// `between a, b`.
fn element_label(e: &toml::Value) -> Option<String> {
    if let Some(n) = e.get("name").and_then(toml::Value::as_str) {
        return Some(n.to_string());
    }
    let ends: Vec<&str> = e
        .get("between")?
        .as_array()?
        .iter()
        .filter_map(toml::Value::as_str)
        .collect();
    Some(format!("between {}", ends.join(", ")))
}

/// The place a build or type error starts with: `[pcie]`, `[[switch]] 2 (sw1)`,
/// `[[ntb]] "nt1"`.
#[derive(Debug, PartialEq)]
enum At<'m> {
    /// A table that appears once; `rest` the message after its `]`.
    Table { section: &'m str, rest: &'m str },
    /// An element by its number (from 1, as messages count); `rest` the message after the
    /// number, its label included.
    Numbered {
        section: &'m str,
        number: usize,
        rest: &'m str,
    },
    /// An element by its name alone; `rest` the message after the name.
    Named {
        section: &'m str,
        name: &'m str,
        rest: &'m str,
    },
}

impl<'m> At<'m> {
    /// The place `message` starts with, if any.
    fn parse(message: &'m str) -> Option<At<'m>> {
        let Some(after) = message.strip_prefix("[[") else {
            let (section, rest) = message.strip_prefix('[')?.split_once(']')?;
            return Some(At::Table { section, rest });
        };
        let (section, rest) = after.split_once("]]")?;
        if let Some(quoted) = rest.strip_prefix(" \"") {
            let (name, rest) = quoted.split_once('"')?;
            return Some(At::Named {
                section,
                name,
                rest,
            });
        }
        let rest = rest.strip_prefix(' ')?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        Some(At::Numbered {
            section,
            number: rest[..digits].parse().ok()?,
            rest: &rest[digits..],
        })
    }
}

/// Where the first of `keys` stands as a whole word in `text`, and which it is.
fn first_word<'k>(text: &str, keys: impl Iterator<Item = &'k String>) -> Option<&'k String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    keys.filter_map(|k| {
        text.match_indices(k.as_str())
            .find(|(i, _)| {
                let before = text[..*i].chars().next_back();
                let after = text[i + k.len()..].chars().next();
                !before.is_some_and(word) && !after.is_some_and(word)
            })
            .map(|(i, _)| (i, k))
    })
    .min()
    .map(|(_, k)| k)
}

impl Merged {
    /// A type error of the merged text, by the line of the file that wrote it: the file
    /// that, read alone, fails the same way (else by its section).
    pub(super) fn blame_parse(&self, text: &str, e: &toml::de::Error) -> ScenarioError {
        for (i, s) in self.sources.iter().enumerate() {
            if let Err(own) = ScenarioFile::parse(&s.text) {
                if own.message() == e.message() {
                    return ScenarioError {
                        origin: label(&self.sources, i),
                        message: located::describe(&s.text, &own),
                    };
                }
            }
        }
        self.blame(&located::describe_unlocated(text, e))
    }

    /// `message` about the merged tree, by the file its section or key came from, the
    /// section numbered as in that file.
    pub(super) fn blame(&self, message: &str) -> ScenarioError {
        match self.locate(message) {
            Some((file, message)) => ScenarioError {
                origin: label(&self.sources, file),
                message,
            },
            None => ScenarioError {
                origin: self.everyone(),
                message: message.to_string(),
            },
        }
    }

    /// The file `message`'s place came from, and the message with the place as that file
    /// numbers it.
    fn locate(&self, message: &str) -> Option<(usize, String)> {
        let Some(at) = At::parse(message) else {
            // A fabric error about one node starts with its name: `"sw2" has no upstream link`.
            let name = message.strip_prefix('"')?.split('"').next()?;
            let file = NODE_SECTIONS.iter().find_map(|s| {
                let i = self
                    .labels(s)
                    .iter()
                    .position(|l| l.as_deref() == Some(name))?;
                Some(self.tree.origins.arrays.get(*s)?.get(i)?.0)
            })?;
            return Some((file, message.to_string()));
        };
        match at {
            At::Table { section, rest } => {
                let keys = self.tree.origins.tables.get(section)?;
                let file = match first_word(rest, keys.keys()) {
                    Some(k) => keys[k],
                    None => {
                        let mut files = keys.values();
                        let first = *files.next()?;
                        files.all(|&f| f == first).then_some(first)?
                    }
                };
                Some((file, message.to_string()))
            }
            At::Numbered {
                section,
                number,
                rest,
            } => {
                let (index, label, rest) = self.numbered(section, number, rest)?;
                let place = match label {
                    Some(l) => format!("[[{section}]] {} ({l})", self.local(section, index)? + 1),
                    None => format!("[[{section}]] {}", self.local(section, index)? + 1),
                };
                self.rewritten(message, section, index, place, rest)
            }
            At::Named {
                section,
                name,
                rest,
            } => {
                let index = self.by_label(section, name)?;
                let place = format!("[[{section}]] \"{name}\"");
                self.rewritten(message, section, index, place, rest)
            }
        }
    }

    /// The file of element `index` of `section`, and the message with `place` before its
    /// `rest` (and the first of a name used twice after it).
    fn rewritten(
        &self,
        message: &str,
        section: &str,
        index: usize,
        place: String,
        rest: &str,
    ) -> Option<(usize, String)> {
        let (file, _) = *self.tree.origins.arrays.get(section)?.get(index)?;
        let twin = self.twin(message, section, index).unwrap_or_default();
        Some((file, format!("{place}{rest}{twin}")))
    }

    /// Element `index` of `section`'s index in its own file.
    fn local(&self, section: &str, index: usize) -> Option<usize> {
        Some(self.tree.origins.arrays.get(section)?.get(index)?.1)
    }

    /// The labels of `section`'s elements, in merged order.
    fn labels(&self, section: &str) -> Vec<Option<String>> {
        self.tree
            .table
            .get(section)
            .and_then(toml::Value::as_array)
            .map(|l| l.iter().map(element_label).collect())
            .unwrap_or_default()
    }

    /// The element a message numbers `number` (from 1, merged order) with `rest` after the
    /// number: its merged index, its label, and the rest after the label. By its number
    /// where the label agrees, else by the label (a counted endpoint's copy, `gpu3`, by the
    /// endpoint it copies, `gpu`).
    fn numbered<'r>(
        &self,
        section: &str,
        number: usize,
        rest: &'r str,
    ) -> Option<(usize, Option<String>, &'r str)> {
        let labels = self.labels(section);
        let i = number.checked_sub(1)?;
        if let Some(Some(l)) = labels.get(i) {
            if let Some(after) = rest.strip_prefix(&format!(" ({l})")) {
                return Some((i, Some(l.clone()), after));
            }
        }
        let Some(inner) = rest.strip_prefix(" (") else {
            return (i < labels.len()).then_some((i, None, rest));
        };
        let (label, after) = inner.split_once(')')?;
        Some((
            self.by_label(section, label)?,
            Some(label.to_string()),
            after,
        ))
    }

    /// The merged index of the element of `section` labelled `label`, or of the counted
    /// endpoint whose copy it is (`gpu3`: `gpu`).
    fn by_label(&self, section: &str, label: &str) -> Option<usize> {
        let labels = self.labels(section);
        labels
            .iter()
            .position(|l| l.as_deref() == Some(label))
            .or_else(|| {
                labels.iter().position(|l| {
                    l.as_deref()
                        .and_then(|l| label.strip_prefix(l))
                        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                })
            })
    }

    /// For a name used twice, `; the first is [[section]] N (name) in FILE`: the other
    /// section with the name; empty for any other message.
    fn twin(&self, message: &str, section: &str, index: usize) -> Option<String> {
        let head = message.strip_suffix("\" is used twice")?;
        let (what, name) = head.rsplit_once(" name \"")?;
        let sections: Vec<&str> = if what.ends_with("the node") {
            NODE_SECTIONS.to_vec()
        } else if what.ends_with("the workload") {
            vec!["workload"]
        } else {
            vec![section]
        };
        for s in sections {
            let Some(list) = self.tree.table.get(s).and_then(toml::Value::as_array) else {
                continue;
            };
            for (i, e) in list.iter().enumerate() {
                let named = e.get("name").and_then(toml::Value::as_str) == Some(name);
                if named && (s, i) != (section, index) {
                    let (file, local) = *self.tree.origins.arrays.get(s)?.get(i)?;
                    return Some(format!(
                        "; the first is [[{s}]] {} ({name}) in {}",
                        local + 1,
                        self.sources[file].path
                    ));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_read_from_messages() {
        assert_eq!(
            At::parse("[pcie]: mps 100"),
            Some(At::Table {
                section: "pcie",
                rest: ": mps 100"
            })
        );
        assert_eq!(
            At::parse("[[link]] 3 (between a, b): x"),
            Some(At::Numbered {
                section: "link",
                number: 3,
                rest: " (between a, b): x"
            })
        );
        assert_eq!(
            At::parse("[[ntb]] \"nt1\": x"),
            Some(At::Named {
                section: "ntb",
                name: "nt1",
                rest: ": x"
            })
        );
        assert_eq!(At::parse("the scenario has no [[root_complex]]"), None);
    }
}
