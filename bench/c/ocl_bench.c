/* The OpenCL peers of the kernel executor's benchmarks: the same kernels in OpenCL C, run by an
 * OpenCL CPU runtime (pocl, Intel's CPU runtime) through the ICD loader, and reported in the
 * lines the Rust benches print for numatask, so that one table holds both. Two groups: launch
 * and saxpy (the Rust side: bench/benches/kernels.rs),
 *
 *   launch  an empty kernel of 1 and of 1024 work-groups of 64 work-items: the wall time of one
 *           launch, from before clEnqueueNDRangeKernel to after clFinish (in-order queue);
 *   saxpy   y[i] = a*x[i] + y[i] over N floats in buffers the runtime allocates
 *           (CL_MEM_ALLOC_HOST_PTR: zero-copy on a CPU device), as time and GB/s counting
 *           12 bytes per element (read x, read y, write y); the result is checked on the host;
 *
 * and the suite, kernels with work-group barriers and local memory (the Rust side:
 * bench/benches/kernel_suite.rs, which prints the same lines for the same kernels, inputs,
 * sizes and work-group shapes, and takes the suite's --only names, --reps, --n, --mm-n and
 * --tr-n as below):
 *
 *   matmul        C = A * B, n x n floats row-major, n = --mm-n (default 1024, a multiple of 16);
 *                 A[i] = ((i mod 17) - 8) / 4 and B[i] = ((i mod 13) - 6) / 4 for the flat
 *                 index i. 2-D range (n, n), local (16, 16): global id 0 is C's column, id 1
 *                 its row. Each work-item keeps one sum; for t = 0, 16, .., n - 16 its group
 *                 loads A[row][t + lx] into a __local 16x16 tile at [ly][lx] and B[t + ly][col]
 *                 into another at [ly][lx], barrier, adds A_tile[ly][k] * B_tile[k][lx] for
 *                 k = 0..15, barrier; then C[row][col] = sum. gflops = 2 n^3 / time.
 *   reduce        n floats, n = --n (default 2^24, a multiple of 256), x[i] = (i mod 1021) / 8;
 *                 local 256. Each work-item stores x[global id] in __local scratch[lid], barrier;
 *                 for s = 128, 64, .., 1: if lid < s, scratch[lid] += scratch[lid + s]; barrier.
 *                 Work-item 0 writes scratch[0] to out[group id]: n / 256 sums. gbps counts
 *                 4 bytes per element (x read).
 *   scan          n floats as reduce's (--n, same x); local 256. Inclusive Hillis-Steele scan of
 *                 each group's 256 elements in two __local buffers of 256: x[global id] into
 *                 the first, barrier; for d = 1, 2, .., 128: dst[lid] = src[lid] + src[lid - d]
 *                 if lid >= d, else src[lid]; barrier; the buffers swap. Then out[global id] =
 *                 the last written buffer's [lid] (the prefix within the group, the group's
 *                 first element included), and work-item 255 writes it to sums[group id] (the
 *                 group's total). gbps counts 8 bytes per element (x read, out written).
 *   transpose     n x n floats, n = --tr-n (default 4096, a multiple of 16), in[i] = i mod 2^24;
 *                 out[x*n + y] = in[y*n + x]. 2-D range (n, n), local (16, 16): global id 0 is
 *                 x, id 1 is y. Each work-item reads in[y][x] into __local tile[ly][lx] of a
 *                 float tile[16][17] (a padded row), barrier, and writes tile[lx][ly] to
 *                 out[group id 0 * 16 + ly][group id 1 * 16 + lx]: reads and writes both run
 *                 along rows. gbps counts 8 bytes per element.
 *   axpy          y[i] = a*x[i] + y[i], saxpy's inputs (x[i] = (i mod 1024) / 8,
 *                 y[i] = 7i mod 512, a = 0.5) over n = --n floats, local 256 (not the runtime's
 *                 choice); gbps counts 12 bytes per element.
 *   axpy_barrier  axpy with a barrier between the loads and the store: t = a*x[i];
 *                 barrier(CLK_LOCAL_MEM_FENCE); y[i] = t + y[i]. Against axpy: what a barrier
 *                 costs in a kernel that needs none.
 * Every input is filled once, here through a mapping. Each kernel runs once untimed, then `reps`
 * timed launches (default 10 for matmul, 20 for the others; --reps sets all), each timed from
 * before clEnqueueNDRangeKernel to after clFinish; the line gives the median. After the timed
 * launches the output is compared on the host with a serial reference computed in double: these
 * inputs keep every sum exact in float in any order, and each value may still differ by the
 * rounding of its sum (|got - want| <= terms * 2^-24 * the sum of the terms' magnitudes; axpy's
 * y by one rounding per launch, as saxpy's; transpose exactly). A mismatch makes the exit status 1.
 *
 * usage: ocl_bench --platform SUBSTRING [--only LIST] [--reps N] [--n N] [--local N]
 *                  [--mm-n N] [--tr-n N] [--threads T]
 *   --platform  matched ignoring case against the platform names (`portable` or `pocl` for
 *               pocl, `intel` for Intel's CPU runtime); with none matching, the error lists them
 *   --only      a comma-separated list of launch, saxpy, all (launch and saxpy: the default),
 *               suite (matmul, reduce, scan, transpose, axpy, axpy_barrier), barrier-cost
 *               (axpy and axpy_barrier) and each suite kernel's name; whatever the list's
 *               order, they run in this comment's
 *   --reps      default 1000 launches, 50 saxpy runs, 10 matmul, 20 for the rest of the suite,
 *               each after one untimed launch
 *   --n         the length of saxpy, reduce, scan, axpy and axpy_barrier, default 2^24 (a
 *               multiple of 256 for the suite's)
 *   --local     saxpy's work-group size, default 0: NULL, the runtime's choice (`local=auto`)
 *   --mm-n      matmul's n, default 1024; --tr-n transpose's n, default 4096
 * Output, one line per measurement on stdout:
 *   kernels launch groups=1 impl=pocl threads=2 median_us=... min_us=... reps=...
 *   kernels saxpy n=16777216 impl=pocl threads=2 local=auto median_ms=... gbps=... reps=...
 *   kernels matmul n=1024 impl=pocl threads=2 local=16 median_ms=... gflops=... reps=...
 *   kernels reduce n=16777216 impl=pocl threads=2 local=256 median_ms=... gbps=... reps=...
 *   kernels scan n=16777216 impl=pocl threads=2 local=256 median_ms=... gbps=... reps=...
 *   kernels transpose n=4096 impl=pocl threads=2 local=16 median_ms=... gbps=... reps=...
 *   kernels axpy n=16777216 impl=pocl threads=2 local=256 median_ms=... gbps=... reps=...
 *   kernels axpy_barrier n=16777216 impl=pocl threads=2 local=256 median_ms=... gbps=... reps=...
 * (median_ms with 3 decimals, gbps and gflops with 2; GB and GFLOP are 10^9.)
 * The runtime's thread count is set by its environment (scripts/bench-kernels.sh says which
 * variable); --threads only labels the lines, and defaults to the device's compute units.
 * stderr has the device's name and compute units, and after the runs each thread's CPU time,
 * which shows how many workers the runtime used. Exit status: 0; 1 on an OpenCL error or a
 * wrong result; 2 on bad options.
 * Built by scripts/bench-kernels.sh and scripts/device-bundle.sh: gcc, -lOpenCL (ocl-icd).
 */
