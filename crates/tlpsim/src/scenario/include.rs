//! `include = ["base.toml"]` at the top of a scenario file: the files it names are read first
//! (paths relative to its directory; they may include others in turn) and merged under it.
//! Its tables merge key by key over theirs (its values win, a table inside a table merging
//! the same way), and its `[[section]]` elements come after theirs. The merged tree is
//! written out as one self-contained TOML text, and an error in it is traced back to the
//! file that wrote the section or key: a TOML or type error by that file's own line, a build
//! error by its section numbered as in that file.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

mod blame;

use super::file::ScenarioFile;
use super::{build, located, ScenarioError};
use crate::fabric::System;

/// Files one scenario may read in all: itself and every nested include.
pub const MAX_FILES: usize = 256;

/// The largest included file read (the front's cap on a scenario file).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// What `load_str` says of text that includes files: it has no directory to read them from.
pub const NEEDS_A_PATH: &str = "include = [...] is read where the file's directory is known: \
                                load the scenario by its path (scenario::load_path), or \
                                expand it first with scenario::expand_includes";

/// The sections whose `name`s share one namespace, the node names.
const NODE_SECTIONS: [&str; 4] = ["root_complex", "switch", "ntb", "endpoint"];

/// One file read.
struct Source {
    /// Its path as messages show it (the top's origin as given).
    path: String,
    /// The file that includes it; None for the top.
    parent: Option<usize>,
    /// Its text.
    text: String,
}

/// Where the parts of a merged tree came from, as indices of [`Merged::sources`].
#[derive(Default)]
struct Origins {
    /// Per top-level array of tables: each element's file and its index in that file.
    arrays: BTreeMap<String, Vec<(usize, usize)>>,
    /// Per top-level table: the file whose value of each key stands.
    tables: BTreeMap<String, BTreeMap<String, usize>>,
}

/// A TOML tree and where its parts came from.
#[derive(Default)]
struct Tree {
    /// The tree.
    table: toml::Table,
    /// Its origins.
    origins: Origins,
}

impl Tree {
    /// The tree of one file, `file`, every part its own.
    fn of(table: toml::Table, file: usize) -> Tree {
        let mut origins = Origins::default();
        for (key, value) in &table {
            match value {
                toml::Value::Array(a) => {
                    origins
                        .arrays
                        .insert(key.clone(), (0..a.len()).map(|i| (file, i)).collect());
                }
                toml::Value::Table(t) => {
                    origins
                        .tables
                        .insert(key.clone(), t.keys().map(|k| (k.clone(), file)).collect());
                }
                _ => {}
            }
        }
        Tree { table, origins }
    }

    /// `over` merged over this tree: its arrays appended, its tables merged key by key, its
    /// other values replacing these.
    fn merge(&mut self, mut over: Tree) {
        for (key, value) in over.table {
            match (self.table.get_mut(&key), value) {
                (Some(toml::Value::Array(mine)), toml::Value::Array(theirs)) => {
                    mine.extend(theirs);
                    let more = over.origins.arrays.remove(&key).unwrap_or_default();
                    self.origins.arrays.entry(key).or_default().extend(more);
                }
                (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                    merge_tables(mine, theirs);
                    let more = over.origins.tables.remove(&key).unwrap_or_default();
                    self.origins.tables.entry(key).or_default().extend(more);
                }
                (_, value) => {
                    self.origins.arrays.remove(&key);
                    self.origins.tables.remove(&key);
                    if let Some(a) = over.origins.arrays.remove(&key) {
                        self.origins.arrays.insert(key.clone(), a);
                    }
                    if let Some(t) = over.origins.tables.remove(&key) {
                        self.origins.tables.insert(key.clone(), t);
                    }
                    self.table.insert(key, value);
                }
            }
        }
    }
}

