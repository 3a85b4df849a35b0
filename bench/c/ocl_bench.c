/* The OpenCL peers of the kernel executor's benchmarks: the same kernels in OpenCL C, run by an
 * OpenCL CPU runtime (pocl, Intel's CPU runtime) through the ICD loader, and reported in the
 * lines the Rust kernels bench prints for numatask, so that one table holds both.
 *
 *   launch  an empty kernel of 1 and of 1024 work-groups of 64 work-items: the wall time of one
 *           launch, from before clEnqueueNDRangeKernel to after clFinish (in-order queue);
 *   saxpy   y[i] = a*x[i] + y[i] over N floats in buffers the runtime allocates
 *           (CL_MEM_ALLOC_HOST_PTR: zero-copy on a CPU device), as time and GB/s counting
 *           12 bytes per element (read x, read y, write y); the result is checked on the host.
 *
 * usage: ocl_bench --platform SUBSTRING [--only launch|saxpy|all] [--reps N] [--n N]
 *                  [--local N] [--threads T]
 *   --platform  matched ignoring case against the platform names (`portable` or `pocl` for
 *               pocl, `intel` for Intel's CPU runtime); with none matching, the error lists them
 *   --only      default all; --reps default 1000 launches, 50 saxpy runs, each after one
 *               untimed launch; --n saxpy's length, default 2^24; --local saxpy's work-group
 *               size, default 0: NULL, the runtime's choice (`local=auto`)
 * Output, one line per measurement on stdout:
 *   kernels launch groups=1 impl=pocl threads=2 median_us=... min_us=... reps=...
 *   kernels saxpy n=16777216 impl=pocl threads=2 local=auto median_ms=... gbps=... reps=...
 * The runtime's thread count is set by its environment (scripts/bench-kernels.sh says which
 * variable); --threads only labels the lines, and defaults to the device's compute units.
 * stderr has the device's name and compute units, and after the runs each thread's CPU time,
 * which shows how many workers the runtime used. Exit status: 0; 1 on an OpenCL error or a
 * wrong saxpy result; 2 on bad options.
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

static const char *KERNELS_SRC =
    "__kernel void empty(void) {}\n"
    "__kernel void saxpy(__global const float* x, __global float* y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

/* The work-group size of the launch benchmark, and the group counts it measures. */
enum { LAUNCH_LOCAL = 64 };
/* Repetitions without --reps: launches are short and noisy, saxpy's are long. */
enum { DEFAULT_LAUNCH_REPS = 1000, DEFAULT_SAXPY_REPS = 50 };
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

struct options {
    const char *platform;
    int launch, saxpy;
    long reps, n, local, threads;
};