#define _POSIX_C_SOURCE 200809L /* sysconf, opendir: C99 and POSIX */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench_time.h"

/* The suite's work-group shapes, fixed by its definitions above: TILE x TILE work-items for
 * matmul and transpose, GROUP for the 1-D kernels. The kernels' source defines the same names
 * with the same values. */
#define TILE 16
#define GROUP 256
#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's value as a string literal */

static const char *KERNELS_SRC =
    "#define TILE " STR(TILE) "\n"
    "#define GROUP " STR(GROUP) "\n"
    "__kernel void empty(void) {}\n"
    "__kernel void saxpy(__global const float* x, __global float* y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "__kernel void matmul(__global const float* a, __global const float* b, __global float* c,\n"
    "                     int n) {\n"
    "    __local float ta[TILE][TILE];\n"
    "    __local float tb[TILE][TILE];\n"
    "    const int col = get_global_id(0), row = get_global_id(1);\n"
    "    const int lx = get_local_id(0), ly = get_local_id(1);\n"
    "    float sum = 0.0f;\n"
    "    for (int t = 0; t < n; t += TILE) {\n"
    "        ta[ly][lx] = a[row * n + t + lx];\n"
    "        tb[ly][lx] = b[(t + ly) * n + col];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int k = 0; k < TILE; k++) sum += ta[ly][k] * tb[k][lx];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    c[row * n + col] = sum;\n"
    "}\n"
    "__kernel void reduce(__global const float* x, __global float* out) {\n"
    "    __local float scratch[GROUP];\n"
    "    const size_t lid = get_local_id(0);\n"
    "    scratch[lid] = x[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = GROUP / 2; s > 0; s >>= 1) {\n"
    "        if (lid < s) scratch[lid] += scratch[lid + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (lid == 0) out[get_group_id(0)] = scratch[0];\n"
    "}\n"
    "__kernel void scan(__global const float* x, __global float* out, __global float* sums) {\n"
    "    __local float buf[2][GROUP];\n"
    "    const size_t lid = get_local_id(0), gid = get_global_id(0);\n"
    "    int src = 0;\n"
    "    buf[0][lid] = x[gid];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t d = 1; d < GROUP; d <<= 1) {\n"
    "        const float v = buf[src][lid];\n"
    "        buf[1 - src][lid] = lid >= d ? v + buf[src][lid - d] : v;\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        src = 1 - src;\n"
    "    }\n"
    "    out[gid] = buf[src][lid];\n"
    "    if (lid == GROUP - 1) sums[get_group_id(0)] = buf[src][lid];\n"
    "}\n"
    "__kernel void transpose(__global const float* in, __global float* out, int n) {\n"
    "    __local float tile[TILE][TILE + 1];\n"
    "    const int lx = get_local_id(0), ly = get_local_id(1);\n"
    "    tile[ly][lx] = in[get_global_id(1) * n + get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    out[(get_group_id(0) * TILE + ly) * n + get_group_id(1) * TILE + lx] = tile[lx][ly];\n"
    "}\n"
    "__kernel void axpy(__global const float* x, __global float* y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "__kernel void axpy_barrier(__global const float* x, __global float* y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    float t = a * x[i];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    y[i] = t + y[i];\n"
    "}\n";

/* The work-group size of the launch benchmark, and the group counts it measures. */
enum { LAUNCH_LOCAL = 64 };
/* Repetitions without --reps: launches are short and noisy, saxpy's are long; the suite's
 * matmul takes the longest of its kernels. */
enum {
    DEFAULT_LAUNCH_REPS = 1000,
    DEFAULT_SAXPY_REPS = 50,
    DEFAULT_MATMUL_REPS = 10,
    DEFAULT_SUITE_REPS = 20
};
static const size_t LAUNCH_GROUPS[] = {1, 1024};

static const char *cl_error_name(cl_int e) {
    switch (e) {
#define NAME(c) case c: return #c
        NAME(CL_SUCCESS);
        NAME(CL_DEVICE_NOT_FOUND);
        NAME(CL_DEVICE_NOT_AVAILABLE);
        NAME(CL_COMPILER_NOT_AVAILABLE);
        NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        NAME(CL_OUT_OF_RESOURCES);
        NAME(CL_OUT_OF_HOST_MEMORY);
        NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
        NAME(CL_MEM_COPY_OVERLAP);
        NAME(CL_IMAGE_FORMAT_MISMATCH);
        NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
        NAME(CL_BUILD_PROGRAM_FAILURE);
        NAME(CL_MAP_FAILURE);
        NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        NAME(CL_COMPILE_PROGRAM_FAILURE);
        NAME(CL_LINKER_NOT_AVAILABLE);
        NAME(CL_LINK_PROGRAM_FAILURE);
        NAME(CL_DEVICE_PARTITION_FAILED);
        NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
        NAME(CL_INVALID_VALUE);
        NAME(CL_INVALID_DEVICE_TYPE);
        NAME(CL_INVALID_PLATFORM);
        NAME(CL_INVALID_DEVICE);
        NAME(CL_INVALID_CONTEXT);
        NAME(CL_INVALID_QUEUE_PROPERTIES);
        NAME(CL_INVALID_COMMAND_QUEUE);
        NAME(CL_INVALID_HOST_PTR);
        NAME(CL_INVALID_MEM_OBJECT);
        NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
        NAME(CL_INVALID_IMAGE_SIZE);
        NAME(CL_INVALID_SAMPLER);
        NAME(CL_INVALID_BINARY);
        NAME(CL_INVALID_BUILD_OPTIONS);
        NAME(CL_INVALID_PROGRAM);
        NAME(CL_INVALID_PROGRAM_EXECUTABLE);
        NAME(CL_INVALID_KERNEL_NAME);
        NAME(CL_INVALID_KERNEL_DEFINITION);
        NAME(CL_INVALID_KERNEL);
        NAME(CL_INVALID_ARG_INDEX);
        NAME(CL_INVALID_ARG_VALUE);
        NAME(CL_INVALID_ARG_SIZE);
        NAME(CL_INVALID_KERNEL_ARGS);
        NAME(CL_INVALID_WORK_DIMENSION);
        NAME(CL_INVALID_WORK_GROUP_SIZE);
        NAME(CL_INVALID_WORK_ITEM_SIZE);
        NAME(CL_INVALID_GLOBAL_OFFSET);
        NAME(CL_INVALID_EVENT_WAIT_LIST);
        NAME(CL_INVALID_EVENT);
        NAME(CL_INVALID_OPERATION);
        NAME(CL_INVALID_GL_OBJECT);
        NAME(CL_INVALID_BUFFER_SIZE);
        NAME(CL_INVALID_MIP_LEVEL);
        NAME(CL_INVALID_GLOBAL_WORK_SIZE);
        NAME(CL_INVALID_PROPERTY);
        NAME(CL_INVALID_IMAGE_DESCRIPTOR);
        NAME(CL_INVALID_COMPILER_OPTIONS);
        NAME(CL_INVALID_LINKER_OPTIONS);
        NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef NAME
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR"; /* the ICD loader found no platform */
    default: return "unknown OpenCL error";
    }
}

/* Every OpenCL call goes through one of these: on failure the call's text and the code's name
 * go to stderr and the program exits 1. */
static void check(cl_int err, const char *call, int line) {
    if (err == CL_SUCCESS) return;
    fprintf(stderr, "ocl_bench.c:%d: %s failed: %s (%d)\n", line, call, cl_error_name(err), err);
    exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)
/* For the calls that return an object and report through their last argument, which EXPR
 * names `&err_`: VAR = EXPR, checked. */
#define CHECKED(var, expr)                                                                        \
    do {                                                                                          \
        cl_int err_ = CL_SUCCESS;                                                                 \
        (var) = (expr);                                                                           \
        check(err_, #expr, __LINE__);                                                             \
    } while (0)

/* The benchmarks, as bits of struct options' `only`, in the order they run. */
enum {
    RUN_LAUNCH = 1 << 0,
    RUN_SAXPY = 1 << 1,
    RUN_MATMUL = 1 << 2,
    RUN_REDUCE = 1 << 3,
    RUN_SCAN = 1 << 4,
    RUN_TRANSPOSE = 1 << 5,
    RUN_AXPY = 1 << 6,
    RUN_AXPY_BARRIER = 1 << 7,
    /* The suite's kernels whose length is --n, launched in groups of GROUP. */
    RUN_SUITE_1D = RUN_REDUCE | RUN_SCAN | RUN_AXPY | RUN_AXPY_BARRIER,
};

/* The names --only accepts. */
static const struct {
    const char *name;
    unsigned runs;
} SELECTIONS[] = {
    {"launch", RUN_LAUNCH},
    {"saxpy", RUN_SAXPY},
    {"all", RUN_LAUNCH | RUN_SAXPY},
    {"suite", RUN_MATMUL | RUN_REDUCE | RUN_SCAN | RUN_TRANSPOSE | RUN_AXPY | RUN_AXPY_BARRIER},
    {"matmul", RUN_MATMUL},
    {"reduce", RUN_REDUCE},
    {"scan", RUN_SCAN},
    {"transpose", RUN_TRANSPOSE},
    {"barrier-cost", RUN_AXPY | RUN_AXPY_BARRIER},
    {"axpy", RUN_AXPY},
    {"axpy_barrier", RUN_AXPY_BARRIER},
};

struct options {
    const char *platform;
    unsigned only; /* RUN_ bits */
    long reps, n, local, threads, mm_n, tr_n;
};

static void usage(const char *msg) {
    fprintf(stderr,
            "ocl_bench: %s\n"
            "usage: ocl_bench --platform SUBSTRING [--only LIST] [--reps N] [--n N] [--local N] "
            "[--mm-n N] [--tr-n N] [--threads T]\n"
            "  --only: a comma-separated list of launch, saxpy, all (launch and saxpy), suite, "
            "matmul, reduce, scan, transpose, barrier-cost (axpy and axpy_barrier), axpy, "
            "axpy_barrier\n",
            msg);
    exit(2);
}

/* A whole-number option value in [min, max]; anything else stops with the option's name. */
static long parse_long(const char *opt, const char *s, long min, long max) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "ocl_bench: %s '%s': expected a whole number from %ld to %ld\n", opt, s,
                min, max);
        exit(2);
    }
    return v;
}

