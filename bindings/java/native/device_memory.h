/*
 * CUDA device memory for the Java binding's io.multiworld.DeviceBuffer:
 * allocation, release and host copies through the CUDA driver API, whose
 * library (libcuda.so.1, installed with the GPU driver) is opened with
 * dlopen on first use. So the JNI library builds without CUDA and loads on
 * machines without a GPU; there every call fails with MW_ERR_UNSUPPORTED
 * and says why (mwj_device_last_error).
 *
 * Memory lives in the device's primary context, the one the CUDA runtime
 * (and so the NCCL plugin) uses: an allocation here is device memory of
 * that device for NCCL worlds. Each allocation holds a reference on the
 * primary context until it is freed.
 *
 * Copies are synchronous: when they return, the data is on the device
 * (resp. on the host), ordered after every operation already completed on
 * the device.
 *
 * Thread safety: any function from any thread.
 */
#ifndef MULTIWORLD_JAVA_DEVICE_MEMORY_H
#define MULTIWORLD_JAVA_DEVICE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include <multiworld/multiworld.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The number of CUDA devices; MW_ERR_UNSUPPORTED without a driver or a device. */
mw_status_t mwj_device_count(int* count);
/* `bytes` (> 0) of device memory on `device`, never zeroed. */
mw_status_t mwj_device_alloc(int device, size_t bytes, uint64_t* address_out);
/* Frees what mwj_device_alloc gave for this device. */
mw_status_t mwj_device_free(int device, uint64_t address);
/* `bytes` from host memory `src` to device memory `dst`. */
mw_status_t mwj_device_copy_from_host(int device, uint64_t dst, const void* src, size_t bytes);
/* `bytes` from device memory `src` to host memory `dst`. */
mw_status_t mwj_device_copy_to_host(int device, void* dst, uint64_t src, size_t bytes);
/* Why the calling thread's last failing call above failed. Never NULL. */
const char* mwj_device_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
