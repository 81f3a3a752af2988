# SPDX-License-Identifier: BSD-3-Clause
test_distro_trixie.sh