"""What the tests and the benchmarks share to drive the real app in Debian's chromium: opening pages and waiting
for their runs (browser.py), a class arriving at once (arrival.py), and the WCAG checks beside axe-core
(accessibility.py). The servers they drive are started by serve.process."""
