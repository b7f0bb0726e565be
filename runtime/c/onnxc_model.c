/* The C face of an onnxc ahead-of-time artifact (runtime/artifact.py builds it into model.so).
 *
 * The generated object holds the model's native entry, `<prefix>_entry(void **argv)`, whose
 * argv is every input, every output, every constant, then the arena (lowering/entry_abi.py).
 * This file gives it a C API that needs nothing but the library:
 *
 *   int32_t <prefix>_run(const void *const *inputs, void *const *outputs);
 *   const char *<prefix>_info(void);          the manifest (JSON)
 *   const char *<prefix>_error(int32_t status);
 *
 * A model with symbolic dimensions (built with -DONNXC_SYMBOLIC) takes its input shapes:
 *
 *   int32_t <prefix>_output_shapes(const int64_t *const *input_shapes,
 *                                  int64_t *const *output_shapes);  the room to allocate
 *   int32_t <prefix>_run_shaped(const void *const *inputs, const int64_t *const *input_shapes,
 *                               void *const *outputs, int64_t *const *output_shapes);
 *
 * `_output_shapes` checks the shapes (ranks, fixed dimensions, a symbol two inputs share)
 * and gives each output's shape, or for a size the data decides the room for its bound;
 * `_run_shaped` runs and writes the outputs' real shapes. Each thread keeps a dynamic arena
 * for the intermediate tensors whose size depends on the shapes, grown as needed.
 *
 * Constants are views of the weights embedded in the library (`<prefix>_weights`, mapped
 * from the file by the dynamic loader, never copied); an input pointer may be NULL for an
 * input that has a default (an initializer that is also a graph input). Each thread gets its
 * own arena, allocated on its first run and freed when it exits, so runs from several
 * threads at once are safe. A nonzero status is a run-time check that refused the data
 * (an index out of range, an integer division by zero): `<prefix>_error(status)` says
 * which node, value and position, for the calling thread's last run.
 *
 * The thread pool that the model's parallel loops call is linked into the library too
 * (runtime/thread_pool.py, generated for the target); after fork() a child runs every loop
 * on its calling thread, as in Python.
 *
 * Compiled with -DONNXC_PREFIX=<prefix> next to the generated layout.c, which defines the
 * tables declared below.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ONNXC_CAT2(a, b) a##b
#define ONNXC_CAT(a, b) ONNXC_CAT2(a, b)
#define ONNXC_SYMBOL(name) ONNXC_CAT(ONNXC_PREFIX, name)
#define ONNXC_EXPORT __attribute__((visibility("default")))

/* from the generated layout.c */
extern const unsigned char ONNXC_SYMBOL(_weights)[];
extern const int64_t onnxc_num_inputs, onnxc_num_outputs, onnxc_num_constants;
extern const int64_t onnxc_constant_offsets[];
extern const int64_t onnxc_default_offsets[]; /* -1: the input has no default */
extern const int64_t onnxc_arena_bytes, onnxc_status_offset;
extern const int64_t onnxc_num_checks;
extern const char *const onnxc_check_sites[];
extern const char onnxc_manifest[];

/* from the model's object (with the pool, runtime/pool_ir.py, when the model has parallel
   loops: their launcher is the pool's) */
int32_t ONNXC_SYMBOL(_entry)(void **argv);

/* what the pool's launcher reads (runtime/launch_ir.py): set in a child after fork() */
int32_t onnxc_serial_after_fork = 0;

static void onnxc_after_fork_in_child(void) { onnxc_serial_after_fork = 1; }

static pthread_key_t onnxc_arena_key, onnxc_dynamic_key;

static void onnxc_free_arena(void *arena) { free(arena); }

__attribute__((constructor)) static void onnxc_init(void) {
    pthread_atfork(NULL, NULL, onnxc_after_fork_in_child);
    pthread_key_create(&onnxc_arena_key, onnxc_free_arena);
    pthread_key_create(&onnxc_dynamic_key, onnxc_free_arena);
}

static _Thread_local int64_t onnxc_last_record[3];
static _Thread_local char onnxc_message[512];

static unsigned char *onnxc_thread_arena(void) {
    unsigned char *arena = pthread_getspecific(onnxc_arena_key);
    if (arena == NULL) {
        size_t bytes = (size_t)((onnxc_arena_bytes + 63) / 64 * 64);
        arena = aligned_alloc(64, bytes ? bytes : 64);
        if (arena == NULL) return NULL;
        memset(arena, 0, bytes);
        pthread_setspecific(onnxc_arena_key, arena);
    }
    return arena;
}

#ifdef ONNXC_SYMBOLIC
/* A model with symbolic dimensions (runtime/artifact_sizes.py writes these into layout.c):
 * the entry's argv also holds the symbols' values (`dims`, after the outputs) and, last,
 * a dynamic arena for the buffers whose sizes depend on them. */
extern const int64_t onnxc_num_symbols;
int32_t onnxc_bind(const int64_t *const *input_shapes, int64_t *d, char *msg, size_t n);
int32_t onnxc_dynamic_bytes(const int64_t *d, int64_t *bytes);
int32_t onnxc_output_dims(const int64_t *d, int room, int64_t *const *shapes);
#define ONNXC_EXTRA 1
#else
#define ONNXC_EXTRA 0
#endif

static _Thread_local unsigned char *onnxc_dynamic;
static _Thread_local int64_t onnxc_dynamic_size;

