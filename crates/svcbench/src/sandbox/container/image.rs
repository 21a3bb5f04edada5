//! The image a container service runs: a tag given as it is (pulled once where it is missing), or one
//! the engine builds from a Containerfile, tagged by the SHA-256 of its build context, so that an unchanged
//! context is never built again and a changed one always is. Only the newest few images svcbench built for
//! a service are kept.
use super::engine::Engine;
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many images svcbench keeps per service it builds for (older ones are removed).
pub const KEPT_PER_SERVICE: usize = 3;
/// How long an image build or pull may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Where an image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A tag, local or pullable.
    Tag(String),
    /// A Containerfile and its build context, for the service named (the image's repository name).
    Build { containerfile: PathBuf, context: PathBuf, repository: String },
}

/// The repository name svcbench builds a service's images under (lowercase, as engines require).
pub fn repository_for(service: &str) -> String {
    let cleaned: String = service
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '-' })
        .collect();
    format!("svcbench-{cleaned}")
}

/// Files of the context in a fixed order (svcbench's own `.svcbench` stamps left out).
fn context_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the build context {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.file_name().is_some_and(|n| n == ".svcbench") {
            continue;
        }
        if p.is_dir() {
            context_files(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// SHA-256 over the Containerfile and every file of the context (relative path and bytes), as 16 hex digits.
pub fn content_hash(containerfile: &Path, context: &Path) -> Result<String> {
    let mut files = Vec::new();
    context_files(context, &mut files)?;
    let mut h = Sha256::new();
    h.update(std::fs::read(containerfile).with_context(|| format!("cannot read {}", containerfile.display()))?);
    for f in files {
        h.update(f.strip_prefix(context).unwrap_or(&f).to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?);
    }
    Ok(h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// The tag the source names now (for a build: its repository and the context's hash).
pub fn tag_of(source: &Source) -> Result<String> {
    match source {
        Source::Tag(t) => Ok(t.clone()),
        Source::Build { containerfile, context, repository } => {
            Ok(format!("{repository}:{}", content_hash(containerfile, context)?))
        }
    }
}

/// Whether the engine holds `tag` locally.
pub fn exists(engine: &Engine, tag: &str) -> bool {
    engine.run(&["image", "inspect", "--format", "{{.Id}}", tag], super::engine::COMMAND_TIMEOUT).is_ok()
}

/// The image's ID as the engine holds it under `tag` (None: not here).
pub fn id(engine: &Engine, tag: &str) -> Option<String> {
    let text = engine.run(&["image", "inspect", "--format", "{{.Id}}", tag], super::engine::COMMAND_TIMEOUT).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// The image's size in bytes, as the engine reports it.
pub fn size_bytes(engine: &Engine, tag: &str) -> Result<u64> {
    let text = engine.run(&["image", "inspect", "--format", "{{.Size}}", tag], super::engine::COMMAND_TIMEOUT)?;
    text.trim().parse().with_context(|| format!("the engine gave {text:?} as the size of image {tag}"))
}

/// The images a Containerfile builds on that only this machine can have (`localhost/…`: no registry serves
/// them), as its `FROM` lines name them.
pub fn local_bases(containerfile: &Path) -> Result<Vec<String>> {
    let text =
        std::fs::read_to_string(containerfile).with_context(|| format!("cannot read {}", containerfile.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            if !words.next()?.eq_ignore_ascii_case("FROM") {
                return None;
            }
            words.find(|w| !w.starts_with("--")).map(str::to_string)
        })
        .filter(|image| image.starts_with("localhost/"))
        .collect())
}

/// Refuses, in one line, a Containerfile whose local base image the engine does not have (pulling it would
/// fail with a registry error that says nothing of how to make it).
pub fn check_bases(engine: &Engine, containerfile: &Path) -> Result<()> {
    for base in local_bases(containerfile)? {
        if exists(engine, &base) {
            continue;
        }
        let how = if base.starts_with("localhost/svcbench-") {
            "make it with scripts/base-images.sh".to_string()
        } else {
            format!("build or load it first (`{} build -t {base} …`)", engine.program)
        };
        bail!("{} builds on the image {base}, which {} does not have: {how}", containerfile.display(), engine.program);
    }
    Ok(())
}

/// Makes the image available (built or pulled where missing); returns its tag and whether it was built now.
pub fn ensure(engine: &Engine, source: &Source, log: &Path) -> Result<(String, bool)> {
    let tag = tag_of(source)?;
    if exists(engine, &tag) {
        return Ok((tag, false));
    }
    match source {
        Source::Tag(t) => {
            crate::errln!("svcbench: image {t} is not here; pulling it with {}", engine.program);
            engine.run(&["pull", t], BUILD_TIMEOUT).with_context(|| {
                format!(
                    "image {t} is neither local nor pullable: build it (`{} build -t {t} …`) or fix the tag",
                    engine.program
                )
            })?;
        }
        Source::Build { containerfile, context, repository } => {
            let (cf, ctx) = (containerfile.to_string_lossy(), context.to_string_lossy());
            crate::errln!("svcbench: building image {tag} from {cf}");
            let out = engine.run(&["build", "-f", &cf, "-t", &tag, &ctx], BUILD_TIMEOUT);
            if let Err(e) = out {
                let _ = crate::safe_fs::write_file(log, format!("{e:#}"));
                bail!("image build of {tag} failed: {e:#}");
            }
            prune(engine, repository, &tag);
        }
    }
    Ok((tag, true))
}

/// Removes all but the newest [`KEPT_PER_SERVICE`] images of `repository` (never `keep`).
fn prune(engine: &Engine, repository: &str, keep: &str) {
    let Ok(text) = engine.run(
        &["images", "--filter", &format!("reference={repository}"), "--format", "{{.Repository}}:{{.Tag}}"],
        super::engine::COMMAND_TIMEOUT,
    ) else {
        return;
    };
    for old in beyond_the_kept(&text, keep) {
        let _ = engine.run(&["rmi", old], super::engine::COMMAND_TIMEOUT);
    }
}

/// Of the tags an engine lists, newest first, those beyond the newest [`KEPT_PER_SERVICE`] counting `keep`.
/// Podman lists a local image as `localhost/NAME:TAG` where it was tagged `NAME:TAG`: the same image.
fn beyond_the_kept<'a>(listed: &'a str, keep: &str) -> Vec<&'a str> {
    fn bare(t: &str) -> &str {
        t.strip_prefix("localhost/").unwrap_or(t)
    }
    let others = listed.lines().map(str::trim).filter(|t| !t.is_empty() && bare(t) != bare(keep));
    others.skip(KEPT_PER_SERVICE.saturating_sub(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_three_images_are_kept_the_new_one_among_them_as_podman_lists_it() {
        let listed = "localhost/svcbench-x:d\nlocalhost/svcbench-x:c\nlocalhost/svcbench-x:b\nlocalhost/svcbench-x:a\n";
        assert_eq!(KEPT_PER_SERVICE, 3);
        assert_eq!(beyond_the_kept(listed, "svcbench-x:d"), ["localhost/svcbench-x:a"]);
        assert_eq!(beyond_the_kept(listed, "localhost/svcbench-x:d"), ["localhost/svcbench-x:a"]);
        // Docker lists it as tagged.
        assert_eq!(beyond_the_kept("svcbench-x:c\nsvcbench-x:b\nsvcbench-x:a\n", "svcbench-x:c"), Vec::<&str>::new());
    }

    #[test]
    fn a_containerfile_s_local_bases_are_its_localhost_from_images() {
        let dir = tempfile::tempdir().unwrap();
        let cf = dir.path().join("Containerfile");
        let text = "# FROM localhost/not-this\nFROM --platform=linux/amd64 localhost/svcbench-jre17 AS run\n\
                    from docker.io/library/debian:12\nCOPY x /x\nFROM localhost/other:1\n";
        std::fs::write(&cf, text).unwrap();
        assert_eq!(local_bases(&cf).unwrap(), ["localhost/svcbench-jre17", "localhost/other:1"]);
    }

    #[test]
    fn the_hash_follows_the_context_s_content_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let cf = dir.path().join("Containerfile");
        std::fs::write(&cf, "FROM scratch\nCOPY app /app\n").unwrap();
        std::fs::write(dir.path().join("app"), "one").unwrap();
        let first = content_hash(&cf, dir.path()).unwrap();
        // svcbench's own stamps are not part of the image.
        std::fs::create_dir(dir.path().join(".svcbench")).unwrap();
        std::fs::write(dir.path().join(".svcbench/stamp"), "x").unwrap();
        assert_eq!(content_hash(&cf, dir.path()).unwrap(), first);
        std::fs::write(dir.path().join("app"), "two").unwrap();
        assert_ne!(content_hash(&cf, dir.path()).unwrap(), first, "a changed file must change the tag");
    }

    #[test]
    fn repositories_are_lowercase_engine_names() {
        assert_eq!(repository_for("Hello-Go@container"), "svcbench-hello-go-container");
    }
}
