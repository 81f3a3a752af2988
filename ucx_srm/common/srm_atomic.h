/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory-order primitives for memory shared between processes. GCC/Clang
 * builtins on plain integers rather than C11 _Atomic, so that the same
 * headers compile as C and as C++ (the tests).
 */
#ifndef SRM_ATOMIC_H
#define SRM_ATOMIC_H

#define srm_load_relaxed(_p)      __atomic_load_n((_p), __ATOMIC_RELAXED)
#define srm_load_acquire(_p)      __atomic_load_n((_p), __ATOMIC_ACQUIRE)
#define srm_store_relaxed(_p, _v) __atomic_store_n((_p), (_v), __ATOMIC_RELAXED)
#define srm_store_release(_p, _v) __atomic_store_n((_p), (_v), __ATOMIC_RELEASE)
#define srm_exchange(_p, _v)      __atomic_exchange_n((_p), (_v), __ATOMIC_SEQ_CST)
#define srm_fence()               __atomic_thread_fence(__ATOMIC_SEQ_CST)

#endif
