#!/usr/bin/env bash
# Regenerates the svcbench reports embedded in the seeds' pages (docs/seeds/*.md) from the study stores
# committed beside them (docs/seeds/data/), so that no table there is typed by hand. A page holds each
# report between two markers; the first names the study file and the store:
#   <!-- svcbench study studies/seed-003-attempts.toml --db docs/seeds/data/seed-003-attempts.db -->
#   …the study's Markdown report, as `svcbench study FILE --report-only` writes it…
#   <!-- end of svcbench's report -->
# A study's quick form is named so (its sessions are stored as the quick form's):
#   <!-- svcbench study studies/seed-004-capacity.toml --quick --db docs/seeds/data/seed-004-capacity-quick.db -->
#   <!-- end of svcbench's report -->
# A verdict the page quotes is embedded the same way, as `svcbench compare` prints it for the command in
# its marker (a store named in it is read from a copy; its headings are set two levels down, under the
# page's own):
#   <!-- svcbench compare --db docs/seeds/data/seed-000-ktor-engines.db --base service=A --new service=B -->
#   <!-- end of svcbench's compare -->
# With --check it changes nothing and exits 1 when a page's report is not, byte for byte but its
# generation time, what its store gives today, or a comparison is not, byte for byte, what `compare` prints
# today (the test suite runs it so: tests/report.rs).
# Usage: scripts/seed-pages.sh [--check] [PAGE...]   (default: every page with a marker)
set -euo pipefail
cd "$(dirname "$0")/.."
check=""
if [ "${1:-}" = --check ]; then check=1; shift; fi
bin=${SVCBENCH_BIN:-target/ci/svcbench}
[ -x "$bin" ] || cargo build --profile ci --locked -p svcbench
pages=("$@")
[ ${#pages[@]} -gt 0 ] || mapfile -t pages < <(grep -lE '^<!-- svcbench (study|compare) ' docs/seeds/*.md)
[ ${#pages[@]} -gt 0 ] || { echo "seed-pages: no page in docs/seeds embeds a report" >&2; exit 1; }
python3 - "$bin" "$check" "${pages[@]}" <<'EOF'
import re, subprocess, sys, tempfile, shutil, os, shlex
bin, check, pages = sys.argv[1], sys.argv[2] == '1', sys.argv[3:]
pattern = re.compile(r'(<!-- svcbench study (\S+)( --quick)? --db (\S+) -->\n)(.*?)(<!-- end of svcbench\'s report -->)', re.S)
# The only line that may differ between two renderings of one store: "…; generated <time> by svcbench …".
generated = re.compile(r'; generated .*? by svcbench ')
def timeless(text):
    return generated.sub('; generated … by svcbench ', text)
def copy_store(store, tmp):
    # A copy: opening a store may bring its schema up to date, and the committed one must not change.
    if not os.path.isfile(store):
        sys.exit(f"seed-pages: no store {store} (a marker names it): commit it under docs/seeds/data/ or fix the marker")
    shutil.copy(store, os.path.join(tmp, os.path.basename(store)))
    return os.path.basename(store)
def run(argv, cwd, what):
    # svcbench says what is wrong on stderr; one line here names the marker it came from.
    r = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"seed-pages: `svcbench {what}` failed (exit {r.returncode}); fix the marker or the store")
    return r.stdout
def report_of(study, quick, store):
    with tempfile.TemporaryDirectory() as tmp:
        db = copy_store(store, tmp)
        out = os.path.join(tmp, 'report.html')
        run([os.path.abspath(bin), 'study', os.path.abspath(study), '--report-only']
            + (['--quick'] if quick else []) + ['--db', db, '-o', out], tmp, f"study {study} --db {store}")
        report = open(os.path.join(tmp, 'report.md')).read()
    return report + ('' if report.endswith('\n') else '\n')
compare_pattern = re.compile(r'(<!-- svcbench compare (.*?) -->\n)(.*?)(<!-- end of svcbench\'s compare -->)', re.S)
def compare_of(args):
    with tempfile.TemporaryDirectory() as tmp:
        argv = []
        for a in shlex.split(args):
            if a.endswith('.db'):
                # Named by its file name alone, so the output is the same from any folder.
                a = copy_store(a, tmp)
            argv.append(a)
        out = run([os.path.abspath(bin), 'compare'] + argv, tmp, f"compare {args}")
    # Under the page's own headings.
    out = re.sub(r'^#', '###', out, flags=re.M)
    return out + ('' if out.endswith('\n') else '\n')
stale = []
for page in pages:
    text = open(page).read()
    def regenerate(m):
        report = report_of(m.group(2), m.group(3), m.group(4))
        if timeless(report) != timeless(m.group(5)):
            stale.append(f"{page}: its report of {m.group(4)} is not what the store gives today")
        return m.group(1) + report + m.group(6)
    def recompare(m):
        out = compare_of(m.group(2))
        if out != m.group(3):
            stale.append(f"{page}: its `svcbench compare {m.group(2)}` is not what the store gives today")
        return m.group(1) + out + m.group(4)
    new, n = pattern.subn(regenerate, text)
    new, c = compare_pattern.subn(recompare, new)
    if n + c == 0:
        sys.exit(f"seed-pages: {page} has no svcbench report or compare marker")
    if check:
        print(f"{page}: {n} report(s) and {c} comparison(s) checked")
    else:
        open(page, 'w').write(new)
        print(f"{page}: {n} report(s) and {c} comparison(s) regenerated")
if check and stale:
    sys.exit("\n".join(stale) + "\nseed-pages: run scripts/seed-pages.sh to regenerate them")
EOF
