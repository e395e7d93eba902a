#!/usr/bin/env bash
# Rewrites the README's op table (between <!-- op-table --> and <!-- /op-table -->) from the kernel
# registration table; tests/readme_op_table.rs fails until this has been run after a table change.
set -euo pipefail
cd "$(dirname "$0")/.."
table="$(cargo run -q --release --example op_table 2>/dev/null)"
TABLE="$table" python3 - <<'PY'
import os
readme = open("README.md").read()
start = readme.index("<!-- op-table -->") + len("<!-- op-table -->")
end = readme.index("<!-- /op-table -->")
open("README.md", "w").write(readme[:start] + "\n```text\n" + os.environ["TABLE"] + "\n```\n" + readme[end:])
PY
