"""`precmon --help` stays fast: the entry point and the parser load no measuring layer and no
HTTP client (the handlers are imported when a command runs). The parser reads three data-only
modules, the metric registry (for the definitions in --help), the report format list (for
--format) and the server-kind registry (for --server and the usual ports): those, and nothing
else below the CLI, may load."""

from __future__ import annotations

import subprocess
import sys


def test_the_entry_point_loads_no_layer():
    code = (
        "import sys, precmon.cli; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'rich', 'textual') "
        "or (m.startswith(('precmon.measure', 'precmon.servers', 'precmon.power', 'precmon.report')) "
        "and m not in ('precmon.measure', 'precmon.core.registry', 'precmon.report', 'precmon.report.formats', "
        "'precmon.servers', 'precmon.servers.kinds'))); "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
