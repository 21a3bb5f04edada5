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
# With --check it changes nothing and exits 1 when a page's report is not, byte for byte but its
# generation time, what its store gives today (the test suite runs it so: tests/report.rs).
# Usage: scripts/seed-pages.sh [--check] [PAGE...]   (default: every page with a marker)
set -euo pipefail
cd "$(dirname "$0")/.."
check=""
if [ "${1:-}" = --check ]; then check=1; shift; fi
bin=${SVCBENCH_BIN:-target/ci/svcbench}
[ -x "$bin" ] || cargo build --profile ci --locked -p svcbench
pages=("$@")
[ ${#pages[@]} -gt 0 ] || mapfile -t pages < <(grep -l '^<!-- svcbench study ' docs/seeds/*.md)
[ ${#pages[@]} -gt 0 ] || { echo "seed-pages: no page in docs/seeds embeds a report" >&2; exit 1; }
python3 - "$bin" "$check" "${pages[@]}" <<'EOF'
import re, subprocess, sys, tempfile, shutil, os
bin, check, pages = sys.argv[1], sys.argv[2] == '1', sys.argv[3:]
pattern = re.compile(r'(<!-- svcbench study (\S+)( --quick)? --db (\S+) -->\n)(.*?)(<!-- end of svcbench\'s report -->)', re.S)
# The only line that may differ between two renderings of one store: "…; generated <time> by svcbench …".
generated = re.compile(r'; generated .*? by svcbench ')
def timeless(text):
    return generated.sub('; generated … by svcbench ', text)
def report_of(study, quick, store):
    with tempfile.TemporaryDirectory() as tmp:
        # A copy: opening a store may bring its schema up to date, and the committed one must not change.
        shutil.copy(store, os.path.join(tmp, os.path.basename(store)))
        out = os.path.join(tmp, 'report.html')
        subprocess.run([os.path.abspath(bin), 'study', os.path.abspath(study), '--report-only']
                       + (['--quick'] if quick else []) + ['--db', os.path.basename(store), '-o', out], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        report = open(os.path.join(tmp, 'report.md')).read()
    return report + ('' if report.endswith('\n') else '\n')
stale = []
for page in pages:
    text = open(page).read()
    def regenerate(m):
        report = report_of(m.group(2), m.group(3), m.group(4))
        if timeless(report) != timeless(m.group(5)):
            stale.append(f"{page}: its report of {m.group(4)} is not what the store gives today")
        return m.group(1) + report + m.group(6)
    new, n = pattern.subn(regenerate, text)
    if n == 0:
        sys.exit(f"seed-pages: {page} has no svcbench report marker")
    if check:
        print(f"{page}: {n} report(s) checked")
    else:
        open(page, 'w').write(new)
        print(f"{page}: {n} report(s) regenerated")
if check and stale:
    sys.exit("\n".join(stale) + "\nseed-pages: run scripts/seed-pages.sh to regenerate them")
EOF
