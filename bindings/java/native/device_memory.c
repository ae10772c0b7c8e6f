/* See device_memory.h. The driver API's types and entry points are
 * declared here, as cuda.h gives them, so that no CUDA header is needed to
 * build: only the ABI of libcuda.so.1, which the driver keeps stable. */
#include "device_memory.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101
};

static struct {
  CUresult (*init)(unsigned int flags);
  CUresult (*device_get_count)(int* count);
  CUresult (*device_get)(CUdevice* device, int ordinal);
  CUresult (*primary_ctx_retain)(CUcontext* ctx, CUdevice device);
  CUresult (*primary_ctx_release)(CUdevice device);
  CUresult (*ctx_push)(CUcontext ctx);
  CUresult (*ctx_pop)(CUcontext* ctx);
  CUresult (*ctx_synchronize)(void);
  CUresult (*mem_alloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*mem_free)(CUdeviceptr ptr);
  CUresult (*memcpy_htod)(CUdeviceptr dst, const void* src, size_t bytes);
  CUresult (*memcpy_dtoh)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*get_error_name)(CUresult error, const char** name);
} cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty once the driver is usable */

static _Thread_local char last_error[512];

static mw_status_t fail(mw_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(last_error, sizeof last_error, format, args);
  va_end(args);
  return status;
}

static const char* error_name(CUresult r) {
  const char* name = NULL;
  if (cu.get_error_name && cu.get_error_name(r, &name) == CUDA_SUCCESS && name) return name;
  return "unknown CUDA error";
}

static mw_status_t status_of(CUresult r) {
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return MW_ERR_NO_MEMORY;
    case CUDA_ERROR_NO_DEVICE:
      return MW_ERR_UNSUPPORTED;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
      return MW_ERR_INVALID_ARGUMENT;
    default:
      return MW_ERR_BACKEND;
  }
}

static mw_status_t cuda_failed(const char* call, CUresult r) {
  return fail(status_of(r), "%s failed: %s (%d)", call, error_name(r), r);
}

/* dlsym returns an object pointer; store it through the function pointer's bytes. */
static int resolve(void* lib, void* slot, const char* name) {
  void* symbol = dlsym(lib, name);
  if (!symbol) {
    snprintf(load_error, sizeof load_error, "the CUDA driver library has no %s (driver too old?)", name);
    return 0;
  }
  *(void**)slot = symbol;
  return 1;
}

static void load_driver(void) {
  /* Never closed: the driver stays for the life of the process, as the NCCL plugin's does. */
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(load_error, sizeof load_error, "no CUDA driver: %s", dlerror());
    return;
  }
  if (!resolve(lib, &cu.init, "cuInit") || !resolve(lib, &cu.device_get_count, "cuDeviceGetCount") ||
      !resolve(lib, &cu.device_get, "cuDeviceGet") ||
      !resolve(lib, &cu.primary_ctx_retain, "cuDevicePrimaryCtxRetain") ||
      !resolve(lib, &cu.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2") ||
      !resolve(lib, &cu.ctx_push, "cuCtxPushCurrent_v2") || !resolve(lib, &cu.ctx_pop, "cuCtxPopCurrent_v2") ||
      !resolve(lib, &cu.ctx_synchronize, "cuCtxSynchronize") || !resolve(lib, &cu.mem_alloc, "cuMemAlloc_v2") ||
      !resolve(lib, &cu.mem_free, "cuMemFree_v2") || !resolve(lib, &cu.memcpy_htod, "cuMemcpyHtoD_v2") ||
      !resolve(lib, &cu.memcpy_dtoh, "cuMemcpyDtoH_v2") || !resolve(lib, &cu.get_error_name, "cuGetErrorName")) {
    return;
  }
  CUresult r = cu.init(0);
  if (r != CUDA_SUCCESS) {
    snprintf(load_error, sizeof load_error, "cuInit failed: %s (%d)", error_name(r), r);
    return;
  }
  load_error[0] = '\0';
}

static mw_status_t driver(void) {
  pthread_once(&load_once, load_driver);
  if (load_error[0]) return fail(MW_ERR_UNSUPPORTED, "%s", load_error);
  return MW_OK;
}