/* The RUN_ bits of --only's comma-separated list of SELECTIONS' names. */
static unsigned parse_only(const char *list) {
    unsigned runs = 0;
    for (const char *p = list;; p++) {
        const size_t len = strcspn(p, ",");
        unsigned found = 0;
        for (size_t k = 0; k < sizeof SELECTIONS / sizeof SELECTIONS[0]; k++)
            if (strlen(SELECTIONS[k].name) == len && strncmp(p, SELECTIONS[k].name, len) == 0)
                found = SELECTIONS[k].runs;
        if (!found) {
            fprintf(stderr, "ocl_bench: --only '%s': '%.*s' names no benchmark\n", list,
                    (int)len, p);
            usage("see --only below");
        }
        runs |= found;
        p += len;
        if (*p == '\0') return runs;
    }
}

/* A side of a square matrix: a multiple of TILE in [TILE, max]. */
static long parse_side(const char *opt, const char *s, long max) {
    long v = parse_long(opt, s, TILE, max);
    if (v % TILE != 0) {
        fprintf(stderr, "ocl_bench: %s %ld: expected a multiple of %d\n", opt, v, TILE);
        exit(2);
    }
    return v;
}

static struct options parse_options(int argc, char **argv) {
    struct options o = {NULL, RUN_LAUNCH | RUN_SAXPY, 0, 1L << 24, 0, 0, 1024, 4096};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) usage("every option takes a value");
        const char *val = argv[++i];
        if (strcmp(opt, "--platform") == 0) {
            o.platform = val;
        } else if (strcmp(opt, "--only") == 0) {
            o.only = parse_only(val);
        } else if (strcmp(opt, "--reps") == 0) {
            o.reps = parse_long(opt, val, 1, 1000000);
        } else if (strcmp(opt, "--n") == 0) {
            o.n = parse_long(opt, val, 1, 1L << 30);
        } else if (strcmp(opt, "--local") == 0) {
            o.local = parse_long(opt, val, 0, 1L << 20);
        } else if (strcmp(opt, "--mm-n") == 0) {
            /* The kernel's int indices reach n^2. */
            o.mm_n = parse_side(opt, val, 8192);
        } else if (strcmp(opt, "--tr-n") == 0) {
            o.tr_n = parse_side(opt, val, 16384);
        } else if (strcmp(opt, "--threads") == 0) {
            o.threads = parse_long(opt, val, 1, 1L << 20);
        } else {
            fprintf(stderr, "ocl_bench: unknown option '%s'\n", opt);
            usage("see the options below");
        }
    }
    if (!o.platform) usage("--platform is required (e.g. portable for pocl, intel for Intel)");
    if ((o.only & RUN_SAXPY) && o.local > 0 && o.n % o.local != 0)
        usage("--n must be a multiple of --local (OpenCL 1.2 has no partial work-groups)");
    if ((o.only & RUN_SUITE_1D) && o.n % GROUP != 0)
        usage("--n must be a multiple of " STR(GROUP) " for reduce, scan, axpy and axpy_barrier");
    return o;
}

