#!/usr/bin/env bash
# Regenerates the svcbench reports embedded in the seeds' pages (docs/seeds/*.md) from the study stores
# committed beside them (docs/seeds/data/), so that no table there is typed by hand. A page holds each
# report between two markers; the first names the study file and the store:
#   <!-- svcbench study studies/seed-003-attempts.toml --db docs/seeds/data/seed-003-attempts.db -->
#   …the study's Markdown report, as `svcbench study FILE --report-only` writes it…
#   <!-- end of svcbench's report -->
# The test suite (tests/report.rs) checks that each page's report is what its store gives today.
# Usage: scripts/seed-pages.sh [PAGE...]   (default: every page with a marker)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SVCBENCH_BIN:-target/ci/svcbench}
[ -x "$bin" ] || cargo build --profile ci --locked -p svcbench
pages=("$@")
[ ${#pages[@]} -gt 0 ] || mapfile -t pages < <(grep -l '^<!-- svcbench study ' docs/seeds/*.md)
for page in "${pages[@]}"; do
  python3 - "$bin" "$page" <<'EOF'
import re, subprocess, sys, tempfile, shutil, os
bin, page = sys.argv[1], sys.argv[2]
text = open(page).read()
pattern = re.compile(r'(<!-- svcbench study (\S+) --db (\S+) -->\n)(.*?)(<!-- end of svcbench\'s report -->)', re.S)
def regenerate(m):
    study, store = m.group(2), m.group(3)
    with tempfile.TemporaryDirectory() as tmp:
        # A copy: opening a store may bring its schema up to date, and the committed one must not change.
        shutil.copy(store, os.path.join(tmp, os.path.basename(store)))
        out = os.path.join(tmp, 'report.html')
        subprocess.run([os.path.abspath(bin), 'study', os.path.abspath(study), '--report-only',
                        '--db', os.path.basename(store), '-o', out], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        report = open(os.path.join(tmp, 'report.md')).read()
    return m.group(1) + report + ('' if report.endswith('\n') else '\n') + m.group(5)
new, n = pattern.subn(regenerate, text)
if n == 0:
    sys.exit(f"{page}: no svcbench report marker")
open(page, 'w').write(new)
print(f"{page}: {n} report(s) regenerated")
EOF
done
