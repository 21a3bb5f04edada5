//! A manifest's `run` made into what the sandbox starts. Without shell syntax, it is split into words
//! first and each word filled (a placeholder's value stays one word, whatever it holds): no shell at all.
//! With shell syntax (`$JAVA_OPTS`, `&&`, a leading `VAR=value`), it goes to `sh -c`, each placeholder's
//! value quoted as one shell word, so that a `--dep` URL or a JAVA_HOME with `$(…)` or a space is data.
use crate::manifest::fill_placeholders;
use crate::sandbox::process::StartCommand;
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;

/// Characters that only a shell understands (expansions, operators, globs, comments).
const SHELL_SYNTAX: &[char] = &['$', '`', '|', '&', ';', '<', '>', '(', ')', '*', '?', '[', ']', '~', '#', '!', '\n'];

/// `run` with its placeholders filled from `values`.
pub fn from_run(run: &str, values: &BTreeMap<String, String>) -> Result<StartCommand> {
    let words = shlex::split(run).ok_or_else(|| anyhow!("`run` has an unclosed quote or a trailing backslash"))?;
    if words.is_empty() {
        bail!("`run` is empty; give the command that starts the service");
    }
    if !needs_shell(run, &words) {
        let filled: Result<Vec<String>> = words.iter().map(|w| fill_placeholders(w, values)).collect();
        return Ok(StartCommand::Direct(filled?));
    }
    let mut quoted = BTreeMap::new();
    for (k, v) in values {
        let q = shlex::try_quote(v).map_err(|e| anyhow!("placeholder {{{k}}} cannot be given to a shell: {e}"))?;
        quoted.insert(k.clone(), q.into_owned());
    }
    Ok(StartCommand::Shell(fill_placeholders(run, &quoted)?))
}

/// Whether `run` needs a shell: shell syntax outside its placeholders, or a leading `VAR=value`.
fn needs_shell(run: &str, words: &[String]) -> bool {
    let assignment = words[0].split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with('{')
    });
    assignment || without_placeholders(run).contains(SHELL_SYNTAX)
}

/// `text` with every `{name}` placeholder taken out (its braces are not shell syntax).
fn without_placeholders(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        match rest[start..].find('}') {
            Some(end) => rest = &rest[start + end + 1..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("port".to_string(), "8080".to_string()),
            ("java".to_string(), "/opt/my jdk/bin/java".to_string()),
            ("dep.opensearch.url".to_string(), "http://$(touch /tmp/x)@127.0.0.1:9200".to_string()),
        ])
    }

    fn direct(words: &[&str]) -> StartCommand {
        StartCommand::Direct(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn a_plain_run_is_split_then_filled_each_value_one_word() {
        let v = values();
        assert_eq!(from_run("./hello --port {port}", &v).unwrap(), direct(&["./hello", "--port", "8080"]));
        assert_eq!(from_run("{java} -jar x.jar", &v).unwrap(), direct(&["/opt/my jdk/bin/java", "-jar", "x.jar"]));
        assert_eq!(
            from_run("./svc --store={dep.opensearch.url}", &v).unwrap(),
            direct(&["./svc", "--store=http://$(touch /tmp/x)@127.0.0.1:9200"])
        );
        assert_eq!(from_run("node 'my server.js'", &v).unwrap(), direct(&["node", "my server.js"]));
    }

    #[test]
    fn shell_syntax_keeps_the_shell_with_each_value_quoted() {
        let v = values();
        let StartCommand::Shell(line) = from_run("{java} $JAVA_OPTS -jar x.jar", &v).unwrap() else { panic!() };
        assert_eq!(shlex::split(&line).unwrap()[0], "/opt/my jdk/bin/java", "{line}");
        let StartCommand::Shell(line) = from_run("./svc {dep.opensearch.url} && true", &v).unwrap() else { panic!() };
        // The URL is one single-quoted word: the shell sees no command substitution in it.
        assert!(line.contains("'http://$(touch /tmp/x)@127.0.0.1:9200'"), "{line}");
        assert!(matches!(from_run("GOGC=50 ./svc", &v).unwrap(), StartCommand::Shell(_)));
    }

    #[test]
    fn bad_runs_and_placeholders_are_named() {
        let v = values();
        assert!(from_run("./svc 'open", &v).unwrap_err().to_string().contains("unclosed quote"));
        assert!(from_run("  ", &v).unwrap_err().to_string().contains("`run` is empty"));
        assert!(from_run("./svc {dep.x.url}", &v).unwrap_err().to_string().contains("unknown placeholder {dep.x.url}"));
        let nul = BTreeMap::from([("x".to_string(), "a\0b".to_string())]);
        assert!(from_run("./svc {x} $A", &nul).unwrap_err().to_string().contains("placeholder {x}"));
    }
}