static int contains_ignoring_case(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t k = 0;
        while (k < n && hay[k] && tolower((unsigned char)hay[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n) return 1;
    }
    return n == 0;
}

/* How the output lines name an implementation: `pocl`, `intel-cpu` (Intel's CPU runtime; its
 * GPU and FPGA-emulation platforms have other names), or the platform's name in lower case
 * with spaces as dashes. */
static void impl_name(const char *platform, char *out, size_t len) {
    if (strcmp(platform, "Portable Computing Language") == 0)
        snprintf(out, len, "pocl");
    else if (strcmp(platform, "Intel(R) OpenCL") == 0)
        snprintf(out, len, "intel-cpu");
    else {
        size_t i = 0;
        for (; platform[i] && i + 1 < len; i++)
            out[i] = isspace((unsigned char)platform[i]) ? '-'
                                                         : (char)tolower((unsigned char)platform[i]);
        out[i] = '\0';
    }
}

/* The first platform whose name, or the name the output lines give it (`pocl`, `intel-cpu`),
 * contains `want` ignoring case; or exit 1 listing the platforms found. */
static cl_platform_id find_platform(const char *want, char *name, size_t name_len) {
    cl_uint count = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &count);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && count == 0)) {
        fprintf(stderr, "ocl_bench: no OpenCL platform found (is an ICD installed in "
                        "/etc/OpenCL/vendors or named by OCL_ICD_VENDORS?)\n");
        exit(1);
    }
    CHECK(err);
    cl_platform_id *ids = malloc(count * sizeof *ids);
    if (!ids) usage("out of memory");
    CHECK(clGetPlatformIDs(count, ids, NULL));
    for (cl_uint i = 0; i < count; i++) {
        char impl[64];
        CHECK(clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, name_len, name, NULL));
        impl_name(name, impl, sizeof impl);
        if (contains_ignoring_case(name, want) || contains_ignoring_case(impl, want)) {
            cl_platform_id found = ids[i];
            free(ids);
            return found;
        }
    }
    fprintf(stderr, "ocl_bench: no OpenCL platform's name contains '%s'; found:\n", want);
    for (cl_uint i = 0; i < count; i++) {
        CHECK(clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, name_len, name, NULL));
        fprintf(stderr, "  %s\n", name);
    }
    free(ids);
    exit(1);
}

struct ocl {
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_device_id device;
};

