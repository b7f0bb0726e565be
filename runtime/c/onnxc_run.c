/* `run`: an onnxc ahead-of-time artifact's model as a command (runtime/artifact.py builds it).
 *
 *     run IN_1 ... IN_n OUT_1 ... OUT_m
 *
 * Reads each input from a raw file (little-endian, C order, the exact size the model takes;
 * inputs in model order, see <prefix>.h or `<prefix>_info()`; `-` for an input that has a
 * default takes the default), runs the model once and writes each output the same way.
 * Exit status: 0, 2 for wrong arguments or files, 3 when the model refused the data or
 * the shapes (the message says which node, value and position, or which dimension).
 * An input given as FILE@D0xD1x... (its shape; required for a model with symbolic
 * dimensions, built with -DONNXC_SYMBOLIC) runs through `<prefix>_run_shaped`, which sizes
 * the outputs (allocating again when a size the data decides needs more room), and each
 * output's shape is printed as it is written: `name: D0xD1...`.
 * Built with -DONNXC_PREFIX=<prefix> -DONNXC_HEADER='"<prefix>.h"'.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include ONNXC_HEADER /* <prefix>.h */

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define MODEL(name) CAT(ONNXC_PREFIX, name)
#define MAX_RANK 16

static void *read_file(const char *path, int64_t expected) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    void *data = malloc(expected ? (size_t)expected : 1);
    size_t got = data ? fread(data, 1, (size_t)expected, f) : 0;
    int extra = fgetc(f);
    fclose(f);
    if (data == NULL || (int64_t)got != expected || extra != EOF) {
        fprintf(stderr, "%s: expected exactly %lld bytes\n", path, (long long)expected);
        free(data);
        return NULL;
    }
    return data;
}

static int write_file(const char *path, const void *data, int64_t bytes) {
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, (size_t)bytes, f) != (size_t)bytes) {
        perror(path);
        if (f != NULL) fclose(f);
        return 0;
    }
    return fclose(f) == 0;
}

/* "path@2x3x4": the path cut at '@' and the shape parsed; 0 when it is not one */
static int parse_shaped(char *arg, int rank, int64_t *shape, int64_t itemsize, int64_t *bytes) {
    char *at = strrchr(arg, '@');
    if (at == NULL) return 0;
    char *p = at + 1;
    *bytes = itemsize;
    for (int k = 0; k < rank; k++) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || (k + 1 < rank ? *end != 'x' : *end != 0)) return 0;
        shape[k] = v;
        if (__builtin_mul_overflow(*bytes, (int64_t)v, bytes)) return 0;
        p = end + 1;
    }
    if (rank == 0 && *p != 0) return 0;
    *at = 0;
    return 1;
}

static int64_t nbytes(const int64_t *shape, int rank, int64_t itemsize) {
    for (int k = 0; k < rank; k++) itemsize *= shape[k];
    return itemsize;
}

