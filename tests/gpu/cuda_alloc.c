/*
 * Allocates GPU memory in chunks through the CUDA driver API (libcuda.so.1, which every
 * NVIDIA driver installs; no CUDA toolkit needed) until a total is reached or an allocation
 * fails, and prints what happened. device-check.sh uses it to show that an MPS client's
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT holds.
 *   cc -o cuda_alloc cuda_alloc.c -ldl
 *   cuda_alloc TOTAL_MIB [CHUNK_MIB]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

int main(int argc, char **argv) {
    unsigned long long total = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
    unsigned long long chunk = argc > 2 ? strtoull(argv[2], NULL, 10) : 256;
    unsigned long long done = 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUdevice dev;
    CUcontext ctx;
    CUresult r;
    const char *name = "?";
    if (!lib) { printf("cuda_alloc: cannot load libcuda.so.1: %s\n", dlerror()); return 2; }
    cuInit = (CUresult (*)(unsigned))dlsym(lib, "cuInit");
    cuDeviceGet = (CUresult (*)(CUdevice *, int))dlsym(lib, "cuDeviceGet");
    cuCtxCreate = (CUresult (*)(CUcontext *, unsigned, CUdevice))dlsym(lib, "cuCtxCreate_v2");
    cuMemAlloc = (CUresult (*)(CUdeviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2");
    cuGetErrorName = (CUresult (*)(CUresult, const char **))dlsym(lib, "cuGetErrorName");
    if (!cuInit || !cuDeviceGet || !cuCtxCreate || !cuMemAlloc || !cuGetErrorName) {
        printf("cuda_alloc: libcuda.so.1 lacks a needed symbol\n");
        return 2;
    }
    if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuCtxCreate(&ctx, 0, dev))) {
        cuGetErrorName(r, &name);
        printf("cuda_alloc: CUDA set-up failed: %s\n", name);
        return 3;
    }
    while (done < total) {
        CUdeviceptr p;
        r = cuMemAlloc(&p, (size_t)chunk << 20);
        if (r) {
            cuGetErrorName(r, &name);
            printf("cuda_alloc: allocated %llu MiB, then %s\n", done, name);
            return 1;
        }
        done += chunk;
    }
    printf("cuda_alloc: allocated %llu MiB (all asked)\n", done);
    return 0;
}
