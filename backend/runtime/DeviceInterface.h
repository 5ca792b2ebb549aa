/* The run-time device interface: a C ABI, so that JIT-compiled host code
 * and device plugins built separately (the HIP plugin, libmdl_hip.so) can
 * use it. Every device kind implements one mdl_device_interface: memory
 * (allocate, free, copy in and out), segments (prepare one from IR text,
 * run it, release it) and synchronization.
 *
 * A segment arrives as the IR text of a module with one function, @segment,
 * whose arguments are the segment's inputs and whose results are its
 * outputs, all with static types; it contains no control flow and no device
 * names. Inputs and outputs are passed as device pointers in order; the
 * caller allocates the outputs with the device's `alloc`.
 *
 * Functions returning int return 0 on success; on failure `last_error`
 * describes the problem. */
#ifndef MDL_BACKEND_RUNTIME_DEVICEINTERFACE_H
#define MDL_BACKEND_RUNTIME_DEVICEINTERFACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MDL_DEVICE_ABI_VERSION 1

typedef struct mdl_device mdl_device;   /* one opened device */
typedef struct mdl_segment mdl_segment; /* one prepared segment */

typedef struct mdl_device_interface {
  uint32_t abi_version; /* MDL_DEVICE_ABI_VERSION */
  const char *kind;     /* "cpu", "hip", ... */
  /* Non-zero when device memory is host memory (no copies are needed to
   * read or share it). */
  int host_memory;
  /* Opens the device with this ordinal (threads: 0 for the default).
   * Returns null and sets *error to a static description if unavailable. */
  mdl_device *(*open)(int ordinal, int threads, const char **error);
  void (*close)(mdl_device *dev);
  /* A human-readable description ("CPU, 2 threads", "NVIDIA H100"). */
  const char *(*describe)(mdl_device *dev);
  /* Null when the device is out of memory. */
  void *(*alloc)(mdl_device *dev, uint64_t bytes);
  void (*release_memory)(mdl_device *dev, void *ptr);
  int (*copy_in)(mdl_device *dev, void *dst, const void *host_src, uint64_t bytes);
  int (*copy_out)(mdl_device *dev, void *host_dst, const void *src, uint64_t bytes);
  mdl_segment *(*prepare)(mdl_device *dev, const char *ir_text);
  int (*run)(mdl_device *dev, mdl_segment *seg, void *const *inputs, void *const *outputs);
  void (*release_segment)(mdl_device *dev, mdl_segment *seg);
  int (*synchronize)(mdl_device *dev);
  const char *(*last_error)(mdl_device *dev);
} mdl_device_interface;

/* The symbol a device plugin (shared library) exports. */
typedef const mdl_device_interface *(*mdl_device_plugin_fn)(void);
#define MDL_DEVICE_PLUGIN_SYMBOL "mdl_device_plugin"

#ifdef __cplusplus
}
#endif

#endif /* MDL_BACKEND_RUNTIME_DEVICEINTERFACE_H */
