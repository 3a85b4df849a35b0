/* A C program of its own around tests/c/alloc_api.c: linked against the static library that
 * `cargo rustc -p numatask-alloc --features c-api --release --crate-type staticlib` builds, as a
 * C user links it (scripts/test.sh, the link line of alloc/include/numatask_alloc.h). Exits 0,
 * or 1 naming the line of the first check that failed. */
#include <stdio.h>

int numatask_c_api_selftest(void);

int main(void) {
    int line = numatask_c_api_selftest();
    if (line != 0) {
        fprintf(stderr, "tests/c/alloc_api.c:%d: check failed\n", line);
        return 1;
    }
    puts("the C API works from a C program linked against libnumatask_alloc.a");
    return 0;
}