static struct ocl setup(cl_platform_id platform, cl_uint *compute_units) {
    struct ocl o;
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &o.device, NULL));
    char dev_name[256];
    CHECK(clGetDeviceInfo(o.device, CL_DEVICE_NAME, sizeof dev_name, dev_name, NULL));
    CHECK(clGetDeviceInfo(o.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof *compute_units,
                          compute_units, NULL));
    fprintf(stderr, "device: %s, compute units: %u\n", dev_name, *compute_units);
    CHECKED(o.ctx, clCreateContext(NULL, 1, &o.device, NULL, NULL, &err_));
    CHECKED(o.queue, clCreateCommandQueue(o.ctx, o.device, 0, &err_));
    CHECKED(o.program, clCreateProgramWithSource(o.ctx, 1, &KERNELS_SRC, NULL, &err_));
    cl_int err = clBuildProgram(o.program, 1, &o.device, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t log_len = 0;
        clGetProgramBuildInfo(o.program, o.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len);
        char *log = malloc(log_len + 1);
        if (log && clGetProgramBuildInfo(o.program, o.device, CL_PROGRAM_BUILD_LOG, log_len, log,
                                         NULL) == CL_SUCCESS) {
            log[log_len] = '\0';
            fprintf(stderr, "build log:\n%s\n", log);
        }
        free(log);
        CHECK(err);
    }
    return o;
}

/* One launch of `kernel` over a `dims`-dimensional range, timed from before the enqueue to
 * after clFinish, in seconds. */
static double timed_launch_nd(cl_command_queue q, cl_kernel kernel, cl_uint dims,
                              const size_t *global, const size_t *local) {
    double t0 = now();
    CHECK(clEnqueueNDRangeKernel(q, kernel, dims, NULL, global, local, 0, NULL, NULL));
    CHECK(clFinish(q));
    return now() - t0;
}

static double timed_launch(cl_command_queue q, cl_kernel kernel, size_t global, const size_t *local) {
    return timed_launch_nd(q, kernel, 1, &global, local);
}

static double *alloc_times(long reps) {
    double *times = malloc((size_t)reps * sizeof *times);
    if (!times) usage("out of memory");
    return times;
}

/* Exits 1 unless the device runs `kernel` in work-groups of `items` work-items. */
static void require_group(const struct ocl *o, cl_kernel kernel, const char *name, size_t items) {
    size_t max_wg = 0;
    CHECK(clGetKernelWorkGroupInfo(kernel, o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL));
    if (max_wg < items) {
        fprintf(stderr, "ocl_bench: the device runs %s's work-groups with at most %zu "
                        "work-items, the benchmark needs %zu\n", name, max_wg, items);
        exit(1);
    }
}

static void bench_launch(const struct ocl *o, const struct options *opt, const char *impl) {
    const long reps = opt->reps ? opt->reps : DEFAULT_LAUNCH_REPS;
    double *times = alloc_times(reps);
    cl_kernel kernel;
    CHECKED(kernel, clCreateKernel(o->program, "empty", &err_));
    require_group(o, kernel, "empty", LAUNCH_LOCAL);
    const size_t local = LAUNCH_LOCAL;
    for (size_t g = 0; g < sizeof LAUNCH_GROUPS / sizeof LAUNCH_GROUPS[0]; g++) {
        size_t global = LAUNCH_GROUPS[g] * local;
        timed_launch(o->queue, kernel, global, &local); /* the first launch prepares the kernel */
        for (long r = 0; r < reps; r++) times[r] = timed_launch(o->queue, kernel, global, &local);
        double med = median(times, (int)reps); /* sorts: times[0] is the minimum */
        printf("kernels launch groups=%zu impl=%s threads=%ld median_us=%.2f min_us=%.2f reps=%ld\n",
               LAUNCH_GROUPS[g], impl, opt->threads, med * 1e6, times[0] * 1e6, reps);
        fflush(stdout);
    }
    CHECK(clReleaseKernel(kernel));
    free(times);
}

/* The inputs: small multiples of powers of two that vary with i, so that a misplaced element
 * shows and every partial sum stays exact in float for any plausible repetition count. saxpy,
 * axpy and axpy_barrier share x_at, y0_at and SAXPY_A; the header comment gives every input as
 * a formula, which the Rust side follows. */
static const float SAXPY_A = 0.5f;
static float x_at(size_t i) { return (float)(i % 1024) * 0.125f; }
static float y0_at(size_t i) { return (float)((i * 7) % 512); }
/* matmul's: products are multiples of 1/16 of magnitude at most 3, so a sum of n stays exact
 * while 48 n < 2^24. */
static float mm_a_at(size_t i) { return (float)((int)(i % 17) - 8) * 0.25f; }
static float mm_b_at(size_t i) { return (float)((int)(i % 13) - 6) * 0.25f; }
/* reduce's and scan's: a period prime to the group size, so that neighbouring groups' sums
 * differ. */
static float rs_at(size_t i) { return (float)(i % 1021) * 0.125f; }
/* transpose's: every element of a 4096 x 4096 matrix differs (integers below 2^24 are exact). */
static float tr_at(size_t i) { return (float)(i % (1u << 24)); }

static void *map(cl_command_queue q, cl_mem buf, cl_map_flags flags, size_t bytes) {
    void *p;
    CHECKED(p, clEnqueueMapBuffer(q, buf, CL_TRUE, flags, 0, bytes, 0, NULL, NULL, &err_));
    return p;
}

static void unmap(cl_command_queue q, cl_mem buf, void *p) {
    CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
    CHECK(clFinish(q));
}

/* A buffer of `count` floats the runtime allocates (zero-copy on a CPU device). */
static cl_mem float_buffer(const struct ocl *o, cl_mem_flags flags, size_t count) {
    cl_mem buf;
    CHECKED(buf, clCreateBuffer(o->ctx, flags | CL_MEM_ALLOC_HOST_PTR, count * sizeof(float),
                                NULL, &err_));
    return buf;
}

/* buf[i] = at(i) for i < count, written through a mapping: the runtime decides where the pages
 * live and who touches them first, as it would for an application that fills its buffers this
 * way. */