static int run_shaped(int argc, char **argv) {
    int64_t n_in = MODEL(_NUM_INPUTS), n_out = MODEL(_NUM_OUTPUTS);
    (void)argc;
    void *inputs[MODEL(_NUM_INPUTS) + 1];
    void *outputs[MODEL(_NUM_OUTPUTS) + 1];
    int64_t in_dims[MODEL(_NUM_INPUTS) + 1][MAX_RANK], out_dims[MODEL(_NUM_OUTPUTS) + 1][MAX_RANK];
    const int64_t *in_shapes[MODEL(_NUM_INPUTS) + 1];
    int64_t *out_shapes[MODEL(_NUM_OUTPUTS) + 1];
    for (int64_t i = 0; i < n_in; i++) {
        int64_t bytes;
        in_shapes[i] = in_dims[i];
        if (strcmp(argv[1 + i], "-") == 0 && MODEL(_input_has_default)[i]) {
            inputs[i] = NULL; /* the model's own default, of its own shape */
            in_shapes[i] = NULL;
            continue;
        }
        if (MODEL(_input_ranks)[i] > MAX_RANK ||
            !parse_shaped(argv[1 + i], MODEL(_input_ranks)[i], in_dims[i],
                          MODEL(_input_itemsize)[i], &bytes)) {
            fprintf(stderr, "%s: give the input as FILE@D0x...xDn (rank %d)\n", argv[1 + i],
                    MODEL(_input_ranks)[i]);
            return 2;
        }
        inputs[i] = read_file(argv[1 + i], bytes);
        if (inputs[i] == NULL) return 2;
    }
    for (int64_t i = 0; i < n_out; i++) {
        if (MODEL(_output_ranks)[i] > MAX_RANK) return 2;
        out_shapes[i] = out_dims[i];
        outputs[i] = NULL;
    }
    int32_t status = MODEL(_output_shapes)(in_shapes, out_shapes);
    for (int attempt = 0; status == 0 || status == MODEL(_ERR_OUTPUT_TOO_SMALL); attempt++) {
        for (int64_t i = 0; i < n_out; i++) { /* room for the shapes the library asked for */
            int64_t bytes = nbytes(out_dims[i], MODEL(_output_ranks)[i],
                                   MODEL(_output_itemsize)[i]);
            free(outputs[i]);
            outputs[i] = malloc(bytes ? (size_t)bytes : 1);
            if (outputs[i] == NULL) return 2;
        }
        status = MODEL(_run_shaped)((const void *const *)inputs, in_shapes, outputs, out_shapes);
        if (status == 0 || attempt > 8) break;
    }
    if (status != 0) {
        fprintf(stderr, "error: %s\n", MODEL(_error)(status));
        return 3;
    }
    for (int64_t i = 0; i < n_out; i++) {
        printf("%s: ", MODEL(_output_names)[i]);
        for (int k = 0; k < MODEL(_output_ranks)[i]; k++)
            printf(k ? "x%lld" : "%lld", (long long)out_dims[i][k]);
        printf("\n");
        if (!write_file(argv[1 + n_in + i], outputs[i],
                        nbytes(out_dims[i], MODEL(_output_ranks)[i], MODEL(_output_itemsize)[i])))
            return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    int64_t n_in = MODEL(_NUM_INPUTS), n_out = MODEL(_NUM_OUTPUTS);
    if (argc != 1 + n_in + n_out) {
        fprintf(stderr, "usage: %s", argv[0]);
        for (int64_t i = 0; i < n_in; i++) fprintf(stderr, " %s", MODEL(_input_names)[i]);
        for (int64_t i = 0; i < n_out; i++) fprintf(stderr, " %s", MODEL(_output_names)[i]);
        fprintf(stderr, "\n  (raw little-endian C-order files: inputs read, outputs written;"
                        " FILE@D0xD1x... gives an input's shape; - for an input with a"
                        " default)\n");
        return 2;
    }
#ifdef ONNXC_SYMBOLIC
    return run_shaped(argc, argv);
#else
    for (int64_t i = 0; i < n_in; i++) /* an input with its shape: the shaped API */
        if (strchr(argv[1 + i], '@') != NULL) return run_shaped(argc, argv);
    void *inputs[MODEL(_NUM_INPUTS) + 1];
    void *outputs[MODEL(_NUM_OUTPUTS) + 1];
    for (int64_t i = 0; i < n_in; i++) {
        if (argv[1 + i][0] == '-' && argv[1 + i][1] == 0 && MODEL(_input_has_default)[i]) {
            inputs[i] = NULL; /* the model's own default */
            continue;
        }
        inputs[i] = read_file(argv[1 + i], MODEL(_input_bytes)[i]);
        if (inputs[i] == NULL) return 2;
    }
    for (int64_t i = 0; i < n_out; i++) {
        outputs[i] = malloc(MODEL(_output_bytes)[i] ? (size_t)MODEL(_output_bytes)[i] : 1);
        if (outputs[i] == NULL) return 2;
    }
    int32_t status = MODEL(_run)((const void *const *)inputs, outputs);
    if (status != 0) {
        fprintf(stderr, "error: %s\n", MODEL(_error)(status));
        return 3;
    }
    for (int64_t i = 0; i < n_out; i++)
        if (!write_file(argv[1 + n_in + i], outputs[i], MODEL(_output_bytes)[i])) return 2;
    return 0;
#endif
}