/// `over` merged into `base`: a table in both merged the same way, any other value of `over`
/// standing.
fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                merge_tables(mine, theirs)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// `path` without its `.` parts: `./base.toml` -> `base.toml`.
fn clean(path: &Path) -> PathBuf {
    let out: PathBuf = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

/// The text of the file at `path`, at most [`MAX_FILE_BYTES`].
fn read_file(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("it is larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    Ok(text)
}

/// Reads a file and its includes, depth first.
struct Reader {
    /// Every file read so far, in the order read (the top first).
    sources: Vec<Source>,
    /// The files being read, outermost first: their canonical path (None for text) and index.
    chain: Vec<(Option<PathBuf>, usize)>,
    /// Whether the top is text, not a file: its includes start at the current directory.
    top_is_text: bool,
}

impl Reader {
    /// `message` about file `file`.
    fn error(&self, file: usize, message: String) -> ScenarioError {
        ScenarioError {
            origin: label(&self.sources, file),
            message,
        }
    }

    /// The merged tree of `source` (at `canonical`) and the files it includes, whose paths
    /// start at `dir`.
    fn read(
        &mut self,
        source: Source,
        canonical: Option<PathBuf>,
        dir: &Path,
    ) -> Result<Tree, ScenarioError> {
        let me = self.sources.len();
        self.sources.push(source);
        let text = &self.sources[me].text;
        let mut table: toml::Table = text
            .parse()
            .map_err(|e| self.error(me, located::describe(text, &e)))?;
        let includes = take_includes(&mut table).map_err(|m| self.error(me, m))?;
        self.chain.push((canonical, me));
        let mut tree = Tree::default();
        for name in includes {
            let path = clean(&dir.join(&name));
            let shown = path.display().to_string();
            let start = if self.sources[me].parent.is_none() && self.top_is_text {
                "the current directory"
            } else {
                "this file's directory"
            };
            let unreadable = |e: String| {
                self.error(
                    me,
                    format!(
                        "include {name:?}: cannot read {shown}: {e}; check the path, which \
                         starts at {start}"
                    ),
                )
            };
            let canon = std::fs::canonicalize(&path).map_err(|e| unreadable(e.to_string()))?;
            if let Some(at) = self
                .chain
                .iter()
                .position(|(c, _)| c.as_ref() == Some(&canon))
            {
                let mut files: Vec<&str> = self.chain[at..]
                    .iter()
                    .map(|(_, i)| self.sources[*i].path.as_str())
                    .collect();
                files.push(&shown);
                return Err(self.error(
                    me,
                    format!(
                        "include {name:?} makes a cycle: {}; remove one of these includes",
                        files.join(" -> ")
                    ),
                ));
            }
            if self.sources.len() >= MAX_FILES {
                return Err(self.error(
                    me,
                    format!(
                        "include {name:?}: the scenario reads more than {MAX_FILES} files with \
                         its includes; include each file once"
                    ),
                ));
            }
            let text = read_file(&path).map_err(unreadable)?;
            let sub_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            let source = Source {
                path: shown,
                parent: Some(me),
                text,
            };
            let sub = self.read(source, Some(canon), &sub_dir)?;
            tree.merge(sub);
        }
        self.chain.pop();
        tree.merge(Tree::of(table, me));
        Ok(tree)
    }
}

/// The paths of `table`'s `include`, taken out of it.
fn take_includes(table: &mut toml::Table) -> Result<Vec<String>, String> {
    let wrong = || {
        "include must be a list of file paths in quotes, e.g. include = [\"base.toml\"]".to_string()
    };
    let Some(value) = table.remove("include") else {
        return Ok(Vec::new());
    };
    let list = value.as_array().ok_or_else(wrong)?;
    list.iter()
        .map(|v| match v.as_str() {
            Some("") => Err("include has an empty path; write the file's name, e.g. \
                             include = [\"base.toml\"]"
                .to_string()),
            Some(s) => Ok(s.to_string()),
            None => Err(wrong()),
        })
        .collect()
}

/// How messages name file `i`: its path, and the file that includes it.
fn label(sources: &[Source], i: usize) -> String {
    let s = &sources[i];
    match s.parent {
        Some(p) => format!("{} (included from {})", s.path, sources[p].path),
        None => s.path.clone(),
    }
}

/// A scenario and the files it includes, merged.
struct Merged {
    /// Every file read, the top first.
    sources: Vec<Source>,
    /// The merged tree.
    tree: Tree,
}

impl Merged {
    /// Reads the files `text` includes, or None where it includes none (or is not TOML: the
    /// plain load then says why).
    fn read(
        text: &str,
        origin: &str,
        file: Option<&Path>,
    ) -> Result<Option<Merged>, ScenarioError> {
        if !text.contains("include") {
            return Ok(None);
        }
        match text.parse::<toml::Table>() {
            Ok(t) if t.contains_key("include") => {}
            _ => return Ok(None),
        }
        let dir = match file {
            Some(f) => f.parent().map_or_else(|| PathBuf::from("."), clean),
            None => PathBuf::from("."),
        };
        let mut reader = Reader {
            sources: Vec::new(),
            chain: Vec::new(),
            top_is_text: file.is_none(),
        };
        let top = Source {
            path: origin.to_string(),
            parent: None,
            text: text.to_string(),
        };
        let canonical = file.and_then(|f| std::fs::canonicalize(f).ok());
        let tree = reader.read(top, canonical, &dir)?;
        Ok(Some(Merged {
            sources: reader.sources,
            tree,
        }))
    }

    /// The merged text and its system, or an error naming the file it came from.
    fn check(&self) -> Result<(System, String), ScenarioError> {
        let text = toml::to_string(&self.tree.table).map_err(|e| ScenarioError {
            origin: self.everyone(),
            message: format!("the files do not merge into TOML: {e}"),
        })?;
        let file = ScenarioFile::parse(&text).map_err(|e| self.blame_parse(&text, &e))?;
        let system = build::build(&file).map_err(|e| self.blame(&e.to_string()))?;
        Ok((system, text))
    }

    /// The top file and every file it includes, for an error no one file can be blamed for.
    fn everyone(&self) -> String {
        let rest: Vec<&str> = self.sources[1..].iter().map(|s| s.path.as_str()).collect();
        format!("{} (with {})", self.sources[0].path, rest.join(", "))
    }
}

/// Scenario text with its includes read and merged in: self-contained TOML that loads as
/// the files would (the text itself where it includes nothing). `origin` names the text in
/// errors; `file` is its path, where its include paths start (None: the current directory).
/// Checked where it includes files, each error naming the file it came from.
pub fn expand_includes(
    text: &str,
    origin: &str,
    file: Option<&Path>,
) -> Result<String, ScenarioError> {
    match Merged::read(text, origin, file)? {
        None => Ok(text.to_string()),
        Some(m) => m.check().map(|(_, text)| text),
    }
}

/// The system of the scenario text of the file at `path` (`origin` names it), its includes
/// read and merged in; None where it includes nothing.
pub fn load_included(
    text: &str,
    origin: &str,
    path: &Path,
) -> Result<Option<System>, ScenarioError> {
    match Merged::read(text, origin, Some(path))? {
        None => Ok(None),
        Some(m) => m.check().map(|(system, _)| Some(system)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{load_path, load_str};

    /// A fresh directory of scenario files, removed at the end of the test.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let dir =
                std::env::temp_dir().join(format!("tlpsim-include-{}-{tag}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }

        /// Writes `text` to `name` (folders made) and returns its path.
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A fabric without its workload: a root complex, a switch and an endpoint.
    const BASE: &str = r#"
[simulation]
duration = "50us"
seed = 7

[pcie]
mps = 128
mrrs = 512

[[root_complex]]
name = "rc"

[[switch]]
name = "sw"

[[endpoint]]
name = "ex"
kind = "dma"

[[link]]
between = ["rc", "sw"]
gen = 3
width = 8

[[link]]
between = ["sw", "ex"]
gen = 3
width = 8
"#;

    /// A workload for BASE's endpoint.
    const READS: &str = r#"
[[workload]]
name = "reads"
kind = "dma"
endpoint = "ex"
direction = "read"
transfer_size = "4KiB"
"#;

    fn err(path: &Path) -> String {
        load_path(path).unwrap_err().to_string()
    }

    #[test]
    fn tables_merge_key_by_key_and_the_including_file_wins() {
        let d = Dir::new("override");
        d.write("base.toml", BASE);
        let top = d.write(
            "top.toml",
            &format!("include = [\"base.toml\"]\n\n[pcie]\nmps = 256\n{READS}"),
        );
        let sys = load_path(&top).unwrap();
        assert_eq!(sys.pcie.mps, 256);
        // The base's other [pcie] key and its [simulation] stand.
        assert_eq!(sys.pcie.mrrs, 512);
        assert_eq!(sys.seed, 7);
    }

    #[test]
    fn sections_append_included_first() {
        let d = Dir::new("append");
        d.write("base.toml", BASE);
        let top = d.write(
            "top.toml",
            &format!(
                "include = [\"base.toml\"]\n\n[[endpoint]]\nname = \"ex2\"\nkind = \"dma\"\n\n\
                 [[link]]\nbetween = [\"sw\", \"ex2\"]\n{READS}"
            ),
        );
        let sys = load_path(&top).unwrap();
        let names: Vec<&str> = sys.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["rc", "sw", "ex", "ex2"]);
        let links: Vec<&str> = sys.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(links, ["rc-sw", "sw-ex", "sw-ex2"]);
    }

    #[test]
    fn includes_nest_with_paths_from_each_file() {
        let d = Dir::new("nested");
        d.write("parts/fabric.toml", BASE);
        d.write(
            "parts/base.toml",
            "include = [\"fabric.toml\"]\n[simulation]\nseed = 9\n",
        );
        let top = d.write(
            "top.toml",
            &format!("include = [\"parts/base.toml\"]\n{READS}"),
        );
        let sys = load_path(&top).unwrap();
        assert_eq!(sys.seed, 9);
        assert_eq!(sys.workloads.len(), 1);
        // The text is self-contained: it loads alone, with nothing to include.
        let text = std::fs::read_to_string(&top).unwrap();
        let merged = expand_includes(&text, "top.toml", Some(&top)).unwrap();
        assert!(!merged.contains("include"), "{merged}");
        assert_eq!(load_str(&merged, "m").unwrap().seed, 9);
    }

    #[test]
    fn text_without_include_is_left_as_it_is() {
        let text = format!("{BASE}{READS}");
        assert_eq!(expand_includes(&text, "t", None).unwrap(), text);
        // A key that merely says "include" elsewhere is no include.
        let text = text.replace("name = \"reads\"", "name = \"include\"");
        assert_eq!(expand_includes(&text, "t", None).unwrap(), text);
    }

    #[test]
    fn a_cycle_is_one_line_naming_the_chain() {
        let d = Dir::new("cycle");
        d.write("a.toml", "include = [\"b.toml\"]\n");
        d.write("b.toml", "include = [\"a.toml\"]\n");
        let a = d.0.join("a.toml");
        let e = err(&a);
        let (ad, bd) = (a.display(), d.0.join("b.toml").display().to_string());
        assert_eq!(
            e,
            format!(
                "{bd} (included from {ad}): include \"a.toml\" makes a cycle: {ad} -> {bd} -> \
                 {ad}; remove one of these includes"
            )
        );
        let own = d.write("self.toml", "include = [\"./self.toml\"]\n");
        assert!(err(&own).contains("makes a cycle"), "{}", err(&own));
    }

    #[test]
    fn a_missing_file_names_the_including_file_and_the_path() {
        let d = Dir::new("missing");
        let top = d.write("top.toml", &format!("include = [\"nope.toml\"]\n{READS}"));
        let e = err(&top);
        let want = format!(
            "{}: include \"nope.toml\": cannot read {}: ",
            top.display(),
            d.0.join("nope.toml").display()
        );
        assert!(e.starts_with(&want), "{e}");
        assert!(e.ends_with("check the path, which starts at this file's directory"));
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_bad_include_value_says_what_to_write() {
        let d = Dir::new("value");
        for (text, want) in [
            (
                "include = \"base.toml\"\n",
                "include must be a list of file paths in quotes",
            ),
            (
                "include = [1]\n",
                "include must be a list of file paths in quotes",
            ),
            ("include = [\"\"]\n", "include has an empty path"),
        ] {
            let top = d.write("top.toml", text);
            assert!(err(&top).contains(want), "{}", err(&top));
        }
    }

    #[test]
    fn a_toml_error_in_an_included_file_names_it_and_its_line() {
        let d = Dir::new("syntax");
        let base = d.write("base.toml", &BASE.replace("mps = 128", "mps = = 128"));
        let top = d.write("top.toml", &format!("include = [\"base.toml\"]\n{READS}"));
        let e = err(&top);
        let want = format!(
            "{} (included from {}): line 7 (`mps = = 128`)",
            base.display(),
            top.display()
        );
        assert!(e.starts_with(&want), "{e}");
    }

    #[test]
    fn a_type_error_in_an_included_file_names_it_and_its_line() {
        let d = Dir::new("type");
        let base = d.write("base.toml", &BASE.replace("mps = 128", "mps = \"big\""));
        let top = d.write("top.toml", &format!("include = [\"base.toml\"]\n{READS}"));
        let e = err(&top);
        let want = format!(
            "{} (included from {}): line 7 (`mps = \"big\"`): [pcie]: invalid type",
            base.display(),
            top.display()
        );
        assert!(e.starts_with(&want), "{e}");
        // A key the included file's section does not have.
        d.write(
            "base.toml",
            &BASE.replace("name = \"sw\"", "name = \"sw\"\nlatncy = \"1ns\""),
        );
        let e = err(&top);
        assert!(
            e.contains("base.toml (included from") && e.contains("line 15"),
            "{e}"
        );
        assert!(e.contains("did you mean `latency`?"), "{e}");
    }

    #[test]
    fn a_build_error_names_the_file_and_its_own_section_number() {
        let d = Dir::new("build");
        let base = d.write(
            "base.toml",
            &BASE.replace("width = 8\n\n[[link]]", "width = 5\n\n[[link]]"),
        );
        let top = d.write(
            "top.toml",
            &format!(
                "include = [\"base.toml\"]\n[[endpoint]]\nname = \"ex2\"\nkind = \"dma\"\n\n\
                 [[link]]\nbetween = [\"sw\", \"ex2\"]\n{READS}"
            ),
        );
        let e = err(&top);
        assert!(
            e.starts_with(&format!(
                "{} (included from {}): [[link]] 1 (between rc, sw): width 5",
                base.display(),
                top.display()
            )),
            "{e}"
        );
        // The top file's own link, third after merging, is its first.
        d.write("base.toml", BASE);
        d.write(
            "top.toml",
            &format!(
                "include = [\"base.toml\"]\n[[endpoint]]\nname = \"ex2\"\nkind = \"dma\"\n\n\
                 [[link]]\nbetween = [\"sw\", \"ex2\"]\nwidth = 3\n{READS}"
            ),
        );
        let e = err(&top);
        assert!(
            e.starts_with(&format!(
                "{}: [[link]] 1 (between sw, ex2): width 3",
                top.display()
            )),
            "{e}"
        );
        // A value in a merged table: the file whose key it is.
        d.write(
            "top.toml",
            &format!("include = [\"base.toml\"]\n[pcie]\nmps = 100\n{READS}"),
        );
        let e = err(&top);
        assert!(
            e.starts_with(&format!("{}: [pcie]: mps 100", top.display())),
            "{e}"
        );
    }

    #[test]
    fn a_name_used_twice_names_both_files() {
        let d = Dir::new("twice");
        let base = d.write("base.toml", BASE);
        let top = d.write(
            "top.toml",
            &format!(
                "include = [\"base.toml\"]\n[[endpoint]]\nname = \"ex\"\nkind = \"dma\"\n{READS}"
            ),
        );
        let e = err(&top);
        assert_eq!(
            e,
            format!(
                "{}: [[endpoint]] 1 (ex): the node name \"ex\" is used twice; the first is \
                 [[endpoint]] 1 (ex) in {}",
                top.display(),
                base.display()
            )
        );
        // A fabric error about one node: the file of that node.
        d.write(
            "top.toml",
            &format!("include = [\"base.toml\"]\n[[switch]]\nname = \"sw2\"\n{READS}"),
        );
        let e = err(&top);
        assert!(e.starts_with(&format!("{}: \"sw2\" has no upstream link", top.display())));
        d.write("top.toml", &format!("include = [\"base.toml\"]\n{READS}"));
        d.write(
            "base.toml",
            &BASE.replace("name = \"sw\"", "name = \"sw\"\n[[switch]]\nname = \"sw3\""),
        );
        let e = err(&top);
        assert!(
            e.starts_with(&format!("{} (included from", base.display())),
            "{e}"
        );
        assert!(e.contains("\"sw3\" has no upstream link"), "{e}");
        d.write("base.toml", BASE);
        // Two files including the same part append its sections twice.
        d.write("left.toml", "include = [\"base.toml\"]\n");
        d.write("right.toml", "include = [\"base.toml\"]\n");
        d.write(
            "top.toml",
            &format!("include = [\"left.toml\", \"right.toml\"]\n{READS}"),
        );
        let e = err(&top);
        assert!(
            e.contains("is used twice; the first is [[root_complex]] 1 (rc) in"),
            "{e}"
        );
    }

    #[test]
    fn text_that_includes_needs_a_path_or_expanding() {
        let e = load_str("include = [\"base.toml\"]\n", "<text>")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("<text>: include = [...] is read where"),
            "{e}"
        );
        let text = BASE.replace("name = \"sw\"", "name = \"sw\"\ninclude = [\"x\"]");
        let e = load_str(&text, "t.toml");
        let e = e.unwrap_err().to_string();
        assert!(e.contains("include goes at the top of the file"), "{e}");
    }
}
