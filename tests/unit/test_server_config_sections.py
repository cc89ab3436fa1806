"""The server reads a section of Streamlit's configuration from an index (ui/server.py, _find_config_sections_once):
for every section it must give what Streamlit's own scan gives, after an option is set and after the configuration
is read again too. Run in a fresh interpreter, as the server's set-up changes the process."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMPARE = """
from streamlit import config

scan = config.get_options_for_section
import ui.server  # noqa: F401
indexed = config.get_options_for_section
assert indexed is not scan


def same() -> int:
    sections = {option.section for option in config.get_config_options().values()}
    for section in sections | {"no such section"}:
        assert indexed(section) == scan(section), section
    return len(sections)


counted = same()
assert indexed("theme")["primaryColor"] == "#1f4fbf"  # .streamlit/config.toml's
config._set_option("theme.primaryColor", "#123456", "a test")
assert indexed("theme")["primaryColor"] == "#123456"
same()
config.get_config_options(force_reparse=True)  # a new dict of options, as when a config file changes
assert indexed("theme")["primaryColor"] == "#1f4fbf"
same()
print(counted)
"""


def test_a_sections_options_from_the_index_are_streamlits_own():
    env = os.environ | {"HOW_LMS_WARM": "0"}
    done = subprocess.run([sys.executable, "-c", COMPARE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) >= 10  # every section Streamlit has (15 in 1.67)
