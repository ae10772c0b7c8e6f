package mw

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// The few CUDA driver API entry points DeviceBuffer needs, resolved from
// libcuda.so.1 at run time, so that building this package needs no CUDA.
// The driver library is present wherever a GPU is usable (the runtime
// library may not be: the NCCL plugin links it statically), and the
// primary context used here is the one the CUDA runtime (and so NCCL)
// uses, so memory allocated here is memory NCCL accepts.
typedef int mwgo_cures;
typedef void* mwgo_cuctx;
typedef unsigned long long mwgo_cuptr;

static struct {
	mwgo_cures (*init)(unsigned int);
	mwgo_cures (*device_get_count)(int*);
	mwgo_cures (*device_get)(int*, int);
	mwgo_cures (*primary_ctx_retain)(mwgo_cuctx*, int);
	mwgo_cures (*ctx_push)(mwgo_cuctx);
	mwgo_cures (*ctx_pop)(mwgo_cuctx*);
	mwgo_cures (*ctx_synchronize)(void);
	mwgo_cures (*mem_alloc)(mwgo_cuptr*, size_t);
	mwgo_cures (*mem_free)(mwgo_cuptr);
	mwgo_cures (*memcpy_htod)(mwgo_cuptr, const void*, size_t);
	mwgo_cures (*memcpy_dtoh)(void*, mwgo_cuptr, size_t);
	mwgo_cures (*error_string)(mwgo_cures, const char**);
} mwgo_cu;

// 0 when the driver loaded and cuInit succeeded; else why is filled.
static int mwgo_cuda_load(char* why, size_t len) {
	void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, len, "no CUDA driver: %s", dlerror());
		return -1;
	}
	struct { void** slot; const char* name; } syms[] = {
		{(void**)&mwgo_cu.init, "cuInit"},
		{(void**)&mwgo_cu.device_get_count, "cuDeviceGetCount"},
		{(void**)&mwgo_cu.device_get, "cuDeviceGet"},
		{(void**)&mwgo_cu.primary_ctx_retain, "cuDevicePrimaryCtxRetain"},
		{(void**)&mwgo_cu.ctx_push, "cuCtxPushCurrent_v2"},
		{(void**)&mwgo_cu.ctx_pop, "cuCtxPopCurrent_v2"},
		{(void**)&mwgo_cu.ctx_synchronize, "cuCtxSynchronize"},
		{(void**)&mwgo_cu.mem_alloc, "cuMemAlloc_v2"},
		{(void**)&mwgo_cu.mem_free, "cuMemFree_v2"},
		{(void**)&mwgo_cu.memcpy_htod, "cuMemcpyHtoD_v2"},
		{(void**)&mwgo_cu.memcpy_dtoh, "cuMemcpyDtoH_v2"},
		{(void**)&mwgo_cu.error_string, "cuGetErrorString"},
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; ++i) {
		*syms[i].slot = dlsym(lib, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(why, len, "the CUDA driver libcuda.so.1 has no %s", syms[i].name);
			return -1;
		}
	}
	mwgo_cures r = mwgo_cu.init(0);
	if (r != 0) {
		const char* s = "unknown error";
		mwgo_cu.error_string(r, &s);
		snprintf(why, len, "cuInit failed: %s (CUresult %d)", s ? s : "unknown error", r);
		return -1;
	}
	return 0;
}

static const char* mwgo_cuda_error(mwgo_cures r) {
	const char* s = NULL;
	if (mwgo_cu.error_string(r, &s) != 0 || !s) s = "unknown error";
	return s;
}

static mwgo_cures mwgo_cuda_device_count(int* n) { return mwgo_cu.device_get_count(n); }

static mwgo_cures mwgo_cuda_context(int ordinal, mwgo_cuctx* out) {
	int dev = 0;
	mwgo_cures r = mwgo_cu.device_get(&dev, ordinal);
	return r != 0 ? r : mwgo_cu.primary_ctx_retain(out, dev);
}

// Each call makes the device's primary context current on the calling
// thread for its own duration only: Go moves goroutines between threads.
static void mwgo_pop(void) {
	mwgo_cuctx popped;
	mwgo_cu.ctx_pop(&popped);
}

static mwgo_cures mwgo_cuda_alloc(mwgo_cuctx ctx, size_t n, uintptr_t* out) {
	mwgo_cuptr p = 0;
	mwgo_cures r = mwgo_cu.ctx_push(ctx);
	if (r == 0) {
		r = mwgo_cu.mem_alloc(&p, n);
		mwgo_pop();
	}
	*out = (uintptr_t)p;
	return r;
}

static mwgo_cures mwgo_cuda_free(mwgo_cuctx ctx, uintptr_t p) {
	mwgo_cures r = mwgo_cu.ctx_push(ctx);
	if (r == 0) {
		r = mwgo_cu.mem_free((mwgo_cuptr)p);
		mwgo_pop();
	}
	return r;
}

