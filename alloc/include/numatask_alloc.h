/*
 * numatask's data-distribution allocator for C (the core paper's Listing 2), exported by the
 * numatask-alloc crate built with its `c-api` feature (numatask's `c-api` feature enables it).
 *
 *   void *p = omp_malloc_specific(n * sizeof(double), OMP_DISTRIBUTION_COARSE);
 *   if (!p) { char msg[256]; numatask_last_error(msg, sizeof msg); ... }
 *   numatask_omp_free(p);
 *
 * Errors: NULL (or -1), errno ENOMEM (more memory than the machine or the node has) or EINVAL
 * (size 0, an unknown distribution code, a pointer the allocator did not return), and the
 * message for numatask_last_error. Memory comes zeroed, in whole pages.
 *
 * Building and linking a C program (as scripts/test.sh does with tests/c/):
 *
 *   cargo rustc -p numatask-alloc --features c-api --release --crate-type staticlib
 *   cc -Ialloc/include prog.c target/release/libnumatask_alloc.a \
 *      -lhwloc -ludev -lpthread -ldl -lm
 *
 * (`--crate-type cdylib` instead gives libnumatask_alloc.so.) OMP_DATA_DISTRIBUTION and
 * NUMATASK_TOPOLOGY are read as for Rust programs.
 */
#ifndef NUMATASK_ALLOC_H
#define NUMATASK_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Distribution codes of omp_malloc_specific. */
#define OMP_DISTRIBUTION_STANDARD 0 /* first touch (the OS's default) */
#define OMP_DISTRIBUTION_FINE 1     /* pages round-robin over all NUMA nodes */
#define OMP_DISTRIBUTION_COARSE 2   /* the whole allocation on one node, nodes round-robin */

/* Allocates `size` bytes with the policy of OMP_DATA_DISTRIBUTION (standard, fine, coarse). */
void *omp_malloc(size_t size);

/* Allocates `size` bytes with the given OMP_DISTRIBUTION_* policy. */
void *omp_malloc_specific(size_t size, int distribution);

/* Frees memory from omp_malloc or omp_malloc_specific: 0, or -1 (errno EINVAL) for a pointer
 * the allocator did not return or already freed. NULL is ignored. (Not `omp_free`: OpenMP 5
 * defines omp_free(void *, omp_allocator_handle_t).) */
int numatask_omp_free(void *ptr);

/* Copies this thread's last error message, NUL-terminated and truncated to `len` bytes, into
 * `buf`; returns the message's full length. */
size_t numatask_last_error(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* NUMATASK_ALLOC_H */