static void fill(const struct ocl *o, cl_mem buf, size_t count, float (*at)(size_t)) {
    float *h = map(o->queue, buf, CL_MAP_WRITE_INVALIDATE_REGION, count * sizeof(float));
    for (size_t i = 0; i < count; i++) h[i] = at(i);
    unmap(o->queue, buf, h);
}

static void set_arg_mem(cl_kernel kernel, cl_uint index, cl_mem buf) {
    CHECK(clSetKernelArg(kernel, index, sizeof buf, &buf));
}

/* Counts a wrong element, printing the first five. */
static void wrong(size_t *bad, const char *name, const char *what, size_t i, double got,
                  double want) {
    if (*bad < 5)
        fprintf(stderr, "ocl_bench: %s %s[%zu] = %.9g, expected %.9g\n", name, what, i, got,
                want);
    (*bad)++;
}

/* 1 when `bad` of a result's `count` elements were wrong, saying so on stderr; else 0. */
static int report_wrong(size_t bad, size_t count, const char *name, const char *impl) {
    if (bad)
        fprintf(stderr, "ocl_bench: %s: %zu of %zu elements wrong (%s)\n", name, bad, count, impl);
    return bad != 0;
}

/* The number of y's elements that differ from saxpy's result after `runs` launches (the first
 * five are printed on stderr). */
static size_t check_axpy(const float *y, size_t n, double runs, const char *name) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double want = (double)y0_at(i) + runs * (double)SAXPY_A * (double)x_at(i);
        /* Each run rounds y once, by at most half a unit in the last place (2^-24 relative). */
        if (fabs((double)y[i] - want) > (runs + 1) * 0x1p-24 * fabs(want) + 1e-3)
            wrong(&bad, name, "y", i, y[i], want);
    }
    return bad;
}

/* Returns 0 when y holds the expected values after the launches, else 1. */
static int bench_saxpy(const struct ocl *o, const struct options *opt, const char *impl) {
    const long reps = opt->reps ? opt->reps : DEFAULT_SAXPY_REPS;
    double *times = alloc_times(reps);
    const size_t n = (size_t)opt->n, bytes = n * sizeof(float);
    cl_mem x = float_buffer(o, CL_MEM_READ_ONLY, n);
    cl_mem y = float_buffer(o, CL_MEM_READ_WRITE, n);
    fill(o, x, n, x_at);
    fill(o, y, n, y0_at);

    cl_kernel kernel;
    CHECKED(kernel, clCreateKernel(o->program, "saxpy", &err_));
    set_arg_mem(kernel, 0, x);
    set_arg_mem(kernel, 1, y);
    CHECK(clSetKernelArg(kernel, 2, sizeof SAXPY_A, &SAXPY_A));
    const size_t local = (size_t)opt->local;
    const size_t *local_ptr = opt->local ? &local : NULL;
    timed_launch(o->queue, kernel, n, local_ptr); /* compiles for this size, first-touches */
    for (long r = 0; r < reps; r++) times[r] = timed_launch(o->queue, kernel, n, local_ptr);
    double med = median(times, (int)reps);
    free(times);
    char local_s[32];
    if (opt->local) snprintf(local_s, sizeof local_s, "%ld", opt->local);
    else snprintf(local_s, sizeof local_s, "auto");
    printf("kernels saxpy n=%zu impl=%s threads=%ld local=%s median_ms=%.3f gbps=%.2f reps=%ld\n",
           n, impl, opt->threads, local_s, med * 1e3, 12.0 * (double)n / med / 1e9, reps);
    fflush(stdout);

    /* The warm-up launch and every repetition each added a*x once. */
    float *hy = map(o->queue, y, CL_MAP_READ, bytes);
    size_t bad = check_axpy(hy, n, (double)reps + 1, "saxpy");
    unmap(o->queue, y, hy);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(x));
    CHECK(clReleaseMemObject(y));
    return report_wrong(bad, n, "saxpy", impl);
}

/* The suite. Each bench_ function fills its inputs, launches its kernel once untimed (it is
 * compiled for the range, and the outputs are touched first), then `reps` times timed, prints
 * its line, checks the output against a serial reference, and returns 0, or 1 when an element
 * is wrong (the first five on stderr). */

/* The kernel `name`, checked to run in work-groups of `items` work-items. */
static cl_kernel suite_kernel(const struct ocl *o, const char *name, size_t items) {
    cl_kernel kernel;
    CHECKED(kernel, clCreateKernel(o->program, name, &err_));
    require_group(o, kernel, name, items);
    return kernel;
}

/* The median of `reps` timed launches, after one untimed. */
static double time_kernel(const struct ocl *o, cl_kernel kernel, cl_uint dims,
                          const size_t *global, const size_t *local, long reps) {
    double *times = alloc_times(reps);
    timed_launch_nd(o->queue, kernel, dims, global, local);
    for (long r = 0; r < reps; r++)
        times[r] = timed_launch_nd(o->queue, kernel, dims, global, local);
    double med = median(times, (int)reps);
    free(times);
    return med;
}

/* A suite line: `rate_name` is gbps or gflops, `work` the bytes or floating-point operations
 * the rate counts. */
static void print_suite(const char *name, size_t n, const char *impl, long threads, int local,
                        double secs, const char *rate_name, double work, long reps) {
    printf("kernels %s n=%zu impl=%s threads=%ld local=%d median_ms=%.3f %s=%.2f reps=%ld\n",
           name, n, impl, threads, local, secs * 1e3, rate_name, work / secs / 1e9, reps);
    fflush(stdout);
}

/* Whether `got` is `want`, a sum of `terms` terms whose magnitudes add up to `magnitude`, up
 * to the rounding of a float sum of them in any order. */
static int sum_close(float got, double want, double magnitude, double terms) {
    return fabs((double)got - want) <= terms * 0x1p-24 * magnitude;
}

