//! The crate's layering, checked from its sources: data flows one way (cli → runner → sandbox, loadgen,
//! deps → store → report), so no two top-level modules may import each other, directly or round a longer
//! loop, and nothing imports cli, the top layer that only parses.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module of each source file under `src`: `src/a.rs` and `src/a/**` are module `a`.
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "main" && name != "lib").then(|| name.to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a source text names through `crate::…`, in `use` lines, `use crate::{a, b}`
/// groups and inline paths. Comment lines are skipped: a doc may name a module it does not import.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for (i, _) in code.match_indices("crate::") {
            let before = code[..i].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // e.g. `mycrate::`
            }
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // Only the group's outer items are top-level modules: `crate::{a::{b, c}, d}` names a and d.
                let (mut depth, mut at_item_start) = (0, true);
                for (j, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => at_item_start = true,
                        c if at_item_start && depth == 0 && !c.is_whitespace() => {
                            at_item_start = false;
                            let head: String =
                                group[j..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                            if !head.is_empty() {
                                names.insert(head);
                            }
                        }
                        _ => {}
                    }
                }
            } else {
                let head: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !head.is_empty() {
                    names.insert(head);
                }
            }
        }
    }
    names
}

/// module → the other top-level modules it imports.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in &files {
        let Some(from) = top_module(src, file) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for to in named_modules(&text) {
            if to != from && modules.contains(&to) {
                g.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    g
}

/// Strongly connected components with more than one module (Tarjan's algorithm): each one is a cycle.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.g[v] {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let lw = self.low[w.as_str()];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w.as_str()) {
                    let iw = self.index[w.as_str()];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in g.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

fn src_of(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src")
}

fn describe(g: &BTreeMap<String, BTreeSet<String>>, component: &[String]) -> String {
    let edges: Vec<String> = component
        .iter()
        .flat_map(|a| g[a].iter().filter(|b| component.contains(b)).map(move |b| format!("{a} → {b}")))
        .collect();
    edges.join(", ")
}

#[test]
fn svcbench_top_level_modules_form_no_cycle() {
    let g = graph(&src_of("svcbench"));
    let found: Vec<String> = cycles(&g).iter().map(|c| describe(&g, c)).collect();
    assert!(found.is_empty(), "cycles between svcbench's modules: {found:#?}");
}

#[test]
fn loadgen_top_level_modules_form_no_cycle() {
    let g = graph(&src_of("loadgen"));
    let found: Vec<String> = cycles(&g).iter().map(|c| describe(&g, c)).collect();
    assert!(found.is_empty(), "cycles between loadgen's modules: {found:#?}");
}

#[test]
fn nothing_below_cli_imports_it() {
    let g = graph(&src_of("svcbench"));
    // commands (what each parsed command does) is the one layer above cli.
    let importers: Vec<&String> =
        g.iter().filter(|(from, to)| to.contains("cli") && *from != "commands").map(|(from, _)| from).collect();
    assert!(
        importers.is_empty(),
        "cli only parses: only commands, above it, may import it, yet these do: {importers:?}"
    );
}

#[test]
fn the_checker_finds_a_planted_cycle() {
    // The check itself must be able to fail: a loop a → b → c → a and an import of cli are found.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("main.rs"), "mod a; mod b; mod c; mod cli;").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::X;\n// crate::cli is named in a comment only\n").unwrap();
    std::fs::write(src.join("b/mod.rs"), "pub struct X;\nfn f() { crate::c::g() }\n").unwrap();
    std::fs::write(src.join("c.rs"), "use crate::{a::{Y, b}, cli};\n").unwrap();
    std::fs::write(src.join("cli.rs"), "").unwrap();
    let g = graph(src);
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
    assert!(g["c"].contains("cli") && !g["c"].contains("b") && !g["a"].contains("cli"));
}
