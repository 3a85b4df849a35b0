/* A C program using numatask's allocator through alloc/include/numatask_alloc.h: linked into
 * tests/c_api.rs (numatask's `c-api` feature), which calls numatask_c_api_selftest. Returns 0,
 * or the line of the first check that failed. */
#include <errno.h>
#include <string.h>

#include "numatask_alloc.h"

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond))                                                                           \
            return __LINE__;                                                                   \
    } while (0)

int numatask_c_api_selftest(void) {
    char msg[256];
    static const int policies[] = {OMP_DISTRIBUTION_STANDARD, OMP_DISTRIBUTION_FINE,
                                   OMP_DISTRIBUTION_COARSE};
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        size_t n = 3 * 4096 + 5;
        unsigned char *p = omp_malloc_specific(n, policies[i]);
        CHECK(p != NULL);
        for (size_t k = 0; k < n; k++)
            CHECK(p[k] == 0); /* zeroed */
        memset(p, 7, n);
        CHECK(numatask_omp_free(p) == 0);
        /* Freed twice: refused, nothing freed. */
        CHECK(numatask_omp_free(p) == -1 && errno == EINVAL);
    }
    void *q = omp_malloc(100);
    CHECK(q != NULL && numatask_omp_free(q) == 0);
    CHECK(numatask_omp_free(NULL) == 0);

    errno = 0;
    CHECK(omp_malloc_specific(4096, 7) == NULL && errno == EINVAL);
    size_t len = numatask_last_error(msg, sizeof msg);
    CHECK(len == strlen(msg));
    CHECK(strstr(msg, "unknown data distribution code 7") != NULL);

    errno = 0;
    CHECK(omp_malloc_specific(0, OMP_DISTRIBUTION_FINE) == NULL && errno == EINVAL);
    numatask_last_error(msg, sizeof msg);
    CHECK(strstr(msg, "0 bytes") != NULL);

    errno = 0;
    CHECK(omp_malloc_specific((size_t)-1 / 2, OMP_DISTRIBUTION_COARSE) == NULL && errno == ENOMEM);

    /* Truncation: a 5-byte buffer gets 4 characters and the NUL, the full length returned. */
    char small[5];
    CHECK(numatask_last_error(small, sizeof small) > 4 && strlen(small) == 4);
    return 0;
}