static int bench_matmul(const struct ocl *o, const struct options *opt, const char *impl) {
    const size_t n = (size_t)opt->mm_n, elems = n * n;
    const long reps = opt->reps ? opt->reps : DEFAULT_MATMUL_REPS;
    cl_mem a = float_buffer(o, CL_MEM_READ_ONLY, elems);
    cl_mem b = float_buffer(o, CL_MEM_READ_ONLY, elems);
    cl_mem c = float_buffer(o, CL_MEM_WRITE_ONLY, elems);
    fill(o, a, elems, mm_a_at);
    fill(o, b, elems, mm_b_at);
    cl_kernel kernel = suite_kernel(o, "matmul", TILE * TILE);
    const cl_int n_arg = (cl_int)n;
    set_arg_mem(kernel, 0, a);
    set_arg_mem(kernel, 1, b);
    set_arg_mem(kernel, 2, c);
    CHECK(clSetKernelArg(kernel, 3, sizeof n_arg, &n_arg));
    const size_t global[2] = {n, n}, local[2] = {TILE, TILE};
    double med = time_kernel(o, kernel, 2, global, local, reps);
    print_suite("matmul", n, impl, opt->threads, TILE, med, "gflops", 2.0 * n * n * (double)n,
                reps);

    /* Row by row, in double, k outermost so that B is read along its rows. */
    float *ha = malloc(elems * sizeof *ha), *hb = malloc(elems * sizeof *hb);
    double *sum = malloc(n * sizeof *sum), *mag = malloc(n * sizeof *mag);
    if (!ha || !hb || !sum || !mag) usage("out of memory");
    for (size_t i = 0; i < elems; i++) {
        ha[i] = mm_a_at(i);
        hb[i] = mm_b_at(i);
    }
    float *hc = map(o->queue, c, CL_MAP_READ, elems * sizeof(float));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) sum[j] = mag[j] = 0;
        for (size_t k = 0; k < n; k++) {
            const double aik = ha[i * n + k];
            const float *brow = hb + k * n;
            for (size_t j = 0; j < n; j++) {
                const double p = aik * brow[j];
                sum[j] += p;
                mag[j] += fabs(p);
            }
        }
        for (size_t j = 0; j < n; j++)
            if (!sum_close(hc[i * n + j], sum[j], mag[j], (double)n))
                wrong(&bad, "matmul", "C", i * n + j, hc[i * n + j], sum[j]);
    }
    unmap(o->queue, c, hc);
    free(ha);
    free(hb);
    free(sum);
    free(mag);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(a));
    CHECK(clReleaseMemObject(b));
    CHECK(clReleaseMemObject(c));
    return report_wrong(bad, elems, "matmul", impl);
}

static int bench_reduce(const struct ocl *o, const struct options *opt, const char *impl) {
    const size_t n = (size_t)opt->n, groups = n / GROUP;
    const long reps = opt->reps ? opt->reps : DEFAULT_SUITE_REPS;
    cl_mem x = float_buffer(o, CL_MEM_READ_ONLY, n);
    cl_mem out = float_buffer(o, CL_MEM_WRITE_ONLY, groups);
    fill(o, x, n, rs_at);
    cl_kernel kernel = suite_kernel(o, "reduce", GROUP);
    set_arg_mem(kernel, 0, x);
    set_arg_mem(kernel, 1, out);
    const size_t local = GROUP;
    double med = time_kernel(o, kernel, 1, &n, &local, reps);
    print_suite("reduce", n, impl, opt->threads, GROUP, med, "gbps", 4.0 * (double)n, reps);

    float *h = map(o->queue, out, CL_MAP_READ, groups * sizeof(float));
    size_t bad = 0;
    for (size_t g = 0; g < groups; g++) {
        double want = 0; /* every term is positive: the sum is also their magnitude */
        for (size_t i = g * GROUP; i < (g + 1) * GROUP; i++) want += rs_at(i);
        if (!sum_close(h[g], want, want, GROUP)) wrong(&bad, "reduce", "out", g, h[g], want);
    }
    unmap(o->queue, out, h);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(x));
    CHECK(clReleaseMemObject(out));
    return report_wrong(bad, groups, "reduce", impl);
}

static int bench_scan(const struct ocl *o, const struct options *opt, const char *impl) {
    const size_t n = (size_t)opt->n, groups = n / GROUP;
    const long reps = opt->reps ? opt->reps : DEFAULT_SUITE_REPS;
    cl_mem x = float_buffer(o, CL_MEM_READ_ONLY, n);
    cl_mem out = float_buffer(o, CL_MEM_WRITE_ONLY, n);
    cl_mem sums = float_buffer(o, CL_MEM_WRITE_ONLY, groups);
    fill(o, x, n, rs_at);
    cl_kernel kernel = suite_kernel(o, "scan", GROUP);
    set_arg_mem(kernel, 0, x);
    set_arg_mem(kernel, 1, out);
    set_arg_mem(kernel, 2, sums);
    const size_t local = GROUP;
    double med = time_kernel(o, kernel, 1, &n, &local, reps);
    print_suite("scan", n, impl, opt->threads, GROUP, med, "gbps", 8.0 * (double)n, reps);

    float *h = map(o->queue, out, CL_MAP_READ, n * sizeof(float));
    float *hs = map(o->queue, sums, CL_MAP_READ, groups * sizeof(float));
    size_t bad = 0;
    for (size_t g = 0; g < groups; g++) {
        double want = 0; /* positive terms, as reduce's */
        for (size_t i = g * GROUP; i < (g + 1) * GROUP; i++) {
            want += rs_at(i);
            if (!sum_close(h[i], want, want, GROUP)) wrong(&bad, "scan", "out", i, h[i], want);
        }
        if (!sum_close(hs[g], want, want, GROUP)) wrong(&bad, "scan", "sums", g, hs[g], want);
    }
    unmap(o->queue, out, h);
    unmap(o->queue, sums, hs);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(x));
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseMemObject(sums));
    return report_wrong(bad, n + groups, "scan", impl);
}

