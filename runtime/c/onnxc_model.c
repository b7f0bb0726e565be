/* The C face of an onnxc ahead-of-time artifact (runtime/artifact.py builds it into model.so).
 *
 * The generated object holds the model's native entry, `<prefix>_entry(void **argv)`, whose
 * argv is every input, every output, every constant, then the arena (dialects/entry_abi.py).
 * This file gives it a C API that needs nothing but the library:
 *
 *   int32_t <prefix>_run(const void *const *inputs, void *const *outputs);   static shapes
 *   const char *<prefix>_info(void);          the manifest (JSON)
 *   const char *<prefix>_error(int32_t status);
 *
 * and, for every model, the shaped API (a model with symbolic dimensions, built with
 * -DONNXC_SYMBOLIC, has only this one; `_run` returns -4):
 *
 *   int32_t <prefix>_output_shapes(const int64_t *const *input_shapes,
 *                                  int64_t *const *output_shapes);  the room to allocate
 *   int32_t <prefix>_run_shaped(const void *const *inputs, const int64_t *const *input_shapes,
 *                               void *const *outputs, int64_t *const *output_shapes);
 *   int32_t <prefix>_run_tensors(const <prefix>_tensor *inputs, int64_t num_inputs,
 *                                <prefix>_tensor *outputs, int64_t num_outputs);
 *
 * The sizes are generated C (runtime/artifact_sizes.py, in layout.c): binding the symbols
 * from the shapes with the model's checks, the dynamic arena, the outputs' shapes. On entry
 * to `_run_shaped`, `output_shapes[i]` is the shape output i was allocated for (what
 * `_output_shapes` said); on return, its real shape. A size the data decides is allocated
 * for its bound or, without one, a capacity: a run that needs more grows the capacity and
 * runs again when the caller's buffers hold it, or returns -6 with the shapes they need
 * in `output_shapes` (the caller allocates those and calls again). `_run_tensors` takes
 * each tensor's rank and byte size too, and checks them. Each thread keeps a dynamic arena
 * for the intermediate tensors whose size depends on the shapes, grown as needed.
 *
 * Constants are views of the weights embedded in the library (`<prefix>_weights`, mapped
 * from the file by the dynamic loader, never copied); an input pointer may be NULL for an
 * input that has a default (an initializer that is also a graph input). Each thread gets its
 * own arena, allocated on its first run and freed when it exits, so runs from several
 * threads at once are safe. A positive status is a run-time check that refused the data
 * (an index out of range, an integer division by zero, a size the model cannot take):
 * `<prefix>_error(status)` says which node, value and position, for the calling thread's
 * last run; a negative one is a status of the list in the header (`<prefix>_ERR_*`).
 *
 * The thread pool that the model's parallel loops call is linked into the library too
 * (runtime/thread_pool.py, generated for the target); after fork() a child runs every loop
 * on its calling thread, as in Python.
 *
 * Compiled with -DONNXC_PREFIX=<prefix> next to the generated layout.c, which defines the
 * tables declared below.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ONNXC_CAT2(a, b) a##b
#define ONNXC_CAT(a, b) ONNXC_CAT2(a, b)
#define ONNXC_SYMBOL(name) ONNXC_CAT(ONNXC_PREFIX, name)
#define ONNXC_EXPORT __attribute__((visibility("default")))

enum { ERR_NO_MEMORY = -1, ERR_NO_DEFAULT = -2, ERR_SHAPE = -3, ERR_NEEDS_SHAPES = -4,
       ERR_TOO_LARGE = -5, ERR_OUTPUT_TOO_SMALL = -6, ERR_ARGUMENT = -7 };

/* from the generated layout.c */
extern const unsigned char ONNXC_SYMBOL(_weights)[];
extern const int64_t onnxc_num_inputs, onnxc_num_outputs, onnxc_num_constants;
extern const int64_t onnxc_constant_offsets[];
extern const int64_t onnxc_default_offsets[]; /* -1: the input has no default */
extern const int64_t onnxc_arena_bytes, onnxc_status_offset;
extern const int64_t onnxc_num_checks;
extern const char *const onnxc_check_sites[];
extern const char onnxc_manifest[];
/* ... and its sizes (runtime/artifact_sizes.py) */
extern const int64_t onnxc_num_symbols, onnxc_num_run_symbols, onnxc_first_run_symbol;
extern const int64_t onnxc_run_bounded[];
extern const char *const onnxc_run_names[];
extern int64_t onnxc_capacities[]; /* per run symbol without a bound: the rows allocated */
extern const int64_t onnxc_site_kind[], onnxc_site_run_symbol[];
extern const char *const onnxc_input_names[], *const onnxc_output_names[];
extern const int64_t onnxc_input_ranks[], onnxc_output_ranks[];
extern const int64_t onnxc_input_itemsize[], onnxc_output_itemsize[];
extern const int64_t *const onnxc_default_shapes[];
extern const int64_t onnxc_per_sample; /* compiled for one sample: d[0] is the samples */
extern const int64_t onnxc_input_sample_bytes[], onnxc_output_sample_bytes[];
extern const int64_t onnxc_empty_symbol; /* a batch whose 0 means no native run, or -1 */
extern const char onnxc_empty_refusal[];
int32_t onnxc_bind(const int64_t *const *input_shapes, const int64_t *caps, int64_t *d,
                   char *msg, size_t n);
