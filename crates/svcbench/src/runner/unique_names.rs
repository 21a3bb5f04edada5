//! A session's services need names of their own: the store, the report, the logs and the cgroups key on
//! them. A name that comes twice is refused saying how it came: one service picked twice, or two folders
//! whose manifests hold the same `name`.
use crate::manifest::Service;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `picked` holds each service with the argument (or study entry) that picked it.
pub fn refuse_repeated_names(picked: &[(&str, &Service)]) -> Result<()> {
    let mut first: BTreeMap<&str, (&str, &Service)> = BTreeMap::new();
    for &(spec, s) in picked {
        let Some(&(earlier, e)) = first.get(s.name()) else {
            first.insert(s.name(), (spec, s));
            continue;
        };
        if same_folder(&e.dir, &s.dir) {
            // `x@*` already picks every variant, so `x@v` beside it picks `x@v` a second time.
            let star = if [earlier, spec].iter().any(|a| a.ends_with("@*")) {
                " (`@*` already picks the base and every variant)"
            } else {
                ""
            };
            bail!("service `{}` is picked twice, by `{earlier}` and by `{spec}`{star}; list it once", s.name());
        }
        bail!(
            "two services are named `{}`: {} and {}; give one of them a `name` of its own",
            s.name(),
            e.dir.join("svcbench.toml").display(),
            s.dir.join("svcbench.toml").display()
        );
    }
    Ok(())
}

fn same_folder(a: &Path, b: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    real(a) == real(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(root: &Path, folder: &str, name: &str) -> PathBuf {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("svcbench.toml"),
            crate::manifest::test_manifest(
                name,
                "hello",
                "run = \"./x\"\nreadiness = \"/\"\n[variant.one]\nenv = { GOMAXPROCS = \"1\" }\n",
            ),
        )
        .unwrap();
        dir
    }

    fn refusal(specs: &[String]) -> String {
        let loaded: Vec<(String, Vec<Service>)> =
            specs.iter().map(|s| (s.clone(), Service::load_spec(s).unwrap())).collect();
        let picked: Vec<(&str, &Service)> =
            loaded.iter().flat_map(|(spec, all)| all.iter().map(move |s| (spec.as_str(), s))).collect();
        format!("{:#}", refuse_repeated_names(&picked).unwrap_err())
    }

    #[test]
    fn two_folders_with_one_name_are_told_to_rename_one_not_to_list_it_once() {
        let t = tempfile::tempdir().unwrap();
        let a = service(t.path(), "go-nethttp", "hello-go");
        let b = service(t.path(), "my-copy", "hello-go");
        let e = refusal(&[a.display().to_string(), b.display().to_string()]);
        assert!(e.starts_with("two services are named `hello-go`: "), "{e}");
        assert!(e.contains("go-nethttp/svcbench.toml") && e.contains("my-copy/svcbench.toml"), "{e}");
        assert!(e.ends_with("give one of them a `name` of its own"), "{e}");
    }

    #[test]
    fn one_service_picked_twice_names_both_arguments() {
        let t = tempfile::tempdir().unwrap();
        let a = service(t.path(), "go-nethttp", "hello-go").display().to_string();
        let e = refusal(&[a.clone(), format!("{a}/")]);
        assert!(e.starts_with("service `hello-go` is picked twice, by `"), "{e}");
        assert!(e.ends_with("; list it once"), "{e}");
        let e = refusal(&[format!("{a}@*"), format!("{a}@one")]);
        assert!(e.contains("service `hello-go@one` is picked twice"), "{e}");
        assert!(e.contains("(`@*` already picks the base and every variant)"), "{e}");
    }
}
