/*
 * A fake libnvidia-ml.so.1 for tests on machines without an NVIDIA driver, so that the real
 * nvml-wrapper code path of gsched-gpu (dlopen, symbol lookup, structs) runs here.
 * Build: cc -shared -fPIC -o libnvidia-ml.so.1 fake_nvml.c
 *
 * Configured by the environment of the process that loads it:
 *   FAKE_NVML_GPUS        number of GPUs (default 0)
 *   FAKE_NVML_NAME        model name (default "NVIDIA A100-SXM4-80GB")
 *   FAKE_NVML_MEMORY_MB   memory per GPU, MiB (default 81920)
 *   FAKE_NVML_USED_MB     memory in use per GPU, MiB (default 0)
 *   FAKE_NVML_UTIL        GPU utilization percent (default 0)
 *   FAKE_NVML_MIG         index of a GPU in MIG mode (default none)
 *   FAKE_NVML_MINOR_BASE  minor number of GPU 0 (default 0; GPU i has base + i)
 *   FAKE_NVML_PROCS_FILE  a file of lines "gpu pid used_mb sm_percent", read at every call
 * Only the functions gsched-gpu calls are exported; any other symbol is missing, which
 * nvml-wrapper reports as FailedToLoadSymbol when called.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7

typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;
typedef struct { unsigned int pid; unsigned long long timeStamp; unsigned int smUtil, memUtil, encUtil, decUtil; } nvmlProcessUtilizationSample_t;

static long env_num(const char *name, long dflt) {
    const char *v = getenv(name);
    return (v && *v) ? strtol(v, NULL, 10) : dflt;
}

static int gpu_count(void) { return (int)env_num("FAKE_NVML_GPUS", 0); }

static int index_of(nvmlDevice_t d) {
    long i = (long)(size_t)d - 1;
    return (i >= 0 && i < gpu_count()) ? (int)i : -1;
}

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
    }
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) { snprintf(v, n, "555.42.06-fake"); return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) { *count = (unsigned)gpu_count(); return NVML_SUCCESS; }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if ((int)i >= gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
    *d = (nvmlDevice_t)(size_t)(i + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n) {
    const char *v = getenv("FAKE_NVML_NAME");
    if (index_of(d) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(name, n, "%s", (v && *v) ? v : "NVIDIA A100-SXM4-80GB");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int n) {
    int i = index_of(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(uuid, n, "GPU-fa4e0000-0000-0000-0000-%012d", i);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor) {
    int i = index_of(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = (unsigned)(env_num("FAKE_NVML_MINOR_BASE", 0) + i);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
    if (index_of(d) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    m->total = (unsigned long long)env_num("FAKE_NVML_MEMORY_MB", 81920) << 20;
    m->used = (unsigned long long)env_num("FAKE_NVML_USED_MB", 0) << 20;
    m->reserved = 0;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    int i = index_of(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = (env_num("FAKE_NVML_MIG", -1) == i) ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    if (index_of(d) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = (unsigned)env_num("FAKE_NVML_UTIL", 0);
    u->memory = 0;
    return NVML_SUCCESS;
}

/* The lines of FAKE_NVML_PROCS_FILE for GPU i: up to max entries into the arrays. */
static unsigned read_procs(int i, unsigned max, unsigned *pid, unsigned long long *mb, unsigned *sm) {
    const char *path = getenv("FAKE_NVML_PROCS_FILE");
    FILE *f = (path && *path) ? fopen(path, "r") : NULL;
    unsigned n = 0;
    int g; unsigned p; unsigned long long m; unsigned s;
    if (!f) return 0;
    while (fscanf(f, "%d %u %llu %u", &g, &p, &m, &s) == 4) {
        if (g != i) continue;
        if (n < max) { pid[n] = p; mb[n] = m; sm[n] = s; }
        n++;
    }
    fclose(f);
    return n;
}

#define MAXP 256
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *out) {
    unsigned pid[MAXP], sm[MAXP], n, k;
    unsigned long long mb[MAXP];
    int i = index_of(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    n = read_procs(i, MAXP, pid, mb, sm);
    if (n > MAXP) n = MAXP;
    if (!out || *count < n) { *count = n; return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS; }
    for (k = 0; k < n; k++) {
        out[k].pid = pid[k];
        out[k].usedGpuMemory = mb[k] << 20;
        out[k].gpuInstanceId = out[k].computeInstanceId = 0xFFFFFFFFu;
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *out, unsigned int *count, unsigned long long last) {
    unsigned pid[MAXP], sm[MAXP], n, k;
    unsigned long long mb[MAXP];
    int i = index_of(d);
    (void)last;
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    n = read_procs(i, MAXP, pid, mb, sm);
    if (n > MAXP) n = MAXP;
    if (!out || *count < n) { *count = n; return NVML_ERROR_INSUFFICIENT_SIZE; }
    for (k = 0; k < n; k++) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].pid = pid[k];
        out[k].timeStamp = 1;
        out[k].smUtil = sm[k];
    }
    *count = n;
    return NVML_SUCCESS;
}
