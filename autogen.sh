#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates configure and the Makefile.in files from configure.ac and
# Makefile.am. Run once after a fresh clone.
set -e
cd "$(dirname "$0")"
mkdir -p config/aux
autoreconf --install --force --warnings=all