static int bench_transpose(const struct ocl *o, const struct options *opt, const char *impl) {
    const size_t n = (size_t)opt->tr_n, elems = n * n;
    const long reps = opt->reps ? opt->reps : DEFAULT_SUITE_REPS;
    cl_mem in = float_buffer(o, CL_MEM_READ_ONLY, elems);
    cl_mem out = float_buffer(o, CL_MEM_WRITE_ONLY, elems);
    fill(o, in, elems, tr_at);
    cl_kernel kernel = suite_kernel(o, "transpose", TILE * TILE);
    const cl_int n_arg = (cl_int)n;
    set_arg_mem(kernel, 0, in);
    set_arg_mem(kernel, 1, out);
    CHECK(clSetKernelArg(kernel, 2, sizeof n_arg, &n_arg));
    const size_t global[2] = {n, n}, local[2] = {TILE, TILE};
    double med = time_kernel(o, kernel, 2, global, local, reps);
    print_suite("transpose", n, impl, opt->threads, TILE, med, "gbps", 8.0 * (double)elems, reps);

    float *h = map(o->queue, out, CL_MAP_READ, elems * sizeof(float));
    size_t bad = 0;
    for (size_t x = 0; x < n; x++)
        for (size_t y = 0; y < n; y++) {
            const float want = tr_at(y * n + x);
            if (h[x * n + y] != want)
                wrong(&bad, "transpose", "out", x * n + y, h[x * n + y], want);
        }
    unmap(o->queue, out, h);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(in));
    CHECK(clReleaseMemObject(out));
    return report_wrong(bad, elems, "transpose", impl);
}

/* axpy or axpy_barrier, `name` being the kernel's. */
static int bench_axpy(const struct ocl *o, const struct options *opt, const char *impl,
                      const char *name) {
    const size_t n = (size_t)opt->n;
    const long reps = opt->reps ? opt->reps : DEFAULT_SUITE_REPS;
    cl_mem x = float_buffer(o, CL_MEM_READ_ONLY, n);
    cl_mem y = float_buffer(o, CL_MEM_READ_WRITE, n);
    fill(o, x, n, x_at);
    fill(o, y, n, y0_at);
    cl_kernel kernel = suite_kernel(o, name, GROUP);
    set_arg_mem(kernel, 0, x);
    set_arg_mem(kernel, 1, y);
    CHECK(clSetKernelArg(kernel, 2, sizeof SAXPY_A, &SAXPY_A));
    const size_t local = GROUP;
    double med = time_kernel(o, kernel, 1, &n, &local, reps);
    print_suite(name, n, impl, opt->threads, GROUP, med, "gbps", 12.0 * (double)n, reps);

    /* The untimed launch and every timed one each added a*x once. */
    float *hy = map(o->queue, y, CL_MAP_READ, n * sizeof(float));
    size_t bad = check_axpy(hy, n, (double)reps + 1, name);
    unmap(o->queue, y, hy);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(x));
    CHECK(clReleaseMemObject(y));
    return report_wrong(bad, n, name, impl);
}

/* The CPU seconds of each thread of this process, printed on stderr after the runs (Linux's
 * /proc; nothing elsewhere): the main thread's (which enqueues and waits in clFinish), then
 * the others', most first. They show how many workers the runtime started and how many of
 * them worked, which is how the environment variable that sets a runtime's threads is
 * verified for a runtime whose compute-unit count does not follow it (Intel's). */
static void print_thread_times(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return;
    const double ticks = (double)sysconf(_SC_CLK_TCK);
    const long self = (long)getpid();
    double main_secs = 0, secs[256];
    int count = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && count < 256) {
        if (e->d_name[0] == '.') continue;
        char path[300], stat[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(stat, 1, sizeof stat - 1, f);
        fclose(f);
        stat[len] = '\0';
        /* After the command name's closing parenthesis: the state, then 10 fields, then utime
         * and stime (fields 14 and 15 of proc(5)). */
        const char *p = strrchr(stat, ')');
        unsigned long utime, stime;
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                         &stime) != 2)
            continue;
        double t = (double)(utime + stime) / ticks;
        if (strtol(e->d_name, NULL, 10) == self) main_secs = t;
        else secs[count++] = t;
    }
    closedir(dir);
    qsort(secs, (size_t)count, sizeof secs[0], cmp_double);
    fprintf(stderr, "CPU seconds: main thread %.2f, other threads (%d):", main_secs, count);
    for (int i = count - 1; i >= 0; i--) fprintf(stderr, " %.2f", secs[i]);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv) {
    struct options opt = parse_options(argc, argv);
    char platform_name[256], impl[64];
    cl_platform_id platform = find_platform(opt.platform, platform_name, sizeof platform_name);
    impl_name(platform_name, impl, sizeof impl);
    cl_uint compute_units = 0;
    struct ocl o = setup(platform, &compute_units);
    if (opt.threads == 0) opt.threads = compute_units;
    int failed = 0;
    /* A wrong result is reported and the other benchmarks still run. */
    if (opt.only & RUN_LAUNCH) bench_launch(&o, &opt, impl);
    if (opt.only & RUN_SAXPY) failed |= bench_saxpy(&o, &opt, impl);
    if (opt.only & RUN_MATMUL) failed |= bench_matmul(&o, &opt, impl);
    if (opt.only & RUN_REDUCE) failed |= bench_reduce(&o, &opt, impl);
    if (opt.only & RUN_SCAN) failed |= bench_scan(&o, &opt, impl);
    if (opt.only & RUN_TRANSPOSE) failed |= bench_transpose(&o, &opt, impl);
    if (opt.only & RUN_AXPY) failed |= bench_axpy(&o, &opt, impl, "axpy");
    if (opt.only & RUN_AXPY_BARRIER) failed |= bench_axpy(&o, &opt, impl, "axpy_barrier");
    print_thread_times();
    CHECK(clReleaseProgram(o.program));
    CHECK(clReleaseCommandQueue(o.queue));
    CHECK(clReleaseContext(o.ctx));
    return failed;
}
