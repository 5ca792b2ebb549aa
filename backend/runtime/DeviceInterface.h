/* The run-time half of a device kind: a versioned C ABI, so that
 * JIT-compiled host code and device runtimes built separately (a GPU runtime
 * loaded with dlopen, a kind added from outside) can use it. A runtime
 * knows memory (allocate, free, copy in and out on typed buffers), runs
 * artifacts (load one, run it, unload it) and synchronizes; it never sees
 * IR: the kind's compile-time half (DeviceBackend.h) turns a segment into
 * an artifact before the runtime gets it.
 *
 * Buffers are typed descriptors: element type, shape and element strides
 * (null strides: contiguous, row-major). Host-side pointers of copies are
 * contiguous.
 *
 * Functions returning int return 0 on success; on failure `last_error`
 * describes the problem. */
#ifndef MDL_BACKEND_RUNTIME_DEVICEINTERFACE_H
#define MDL_BACKEND_RUNTIME_DEVICEINTERFACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MDL_DEVICE_ABI_VERSION 3

typedef struct mdl_device mdl_device;   /* one opened device */
typedef struct mdl_program mdl_program; /* an artifact loaded on a device */

/* Element types, in the order of mdl's dtypes. */
typedef enum mdl_dtype {
  MDL_BOOL, MDL_I8, MDL_U8, MDL_I32, MDL_I64, MDL_F16, MDL_BF16, MDL_F32, MDL_F64
} mdl_dtype;

/* A tensor in some device's memory. */
typedef struct mdl_buffer {
  void *data;
  int32_t dtype; /* mdl_dtype */
  int32_t rank;
  const int64_t *shape;
  const int64_t *strides; /* in elements; null: contiguous */
} mdl_buffer;

/* What a kind's compile-time half made of one segment: `format` names the
 * form ("cpu-kernels", a GPU code object, ...), `data` and `size` hold it.
 * A runtime refuses (load returns null) a format it does not run. */
typedef struct mdl_artifact {
  const char *format;
  const void *data;
  uint64_t size;
} mdl_artifact;

/* One argument of a device's declaration (`hip(ordinal = 1)`): an integer,
 * or a string when `string_value` is not null. */
typedef struct mdl_device_arg {
  const char *name;
  int64_t int_value;
  const char *string_value;
} mdl_device_arg;

typedef struct mdl_device_interface {
  uint32_t abi_version; /* MDL_DEVICE_ABI_VERSION */
  const char *name;     /* "cpu", "HIP", ... */
  /* Non-zero when the device's memory is host memory: buffers can be read
   * and shared by the host without copies. (Whether segments may be
   * compiled into host code is the compile-time half's decision.) */
  int host_memory;
  /* Opens a device with its declared arguments. Returns null and sets
   * *error to a static description if unavailable. */
  mdl_device *(*open)(const mdl_device_arg *args, uint32_t n_args, const char **error);
  void (*close)(mdl_device *dev);
  /* A human-readable description ("CPU, 2 threads", "NVIDIA H100"). */
  const char *(*describe)(mdl_device *dev);
  /* Null when the device is out of memory. */
  void *(*alloc)(mdl_device *dev, uint64_t bytes);
  void (*release_memory)(mdl_device *dev, void *ptr);
  /* Host to device. `host_src` is null when this process does not hold the
   * value (a run of several processes where another one gives it): a
   * runtime that cannot take it that way fails. */
  int (*copy_in)(mdl_device *dev, const mdl_buffer *dst, const void *host_src);
  /* Device to host. */
  int (*copy_out)(mdl_device *dev, void *host_dst, const mdl_buffer *src);
  /* Within the device (same type and shape), never through the host. */
  int (*copy)(mdl_device *dev, const mdl_buffer *dst, const mdl_buffer *src);
  /* Makes an artifact runnable on the device; null (with last_error) when
   * it cannot (a format it does not run, a load failure). */
  mdl_program *(*load)(mdl_device *dev, const mdl_artifact *artifact);
  /* Runs a loaded artifact: inputs in order, outputs allocated by the
   * caller with `alloc`. An error message may start with "LINE:COL: " to
   * point at the operation that failed. */
  int (*run)(mdl_device *dev, mdl_program *program, const mdl_buffer *inputs, uint32_t n_inputs,
             const mdl_buffer *outputs, uint32_t n_outputs);
  void (*unload)(mdl_device *dev, mdl_program *program);
  int (*synchronize)(mdl_device *dev);
  const char *(*last_error)(mdl_device *dev);
  /* What code the kind's compile-time half must make for this device: a
   * target name ("spir64", "gfx90a", "sm_90", ...), or "" for the kind's
   * portable artifacts. May be null (the same as ""). */
  const char *(*target)(mdl_device *dev);
  /* Copies between two devices opened on this runtime without staging
   * through the host (peer copies; same type and shape). May be null; the
   * caller then copies out and in. */
  int (*copy_peer)(mdl_device *dst_dev, const mdl_buffer *dst, mdl_device *src_dev,
                   const mdl_buffer *src);
} mdl_device_interface;

/* The symbol a runtime library (loaded with dlopen) exports. */
typedef const mdl_device_interface *(*mdl_device_runtime_fn)(void);
#define MDL_DEVICE_RUNTIME_SYMBOL "mdl_device_runtime"

#ifdef __cplusplus
}
#endif

#endif /* MDL_BACKEND_RUNTIME_DEVICEINTERFACE_H */
