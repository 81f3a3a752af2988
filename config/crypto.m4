dnl SPDX-License-Identifier: BSD-3-Clause
#
# SRM_CHECK_CRYPTO: OpenSSL's libcrypto computes the HMAC with which agents
# prove a shared cluster secret (UCX_SRM_SECRET_FILE). Required: an agent
# that silently could not check a configured secret would be worse than none.
#
AC_DEFUN([SRM_CHECK_CRYPTO], [
    PKG_CHECK_MODULES([CRYPTO], [libcrypto >= 1.1], [],
        [AC_MSG_ERROR([libcrypto (OpenSSL) not found: install libssl-dev, or run contrib/install-deps.sh])])
])