int32_t onnxc_dynamic_bytes(const int64_t *d, int64_t *bytes);
int32_t onnxc_output_dims(const int64_t *d, int room, int64_t *const *shapes);

/* from the model's object (with the pool, runtime/pool_ir.py, when the model has parallel
   loops: their launcher is the pool's) */
int32_t ONNXC_SYMBOL(_entry)(void **argv);

/* what the pool's launcher reads (lowering/to_llvm/launch_ir.py): set in a child after fork() */
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
static _Thread_local int64_t onnxc_last_sample = -1;
static _Thread_local char onnxc_message[512];

__attribute__((format(printf, 2, 3))) static int32_t onnxc_fail(int32_t status,
                                                                const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(onnxc_message, sizeof onnxc_message, format, args);
    va_end(args);
    return status;
}

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
/* the entry's argv also holds the symbols' values (`dims`, after the outputs) and, last,
 * a dynamic arena for the buffers whose sizes depend on them */
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
    if (ONNXC_EXTRA && (dynamic_bytes > onnxc_dynamic_size || onnxc_dynamic == NULL)) {
        size_t bytes = (size_t)((dynamic_bytes + 63) / 64 * 64);
        unsigned char *grown = aligned_alloc(64, bytes ? bytes : 64);
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
        return onnxc_fail(ERR_NO_MEMORY, "out of memory for the arena");
    }
    for (int64_t i = 0; i < onnxc_num_inputs; i++) {
        const void *in = inputs[i];
        if (in == NULL) {
            if (onnxc_default_offsets[i] < 0) {
                if (argv != stack_argv) free(argv);
                return onnxc_fail(ERR_NO_DEFAULT, "input %lld is NULL and has no default",
                                  (long long)i);
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

/* One run of the model for bound sizes `d`: per sample for a model compiled for one. */
static int32_t onnxc_call_bound(const void *const *inputs, void *const *outputs, int64_t *d,
                                int64_t dynamic_bytes) {
    onnxc_last_sample = -1;
    if (onnxc_empty_symbol >= 0 && d[onnxc_empty_symbol] == 0) return 0; /* no samples */
    if (!onnxc_per_sample) return onnxc_call(inputs, outputs, d, dynamic_bytes);
    const void *in[onnxc_num_inputs + 1];
    void *out[onnxc_num_outputs + 1];
    for (int64_t s = 0; s < d[0]; s++) {
        for (int64_t i = 0; i < onnxc_num_inputs; i++)
            in[i] = inputs[i] == NULL ? NULL
                                      : (const char *)inputs[i] + s * onnxc_input_sample_bytes[i];
        for (int64_t i = 0; i < onnxc_num_outputs; i++)
            out[i] = (char *)outputs[i] + s * onnxc_output_sample_bytes[i];
        int32_t status = onnxc_call(in, out, d, dynamic_bytes);
        if (status != 0) {
            onnxc_last_sample = s;
            return status;
        }
    }
    return 0;
}

/* The shapes to bind: the caller's, or for a NULL input with a default the default's. */
static int32_t onnxc_input_shapes(const void *const *inputs, const int64_t *const *given,
                                  const int64_t **shapes) {
    for (int64_t i = 0; i < onnxc_num_inputs; i++) {
        if (inputs != NULL && inputs[i] == NULL) {
            if (onnxc_default_offsets[i] < 0)
                return onnxc_fail(ERR_NO_DEFAULT, "input '%s' is NULL and has no default",
                                  onnxc_input_names[i]);
            shapes[i] = onnxc_default_shapes[i];
        } else if (given == NULL || given[i] == NULL) {
            if (inputs == NULL && onnxc_default_offsets[i] >= 0) {
                shapes[i] = onnxc_default_shapes[i];
                continue;
            }
            return onnxc_fail(ERR_ARGUMENT, "input '%s' has no shape (input_shapes[%lld] is "
                              "NULL)", onnxc_input_names[i], (long long)i);
        } else {
            shapes[i] = given[i];
        }
        if (inputs != NULL && (uintptr_t)inputs[i] % (uintptr_t)onnxc_input_itemsize[i])
            return onnxc_fail(ERR_ARGUMENT, "input '%s' is not aligned to %lld bytes",
                              onnxc_input_names[i], (long long)onnxc_input_itemsize[i]);
    }
    return 0;
}

static int64_t onnxc_capacity(int64_t j) {
    return __atomic_load_n(&onnxc_capacities[j], __ATOMIC_RELAXED);
}

static void onnxc_keep_capacity(int64_t j, int64_t value) { /* only ever grows */
    int64_t seen = onnxc_capacity(j);
    while (seen < value && !__atomic_compare_exchange_n(&onnxc_capacities[j], &seen, value, 0,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* Bind `d` and size the run: its dynamic arena and the room each output needs. */
static int32_t onnxc_size_run(const int64_t *const *shapes, const int64_t *caps, int64_t *d,
                              int64_t *dynamic_bytes, int64_t *const *room) {
    int32_t status = onnxc_bind(shapes, caps, d, onnxc_message, sizeof onnxc_message);
    if (status != 0) return status;
    if (onnxc_dynamic_bytes(d, dynamic_bytes) != 0)
        return onnxc_fail(ERR_TOO_LARGE, "the intermediate tensors of these shapes would be "
                                         "too large");
    if (onnxc_output_dims(d, 1, room) != 0)
        return onnxc_fail(ERR_TOO_LARGE, "an output of these shapes would be too large");
    return 0;
}

/* bytes of a tensor of `rank` dims at `shape` of `itemsize` bytes; -1 when not a size */
static int64_t onnxc_bytes(const int64_t *shape, int64_t rank, int64_t itemsize) {
    int64_t bytes = itemsize;
    for (int64_t k = 0; k < rank; k++)
        if (shape[k] < 0 || __builtin_mul_overflow(bytes, shape[k], &bytes)) return -1;
    return bytes;
}

#define ONNXC_ROOM_DIMS(rooms, storage)                                                       \
    int64_t total_rank = 0;                                                                   \
    for (int64_t o = 0; o < onnxc_num_outputs; o++) total_rank += onnxc_output_ranks[o];      \
    int64_t storage[total_rank + 1];                                                          \
    int64_t *rooms[onnxc_num_outputs + 1];                                                    \
    for (int64_t o = 0, at = 0; o < onnxc_num_outputs; at += onnxc_output_ranks[o], o++)      \
        rooms[o] = storage + at;

/* The shaped run: `capacity[o]` bytes at outputs[o]; the real shapes into `output_shapes`,
 * or with -6 the shapes each output must be allocated with. */
static int32_t onnxc_run_sized(const void *const *inputs, const int64_t *const *given,
                               void *const *outputs, const int64_t *capacity,
                               int64_t *const *output_shapes) {
    const int64_t *shapes[onnxc_num_inputs + 1];
    int32_t status = onnxc_input_shapes(inputs, given, shapes);
    if (status != 0) return status;
    ONNXC_ROOM_DIMS(room, room_dims)
    int64_t caps[onnxc_num_run_symbols + 1], d[onnxc_num_symbols + 1], dynamic_bytes = 0;
    for (int64_t j = 0; j < onnxc_num_run_symbols; j++) caps[j] = onnxc_capacity(j);
    int64_t grown = -1, needed = 0; /* the run symbol last grown, and what the run needed */
    for (int attempt = 0; attempt < 64; attempt++) {
        status = onnxc_size_run(shapes, caps, d, &dynamic_bytes, room);
        if (status == ERR_TOO_LARGE && grown >= 0 && caps[grown] != needed) {
            caps[grown] = needed; /* twice the room was too much: exactly what it needs */
            continue;
        }
        if (status == ERR_TOO_LARGE && grown >= 0)
            return onnxc_fail(ERR_TOO_LARGE, "size '%s' came out %lld: the tensors it sizes "
                              "would be too large", onnxc_run_names[grown], (long long)needed);
        if (status != 0) return status;
        if (onnxc_empty_symbol >= 0 && d[onnxc_empty_symbol] == 0 && onnxc_empty_refusal[0])
            return onnxc_fail(ERR_SHAPE, "%s", onnxc_empty_refusal);
        for (int64_t j = 0; j < onnxc_num_run_symbols; j++)
            if (!onnxc_run_bounded[j]) onnxc_keep_capacity(j, caps[j]);
        for (int64_t o = 0; o < onnxc_num_outputs; o++) {
            int64_t bytes = onnxc_bytes(room[o], onnxc_output_ranks[o], onnxc_output_itemsize[o]);
            if (capacity[o] >= bytes && (outputs[o] != NULL || bytes == 0)) continue;
            if (capacity[o] >= 0 && (outputs[o] != NULL || capacity[o] == 0)) {
                /* short (or not allocated yet): the room each output needs */
                for (int64_t p = 0; p < onnxc_num_outputs; p++)
                    memcpy(output_shapes[p], room[p],
                           (size_t)onnxc_output_ranks[p] * sizeof(int64_t));
                return onnxc_fail(ERR_OUTPUT_TOO_SMALL,
                                  "output '%s' needs %lld bytes, its buffer has %lld: allocate "
                                  "each output with the shape it now holds and run again",
                                  onnxc_output_names[o], (long long)bytes,
                                  (long long)capacity[o]);
            }
            return onnxc_fail(ERR_ARGUMENT, "output '%s' is NULL with a size, or its size is "
                              "negative", onnxc_output_names[o]);
        }
        status = onnxc_call_bound(inputs, outputs, d, dynamic_bytes);
        int64_t site = status - 1, j = status > 0 && site < onnxc_num_checks
                                           ? onnxc_site_run_symbol[site] : -1;
        if (j < 0) {
            if (status == 0) onnxc_output_dims(d, 0, output_shapes);
            return status;
        }
        needed = onnxc_last_record[2]; /* a size the data decided outgrew its room */
        if (onnxc_run_bounded[j] || needed <= caps[j])
            return status; /* past its bound: the data is wrong (_error says which size) */
        grown = j;
        caps[j] = needed > INT64_MAX / 2 || 2 * caps[j] < needed ? needed : 2 * caps[j];
    }
    return onnxc_fail(ERR_TOO_LARGE, "the sizes the data decides kept growing");
}

ONNXC_EXPORT int32_t ONNXC_SYMBOL(_output_shapes)(const int64_t *const *input_shapes,
                                                   int64_t *const *output_shapes) {
    const int64_t *shapes[onnxc_num_inputs + 1];
    if (output_shapes == NULL) return onnxc_fail(ERR_ARGUMENT, "output_shapes is NULL");
    for (int64_t o = 0; o < onnxc_num_outputs; o++)
        if (output_shapes[o] == NULL)
            return onnxc_fail(ERR_ARGUMENT, "output_shapes[%lld] is NULL", (long long)o);
    int32_t status = onnxc_input_shapes(NULL, input_shapes, shapes);
    if (status != 0) return status;
    int64_t caps[onnxc_num_run_symbols + 1], d[onnxc_num_symbols + 1], bytes;
    for (int64_t j = 0; j < onnxc_num_run_symbols; j++) caps[j] = onnxc_capacity(j);
    return onnxc_size_run(shapes, caps, d, &bytes, output_shapes);
}

ONNXC_EXPORT int32_t ONNXC_SYMBOL(_run_shaped)(const void *const *inputs,
                                                const int64_t *const *input_shapes,
                                                void *const *outputs,
                                                int64_t *const *output_shapes) {
    int64_t capacity[onnxc_num_outputs + 1];
    if (inputs == NULL || outputs == NULL || output_shapes == NULL)
        return onnxc_fail(ERR_ARGUMENT, "inputs, outputs and output_shapes must not be NULL");
    for (int64_t o = 0; o < onnxc_num_outputs; o++) {
        if (output_shapes[o] == NULL)
            return onnxc_fail(ERR_ARGUMENT, "output_shapes[%lld] is NULL", (long long)o);
        capacity[o] = onnxc_bytes(output_shapes[o], onnxc_output_ranks[o],
                                  onnxc_output_itemsize[o]);
        if (capacity[o] < 0)
            return onnxc_fail(ERR_ARGUMENT, "output_shapes[%lld] is not the shape output %lld "
                              "was allocated with (a negative or huge dimension)",
                              (long long)o, (long long)o);
        if ((uintptr_t)outputs[o] % (uintptr_t)onnxc_output_itemsize[o])
            return onnxc_fail(ERR_ARGUMENT, "output '%s' is not aligned to %lld bytes",
                              onnxc_output_names[o], (long long)onnxc_output_itemsize[o]);
    }
    return onnxc_run_sized(inputs, input_shapes, outputs, capacity, output_shapes);
}

/* <prefix>_tensor in the header */
typedef struct {
    void *data;
    int64_t bytes;
    int64_t rank;
    int64_t *shape;
} onnxc_tensor;

ONNXC_EXPORT int32_t ONNXC_SYMBOL(_run_tensors)(const onnxc_tensor *inputs, int64_t num_inputs,
                                                 onnxc_tensor *outputs, int64_t num_outputs) {
    if (num_inputs != onnxc_num_inputs || num_outputs != onnxc_num_outputs)
        return onnxc_fail(ERR_ARGUMENT, "the model takes %lld input(s) and %lld output(s), "
                          "got %lld and %lld", (long long)onnxc_num_inputs,
                          (long long)onnxc_num_outputs, (long long)num_inputs,
                          (long long)num_outputs);
    if ((num_inputs && inputs == NULL) || (num_outputs && outputs == NULL))
        return onnxc_fail(ERR_ARGUMENT, "inputs or outputs is NULL");
    const void *in[onnxc_num_inputs + 1];
    const int64_t *in_shapes[onnxc_num_inputs + 1];
    void *out[onnxc_num_outputs + 1];
    int64_t *out_shapes[onnxc_num_outputs + 1], capacity[onnxc_num_outputs + 1];
    for (int64_t i = 0; i < num_inputs; i++) {
        in[i] = inputs[i].data;
        in_shapes[i] = inputs[i].shape;
        if (in[i] == NULL) continue; /* its default (checked with the shapes) */
        if (inputs[i].rank != onnxc_input_ranks[i] || in_shapes[i] == NULL)
            return onnxc_fail(ERR_SHAPE, "input '%s' has rank %lld, the model takes rank %lld",
                              onnxc_input_names[i], (long long)inputs[i].rank,
                              (long long)onnxc_input_ranks[i]);
        int64_t bytes = onnxc_bytes(in_shapes[i], inputs[i].rank, onnxc_input_itemsize[i]);
        if (bytes >= 0 && inputs[i].bytes < bytes)
            return onnxc_fail(ERR_ARGUMENT, "input '%s' has %lld bytes, its shape needs %lld",
                              onnxc_input_names[i], (long long)inputs[i].bytes,
                              (long long)bytes);
    }
    for (int64_t o = 0; o < num_outputs; o++) {
        if (outputs[o].rank != onnxc_output_ranks[o] || outputs[o].shape == NULL)
            return onnxc_fail(ERR_SHAPE, "output '%s' has rank %lld, the model gives rank %lld",
                              onnxc_output_names[o], (long long)outputs[o].rank,
                              (long long)onnxc_output_ranks[o]);
        if ((uintptr_t)outputs[o].data % (uintptr_t)onnxc_output_itemsize[o])
            return onnxc_fail(ERR_ARGUMENT, "output '%s' is not aligned to %lld bytes",
                              onnxc_output_names[o], (long long)onnxc_output_itemsize[o]);
        out[o] = outputs[o].data;
        out_shapes[o] = outputs[o].shape;
        capacity[o] = outputs[o].bytes;
    }
    return onnxc_run_sized(in, in_shapes, out, capacity, out_shapes);
}

#ifdef ONNXC_SYMBOLIC
ONNXC_EXPORT int32_t ONNXC_SYMBOL(_run)(const void *const *inputs, void *const *outputs) {
    (void)inputs;
    (void)outputs;
    return onnxc_fail(ERR_NEEDS_SHAPES, "the model has symbolic dimensions: call "
                                        "_output_shapes and _run_shaped");
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
    char sample[48] = "";
    if (onnxc_last_sample >= 0)
        snprintf(sample, sizeof sample, " in sample %lld", (long long)onnxc_last_sample);
    const char *site = onnxc_check_sites[status - 1];
    switch (onnxc_site_kind[status - 1]) {
    case 1: /* a condition on the sizes */
        snprintf(onnxc_message, sizeof onnxc_message, "%s%s", site, sample);
        break;
    case 2: /* a size the data decides, past its bound */
        snprintf(onnxc_message, sizeof onnxc_message, "%s: came out %lld, past its bound%s",
                 site, (long long)onnxc_last_record[2], sample);
        break;
    default:
        snprintf(onnxc_message, sizeof onnxc_message, "%s: value %lld at position %lld%s",
                 site, (long long)onnxc_last_record[2], (long long)onnxc_last_record[1],
                 sample);
    }
    return onnxc_message;
}