static int32_t onnxc_call(const void *const *inputs, void *const *outputs, int64_t *dims,
                          int64_t dynamic_bytes) {
    enum { MAX_STACK_ARGS = 256 };
    void *stack_argv[MAX_STACK_ARGS];
    int64_t n_io = onnxc_num_inputs + onnxc_num_outputs;
    int64_t first_constant = n_io + ONNXC_EXTRA;
    int64_t argc = first_constant + onnxc_num_constants + 1 + ONNXC_EXTRA;
    void **argv = argc <= MAX_STACK_ARGS ? stack_argv : malloc((size_t)argc * sizeof(void *));
    unsigned char *arena = onnxc_thread_arena();
    if (ONNXC_EXTRA && dynamic_bytes > onnxc_dynamic_size) {
        size_t bytes = (size_t)((dynamic_bytes + 63) / 64 * 64);
        unsigned char *grown = aligned_alloc(64, bytes);
        if (grown != NULL) {
            free(onnxc_dynamic);
            onnxc_dynamic = grown;
            pthread_setspecific(onnxc_dynamic_key, grown); /* freed when the thread exits */
            onnxc_dynamic_size = (int64_t)bytes;
        } else {
            arena = NULL;
        }
    }
    if (argv == NULL || arena == NULL) {
        if (argv != stack_argv) free(argv);
        snprintf(onnxc_message, sizeof onnxc_message, "out of memory for the arena");
        return -1;
    }
    for (int64_t i = 0; i < onnxc_num_inputs; i++) {
        const void *in = inputs[i];
        if (in == NULL) {
            if (onnxc_default_offsets[i] < 0) {
                if (argv != stack_argv) free(argv);
                snprintf(onnxc_message, sizeof onnxc_message,
                         "input %lld is NULL and has no default", (long long)i);
                return -2;
            }
            in = ONNXC_SYMBOL(_weights) + onnxc_default_offsets[i];
        }
        argv[i] = (void *)in;
    }
    for (int64_t i = 0; i < onnxc_num_outputs; i++) argv[onnxc_num_inputs + i] = outputs[i];
    if (ONNXC_EXTRA) {
        argv[n_io] = dims;
        argv[argc - 1] = onnxc_dynamic;
    }
    for (int64_t i = 0; i < onnxc_num_constants; i++)
        argv[first_constant + i] =
            (void *)(ONNXC_SYMBOL(_weights) + onnxc_constant_offsets[i]);
    argv[first_constant + onnxc_num_constants] = arena;
    int32_t status = ONNXC_SYMBOL(_entry)(argv);
    if (status > 0 && onnxc_status_offset >= 0)
        memcpy(onnxc_last_record, arena + onnxc_status_offset, sizeof onnxc_last_record);
    if (argv != stack_argv) free(argv);
    return status;
}

#ifdef ONNXC_SYMBOLIC
ONNXC_EXPORT int32_t ONNXC_SYMBOL(_output_shapes)(const int64_t *const *input_shapes,
                                                   int64_t *const *output_shapes) {
    int64_t dims[onnxc_num_symbols > 0 ? onnxc_num_symbols : 1];
    int32_t status = onnxc_bind(input_shapes, dims, onnxc_message, sizeof onnxc_message);
    if (status == 0 && onnxc_output_dims(dims, 1, output_shapes) != 0) {
        snprintf(onnxc_message, sizeof onnxc_message, "an output would be too large");
        status = -5;
    }
    return status;
}

ONNXC_EXPORT int32_t ONNXC_SYMBOL(_run_shaped)(const void *const *inputs,
                                                const int64_t *const *input_shapes,
                                                void *const *outputs,
                                                int64_t *const *output_shapes) {
    int64_t dims[onnxc_num_symbols > 0 ? onnxc_num_symbols : 1];
    int64_t bytes = 0;
    int32_t status = onnxc_bind(input_shapes, dims, onnxc_message, sizeof onnxc_message);
    if (status != 0) return status;
    if (onnxc_dynamic_bytes(dims, &bytes) != 0) {
        snprintf(onnxc_message, sizeof onnxc_message,
                 "the intermediate tensors of these shapes would be too large");
        return -5;
    }
    status = onnxc_call(inputs, outputs, dims, bytes);
    if (status == 0 && output_shapes != NULL) onnxc_output_dims(dims, 0, output_shapes);
    return status;
}

ONNXC_EXPORT int32_t ONNXC_SYMBOL(_run)(const void *const *inputs, void *const *outputs) {
    (void)inputs;
    (void)outputs;
    snprintf(onnxc_message, sizeof onnxc_message,
             "the model has symbolic dimensions: call _output_shapes and _run_shaped");
    return -4;
}
#else
ONNXC_EXPORT int32_t ONNXC_SYMBOL(_run)(const void *const *inputs, void *const *outputs) {
    return onnxc_call(inputs, outputs, NULL, 0);
}
#endif

ONNXC_EXPORT const char *ONNXC_SYMBOL(_info)(void) { return onnxc_manifest; }

ONNXC_EXPORT const char *ONNXC_SYMBOL(_error)(int32_t status) {
    if (status == 0) return "ok";
    if (status < 0) return onnxc_message;
    if (status > onnxc_num_checks) {
        snprintf(onnxc_message, sizeof onnxc_message, "the model stopped with status %d",
                 (int)status);
        return onnxc_message;
    }
    snprintf(onnxc_message, sizeof onnxc_message, "%s: value %lld at position %lld",
             onnxc_check_sites[status - 1], (long long)onnxc_last_record[2],
             (long long)onnxc_last_record[1]);
    return onnxc_message;
}
