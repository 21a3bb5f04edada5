//! A scenario's own mistakes, found when it is read: before anything is built or started, not when a
//! run's first step or check meets them after the service's startup.
use super::ScenarioFile;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// Every check's path is a request path, and every mix resolves (weights, paths, `{var}`s, values),
/// except a mix whose value files a dataset build writes later (locations): its step says so then.
pub fn validate(file: &ScenarioFile, dir: &Path, path: &Path) -> Result<()> {
    for c in &file.check {
        if !c.path.starts_with('/') {
            bail!(
                "{}: check `{}`: path `{}` does not start with '/'; write it as `/{}`",
                path.display(),
                c.name,
                c.path,
                c.path
            );
        }
    }
    for (name, m) in &file.mix {
        if m.request.is_empty() {
            bail!("{}: mix `{name}` has no [[mix.{name}.request]]", path.display());
        }
        m.success_set().with_context(|| format!("{}: mix `{name}`", path.display()))?;
        if !m.lacks_value_files(dir) {
            m.clone().resolve(dir).with_context(|| format!("{}: mix `{name}`", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scenario.toml");
        let file: ScenarioFile = toml::from_str(text).unwrap();
        format!("{:#}", validate(&file, dir.path(), &path).unwrap_err())
    }

    const CHECK: &str = "[[check]]\nname = \"GET /items/1\"\npath = \"/items/1\"\n";

    #[test]
    fn a_check_path_without_its_slash_is_refused_with_the_fix() {
        let e = refusal("name = \"orders\"\n[[check]]\nname = \"one item\"\npath = \"items/1\"\n");
        assert!(e.contains("check `one item`: path `items/1` does not start with '/'; write it as `/items/1`"), "{e}");
    }

    #[test]
    fn a_mix_whose_weights_are_all_zero_is_refused_when_read() {
        let e = refusal(&format!(
            "name = \"orders\"\n{CHECK}[mix.default]\n[[mix.default.request]]\nweight = 0\npath = \"/items/1\"\n"
        ));
        assert!(e.contains("mix `default`") && e.contains("weight 0"), "{e}");
    }

    #[test]
    fn a_mix_path_without_its_slash_or_with_an_unknown_value_is_refused_when_read() {
        let e =
            refusal(&format!("name = \"orders\"\n{CHECK}[mix.default]\n[[mix.default.request]]\npath = \"items/1\"\n"));
        assert!(e.contains("mix `default`") && e.contains("must start with '/'"), "{e}");
        let e = refusal(&format!(
            "name = \"orders\"\n{CHECK}[mix.default]\n[[mix.default.request]]\npath = \"/items/{{idd}}\"\n"
        ));
        assert!(e.contains("mix `default`") && e.contains("no value list named 'idd'"), "{e}");
    }

    #[test]
    fn a_mix_whose_value_file_a_dataset_build_writes_later_is_left_to_its_step() {
        let file: ScenarioFile = toml::from_str(&format!(
            "name = \"orders\"\n{CHECK}[mix.default]\n[[mix.default.request]]\npath = \"/items/{{id}}\"\n\
             [mix.default.values]\nid = {{ file = \"data/ids.txt\" }}\n"
        ))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        validate(&file, dir.path(), &dir.path().join("scenario.toml")).unwrap();
    }
}