static void usage(const char *msg) {
    fprintf(stderr,
            "ocl_bench: %s\n"
            "usage: ocl_bench --platform SUBSTRING [--only launch|saxpy|all] [--reps N] "
            "[--n N] [--local N] [--threads T]\n",
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

static struct options parse_options(int argc, char **argv) {
    struct options o = {NULL, 1, 1, 0, 1L << 24, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) usage("every option takes a value");
        const char *val = argv[++i];
        if (strcmp(opt, "--platform") == 0) {
            o.platform = val;
        } else if (strcmp(opt, "--only") == 0) {
            o.launch = strcmp(val, "launch") == 0 || strcmp(val, "all") == 0;
            o.saxpy = strcmp(val, "saxpy") == 0 || strcmp(val, "all") == 0;
            if (!o.launch && !o.saxpy) usage("--only: expected launch, saxpy or all");
        } else if (strcmp(opt, "--reps") == 0) {
            o.reps = parse_long(opt, val, 1, 1000000);
        } else if (strcmp(opt, "--n") == 0) {
            o.n = parse_long(opt, val, 1, 1L << 30);
        } else if (strcmp(opt, "--local") == 0) {
            o.local = parse_long(opt, val, 0, 1L << 20);
        } else if (strcmp(opt, "--threads") == 0) {
            o.threads = parse_long(opt, val, 1, 1L << 20);
        } else {
            fprintf(stderr, "ocl_bench: unknown option '%s'\n", opt);
            usage("see the options below");
        }
    }
    if (!o.platform) usage("--platform is required (e.g. portable for pocl, intel for Intel)");
    if (o.local > 0 && o.n % o.local != 0)
        usage("--n must be a multiple of --local (OpenCL 1.2 has no partial work-groups)");
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

/* One launch of `kernel`, timed from before the enqueue to after clFinish, in seconds. */
static double timed_launch(cl_command_queue q, cl_kernel kernel, size_t global, const size_t *local) {
    double t0 = now();
    CHECK(clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, local, 0, NULL, NULL));
    CHECK(clFinish(q));
    return now() - t0;
}

static double *alloc_times(long reps) {
    double *times = malloc((size_t)reps * sizeof *times);
    if (!times) usage("out of memory");
    return times;
}

static void bench_launch(const struct ocl *o, const struct options *opt, const char *impl) {
    const long reps = opt->reps ? opt->reps : DEFAULT_LAUNCH_REPS;
    double *times = alloc_times(reps);
    cl_kernel kernel;
    CHECKED(kernel, clCreateKernel(o->program, "empty", &err_));
    size_t max_wg = 0;
    CHECK(clGetKernelWorkGroupInfo(kernel, o->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_wg,
                                   &max_wg, NULL));
    if (max_wg < LAUNCH_LOCAL) {
        fprintf(stderr, "ocl_bench: the device runs work-groups of at most %zu work-items, "
                        "the launch benchmark needs %d\n", max_wg, LAUNCH_LOCAL);
        exit(1);
    }
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
 * shows and every partial sum stays exact in float for any plausible repetition count. */
static const float SAXPY_A = 0.5f;
static float x_at(size_t i) { return (float)(i % 1024) * 0.125f; }
static float y0_at(size_t i) { return (float)((i * 7) % 512); }

static void *map(cl_command_queue q, cl_mem buf, cl_map_flags flags, size_t bytes) {
    void *p;
    CHECKED(p, clEnqueueMapBuffer(q, buf, CL_TRUE, flags, 0, bytes, 0, NULL, NULL, &err_));
    return p;
}

static void unmap(cl_command_queue q, cl_mem buf, void *p) {
    CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
    CHECK(clFinish(q));
}

/* Returns 0 when y holds the expected values after `runs` launches, else 1. */
static int bench_saxpy(const struct ocl *o, const struct options *opt, const char *impl) {
    const long reps = opt->reps ? opt->reps : DEFAULT_SAXPY_REPS;
    double *times = alloc_times(reps);
    const size_t n = (size_t)opt->n, bytes = n * sizeof(float);
    cl_mem x, y;
    CHECKED(x, clCreateBuffer(o->ctx, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, bytes, NULL,
                              &err_));
    CHECKED(y, clCreateBuffer(o->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL,
                              &err_));
    /* Written through a mapping: the runtime decides where the pages live and who touches them
     * first, as it would for an application that fills its buffers this way. */
    float *hx = map(o->queue, x, CL_MAP_WRITE_INVALIDATE_REGION, bytes);
    float *hy = map(o->queue, y, CL_MAP_WRITE_INVALIDATE_REGION, bytes);
    for (size_t i = 0; i < n; i++) {
        hx[i] = x_at(i);
        hy[i] = y0_at(i);
    }
    unmap(o->queue, x, hx);
    unmap(o->queue, y, hy);

    cl_kernel kernel;
    CHECKED(kernel, clCreateKernel(o->program, "saxpy", &err_));
    CHECK(clSetKernelArg(kernel, 0, sizeof x, &x));
    CHECK(clSetKernelArg(kernel, 1, sizeof y, &y));
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
    const double runs = (double)reps + 1;
    int bad = 0;
    hy = map(o->queue, y, CL_MAP_READ, bytes);
    for (size_t i = 0; i < n; i++) {
        double want = (double)y0_at(i) + runs * (double)SAXPY_A * (double)x_at(i);
        /* Each run rounds y once, by at most half a unit in the last place (2^-24 relative). */
        if (fabs((double)hy[i] - want) > (runs + 1) * 0x1p-24 * fabs(want) + 1e-3) {
            if (bad < 5)
                fprintf(stderr, "ocl_bench: saxpy y[%zu] = %.6g, expected %.6g\n", i,
                        (double)hy[i], want);
            bad++;
        }
    }
    unmap(o->queue, y, hy);
    if (bad) fprintf(stderr, "ocl_bench: saxpy: %d of %zu elements wrong (%s)\n", bad, n, impl);
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseMemObject(x));
    CHECK(clReleaseMemObject(y));
    return bad != 0;
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
    if (opt.launch) bench_launch(&o, &opt, impl);
    if (opt.saxpy) failed = bench_saxpy(&o, &opt, impl);
    print_thread_times();
    CHECK(clReleaseProgram(o.program));
    CHECK(clReleaseCommandQueue(o.queue));
    CHECK(clReleaseContext(o.ctx));
    return failed;
}