/* Makes `ordinal`'s primary context current on this thread, retained: leave() undoes both. */
static mw_status_t enter(int ordinal, CUdevice* device) {
  mw_status_t st = driver();
  if (st != MW_OK) return st;
  int count = 0;
  CUresult r = cu.device_get_count(&count);
  if (r != CUDA_SUCCESS) return cuda_failed("cuDeviceGetCount", r);
  if (ordinal < 0 || ordinal >= count) {
    return fail(MW_ERR_INVALID_ARGUMENT, "device %d is not one of the %d visible CUDA devices", ordinal, count);
  }
  r = cu.device_get(device, ordinal);
  if (r != CUDA_SUCCESS) return cuda_failed("cuDeviceGet", r);
  CUcontext ctx = NULL;
  r = cu.primary_ctx_retain(&ctx, *device);
  if (r != CUDA_SUCCESS) return cuda_failed("cuDevicePrimaryCtxRetain", r);
  r = cu.ctx_push(ctx);
  if (r != CUDA_SUCCESS) {
    cu.primary_ctx_release(*device);
    return cuda_failed("cuCtxPushCurrent", r);
  }
  return MW_OK;
}

static void leave(CUdevice device, int keep_retained) {
  CUcontext popped = NULL;
  cu.ctx_pop(&popped);
  if (!keep_retained) cu.primary_ctx_release(device);
}

mw_status_t mwj_device_count(int* count) {
  if (!count) return fail(MW_ERR_INVALID_ARGUMENT, "count is NULL");
  *count = 0;
  mw_status_t st = driver();
  if (st != MW_OK) return st;
  CUresult r = cu.device_get_count(count);
  if (r != CUDA_SUCCESS) return cuda_failed("cuDeviceGetCount", r);
  if (*count == 0) return fail(MW_ERR_UNSUPPORTED, "the CUDA driver sees no device");
  return MW_OK;
}

mw_status_t mwj_device_alloc(int device, size_t bytes, uint64_t* address_out) {
  if (!address_out) return fail(MW_ERR_INVALID_ARGUMENT, "address_out is NULL");
  *address_out = 0;
  if (bytes == 0) return fail(MW_ERR_INVALID_ARGUMENT, "an allocation of 0 bytes");
  CUdevice dev;
  mw_status_t st = enter(device, &dev);
  if (st != MW_OK) return st;
  CUdeviceptr ptr = 0;
  CUresult r = cu.mem_alloc(&ptr, bytes);
  /* The allocation keeps its reference on the primary context until mwj_device_free. */
  leave(dev, r == CUDA_SUCCESS);
  if (r != CUDA_SUCCESS) {
    return fail(status_of(r), "cuMemAlloc of %zu bytes on device %d failed: %s (%d)", bytes, device, error_name(r), r);
  }
  *address_out = (uint64_t)ptr;
  return MW_OK;
}

mw_status_t mwj_device_free(int device, uint64_t address) {
  CUdevice dev;
  mw_status_t st = enter(device, &dev);
  if (st != MW_OK) return st;
  CUresult r = cu.mem_free((CUdeviceptr)address);
  leave(dev, 0);
  if (r != CUDA_SUCCESS) return cuda_failed("cuMemFree", r);
  cu.primary_ctx_release(dev); /* the allocation's reference */
  return MW_OK;
}

mw_status_t mwj_device_copy_from_host(int device, uint64_t dst, const void* src, size_t bytes) {
  if (bytes == 0) return MW_OK;
  if (!src) return fail(MW_ERR_INVALID_ARGUMENT, "host source is NULL");
  CUdevice dev;
  mw_status_t st = enter(device, &dev);
  if (st != MW_OK) return st;
  CUresult r = cu.memcpy_htod((CUdeviceptr)dst, src, bytes);
  /* From pageable memory the copy may still be in flight when cuMemcpyHtoD
   * returns; the NCCL worlds' streams do not wait for the legacy stream. */
  if (r == CUDA_SUCCESS) r = cu.ctx_synchronize();
  leave(dev, 0);
  if (r != CUDA_SUCCESS) return cuda_failed("cuMemcpyHtoD", r);
  return MW_OK;
}

mw_status_t mwj_device_copy_to_host(int device, void* dst, uint64_t src, size_t bytes) {
  if (bytes == 0) return MW_OK;
  if (!dst) return fail(MW_ERR_INVALID_ARGUMENT, "host destination is NULL");
  CUdevice dev;
  mw_status_t st = enter(device, &dev);
  if (st != MW_OK) return st;
  CUresult r = cu.memcpy_dtoh(dst, (CUdeviceptr)src, bytes);
  leave(dev, 0);
  if (r != CUDA_SUCCESS) return cuda_failed("cuMemcpyDtoH", r);
  return MW_OK;
}

const char* mwj_device_last_error(void) { return last_error; }