// The copy is complete on the device when this returns: the legacy stream
// a synchronous copy runs on does not order against the NCCL world's
// non-blocking stream, so the context is synchronized.
static mwgo_cures mwgo_cuda_htod(mwgo_cuctx ctx, uintptr_t dst, const void* src, size_t n) {
	mwgo_cures r = mwgo_cu.ctx_push(ctx);
	if (r == 0) {
		r = mwgo_cu.memcpy_htod((mwgo_cuptr)dst, src, n);
		if (r == 0) r = mwgo_cu.ctx_synchronize();
		mwgo_pop();
	}
	return r;
}

static mwgo_cures mwgo_cuda_dtoh(mwgo_cuctx ctx, void* dst, uintptr_t src, size_t n) {
	mwgo_cures r = mwgo_cu.ctx_push(ctx);
	if (r == 0) {
		r = mwgo_cu.memcpy_dtoh(dst, (mwgo_cuptr)src, n);
		mwgo_pop();
	}
	return r;
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// cudaOutOfMemory is CUDA_ERROR_OUT_OF_MEMORY.
const cudaOutOfMemory = 2

var cuda struct {
	once     sync.Once
	err      error // why the driver is unusable
	mu       sync.Mutex
	contexts map[int]C.mwgo_cuctx // primary contexts retained, one per device
}

// cudaContext loads the driver on first use and returns the primary
// context of device ordinal (retained once for the life of the process).
func cudaContext(ordinal int) (C.mwgo_cuctx, error) {
	cuda.once.Do(func() {
		var why [256]C.char
		if C.mwgo_cuda_load(&why[0], C.size_t(len(why))) != 0 {
			cuda.err = &Error{Code: ErrUnsupported, Msg: "MW_ERR_UNSUPPORTED: " + C.GoString(&why[0])}
		}
		cuda.contexts = map[int]C.mwgo_cuctx{}
	})
	if cuda.err != nil {
		return nil, cuda.err
	}
	cuda.mu.Lock()
	defer cuda.mu.Unlock()
	if ctx, ok := cuda.contexts[ordinal]; ok {
		return ctx, nil
	}
	var n C.int
	if err := cudaCheck(C.mwgo_cuda_device_count(&n), "cuDeviceGetCount"); err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, argError(fmt.Sprintf("CUDA device %d does not exist: %d visible", ordinal, int(n)))
	}
	var ctx C.mwgo_cuctx
	if err := cudaCheck(C.mwgo_cuda_context(C.int(ordinal), &ctx), "cuDevicePrimaryCtxRetain"); err != nil {
		return nil, err
	}
	cuda.contexts[ordinal] = ctx
	return ctx, nil
}

func cudaCheck(r C.mwgo_cures, what string) error {
	if r == 0 {
		return nil
	}
	code := ErrBackend
	if r == cudaOutOfMemory {
		code = ErrNoMemory
	}
	return &Error{Code: code, Msg: fmt.Sprintf("%v: %s failed: %s (CUresult %d)", code, what, C.GoString(C.mwgo_cuda_error(r)), int(r))}
}

func cudaAlloc(ordinal, nbytes int) (DevicePtr, error) {
	ctx, err := cudaContext(ordinal)
	if err != nil {
		return 0, err
	}
	var p C.uintptr_t
	if err := cudaCheck(C.mwgo_cuda_alloc(ctx, C.size_t(nbytes), &p), fmt.Sprintf("cuMemAlloc of %d bytes", nbytes)); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

func cudaFree(ordinal int, p DevicePtr) {
	if ctx, err := cudaContext(ordinal); err == nil {
		C.mwgo_cuda_free(ctx, C.uintptr_t(p))
	}
}

// cudaToDevice copies host bytes to the device through C memory, so no Go
// pointer reaches C.
func cudaToDevice(ordinal int, dst DevicePtr, src []byte) error {
	ctx, err := cudaContext(ordinal)
	if err != nil || len(src) == 0 {
		return err
	}
	stage := C.CBytes(src)
	defer C.free(stage)
	return cudaCheck(C.mwgo_cuda_htod(ctx, C.uintptr_t(dst), stage, C.size_t(len(src))), "cuMemcpyHtoD")
}

// cudaToHost copies device bytes into dst through C memory.
func cudaToHost(ordinal int, dst []byte, src DevicePtr) error {
	ctx, err := cudaContext(ordinal)
	if err != nil || len(dst) == 0 {
		return err
	}
	stage := C.malloc(C.size_t(len(dst)))
	if stage == nil {
		return &Error{Code: ErrNoMemory, Msg: fmt.Sprintf("MW_ERR_NO_MEMORY: cannot allocate %d bytes", len(dst))}
	}
	defer C.free(stage)
	if err := cudaCheck(C.mwgo_cuda_dtoh(ctx, stage, C.uintptr_t(src), C.size_t(len(dst))), "cuMemcpyDtoH"); err != nil {
		return err
	}
	copy(dst, unsafe.Slice((*byte)(stage), len(dst)))
	return nil
}
