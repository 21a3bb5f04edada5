//! The crate's layering, checked from its sources: data flows one way (cli → runner → sandbox, loadgen,
//! deps → store → report), so no two top-level modules may import each other, directly or round a longer
//! loop, and nothing imports cli, the top layer that only parses. Inside a folder, no two files import each
//! other either: a type both need gets a file of its own.
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

/// A file's module path: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; lib.rs and main.rs are the root.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") || parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The paths a source text names through `crate::`, `super::` and `self::`, each as its segments after the
/// keyword (a `{…}` group gives one path per item, its first segment), with the keyword. Comment lines and
/// the unit tests' module are skipped: a test may reach into any sibling.
fn named_paths(text: &str) -> Vec<(&'static str, Vec<String>)> {
    let body = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut out = Vec::new();
    for line in body.lines().map(str::trim_start).filter(|l| !l.starts_with("//")) {
        for kw in ["crate", "super", "self"] {
            let key = format!("{kw}::");
            for (i, _) in line.match_indices(&key) {
                if line[..i].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue; // `mycrate::`, or the `super::` of `super::super::`
                }
                let mut rest = &line[i + key.len()..];
                let mut segs = Vec::new();
                loop {
                    if let Some(group) = rest.strip_prefix('{') {
                        let inner = group.split('}').next().unwrap_or("");
                        for item in inner.split(',') {
                            let head = ident(item.trim());
                            if !head.is_empty() && head != "self" {
                                out.push((kw, segs.iter().cloned().chain([head]).collect()));
                            }
                        }
                        break;
                    }
                    let head = ident(rest);
                    if head.is_empty() {
                        break;
                    }
                    rest = &rest[head.len()..];
                    segs.push(head);
                    match rest.strip_prefix("::") {
                        Some(r) => rest = r,
                        None => break,
                    }
                }
                if !segs.is_empty() {
                    out.push((kw, segs));
                }
            }
        }
    }
    out
}

/// file → the other files of its own folder it imports (a path resolves to the longest module that is a
/// file: `super::run::Spec` is run.rs, `super::Limits` the folder's mod.rs).
fn sibling_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let by_path: BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (module_path(src, f), f.strip_prefix(src).unwrap().display().to_string())).collect();
    let folder = |rel: &str| Path::new(rel).parent().map(Path::to_path_buf);
    let mut g: BTreeMap<String, BTreeSet<String>> = by_path.values().map(|f| (f.clone(), BTreeSet::new())).collect();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap().display().to_string();
        let me = module_path(src, file);
        let is_mod = matches!(file.file_name().and_then(|n| n.to_str()), Some("mod.rs" | "lib.rs" | "main.rs"));
        let parent = if is_mod { me.clone() } else { me[..me.len().saturating_sub(1)].to_vec() };
        for (kw, segs) in named_paths(&std::fs::read_to_string(file).unwrap()) {
            let mut base = match kw {
                "crate" => Vec::new(),
                "super" => parent[..parent.len().saturating_sub(is_mod as usize)].to_vec(),
                _ => me.clone(),
            };
            let mut segs = segs.as_slice();
            while let Some(rest) = segs.strip_prefix(&["super".to_string()]) {
                base.pop();
                segs = rest;
            }
            let full: Vec<String> = base.into_iter().chain(segs.iter().cloned()).collect();
            let target = (1..=full.len()).rev().find_map(|n| by_path.get(&full[..n]));
            if let Some(t) = target.filter(|t| **t != rel && folder(t) == folder(&rel)) {
                g.get_mut(&rel).unwrap().insert(t.clone());
            }
        }
    }
    g
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

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    for krate in ["svcbench", "loadgen"] {
        let g = sibling_graph(&src_of(krate));
        let found: Vec<String> = cycles(&g)
            .iter()
            // The one circle kept on purpose: loadgen's driver hands each worker a callback into itself, and
            // the worker calls it per answer (client/driver.rs says why).
            .filter(|c| !(krate == "loadgen" && **c == ["client/driver.rs", "client/worker.rs"]))
            .map(|c| describe(&g, c))
            .collect();
        assert!(found.is_empty(), "files of one folder of {krate} importing each other: {found:#?}");
    }
}

#[test]
fn the_file_checker_finds_a_planted_circle_in_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("f")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod f; mod g;").unwrap();
    std::fs::write(src.join("f/mod.rs"), "pub mod a; pub mod b; pub struct Shared;").unwrap();
    std::fs::write(src.join("f/a.rs"), "use super::b::B;\nuse super::Shared;\n").unwrap();
    std::fs::write(src.join("f/b.rs"), "pub struct B;\nfn x() { crate::f::a::run() }\n").unwrap();
    std::fs::write(src.join("g.rs"), "use crate::f::{a, b};\n").unwrap();
    let g = sibling_graph(src);
    assert_eq!(cycles(&g), vec![vec!["f/a.rs".to_string(), "f/b.rs".into()]]);
    assert!(g["f/a.rs"].contains("f/mod.rs"), "an item of the folder's mod.rs is an import of it: {g:?}");
    assert!(g["g.rs"].is_empty(), "another folder's files are not siblings: {g:?}");
}
