#!/bin/sh
# Regenerates configure and the Makefile.in files from configure.ac and
# Makefile.am. Run once after a fresh clone.
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf --install --force --warnings=all
