/* `run`: an onnxc ahead-of-time artifact's model as a command (runtime/artifact.py builds it).
 *
 *     run IN_1 ... IN_n OUT_1 ... OUT_m
 *
 * Reads each input from a raw file (little-endian, C order, the exact size the model takes;
 * inputs in model order, see <prefix>.h or `<prefix>_info()`; `-` for an input that has a
 * default takes the default), runs the model once and writes each output the same way. Exit status: 0, 2 for wrong arguments or files, 3 when a
 * run-time check refused the data (the message says which node, value and position).
 * A model with symbolic dimensions (built with -DONNXC_SYMBOLIC) takes each input as
 * FILE@D0xD1x... (its shape) and prints each output's shape, `name: D0xD1...`, as it writes it.
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

#ifdef ONNXC_SYMBOLIC
/* "path@2x3x4": the path cut at '@' and the shape parsed; 0 when malformed */
static int parse_shaped(char *arg, int rank, int64_t *shape, int64_t itemsize, int64_t *bytes) {
    char *at = strrchr(arg, '@');
    if (at == NULL) return 0;
    *at = 0;
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
    return 1;
}
#endif

int main(int argc, char **argv) {
    int64_t n_in = MODEL(_NUM_INPUTS), n_out = MODEL(_NUM_OUTPUTS);
    if (argc != 1 + n_in + n_out) {
        fprintf(stderr, "usage: %s", argv[0]);
        for (int64_t i = 0; i < n_in; i++) fprintf(stderr, " %s", MODEL(_input_names)[i]);
        for (int64_t i = 0; i < n_out; i++) fprintf(stderr, " %s", MODEL(_output_names)[i]);
        fprintf(stderr, "\n  (raw little-endian C-order files: inputs read, outputs written;"
                        " - for an input with a default)\n");
        return 2;
    }
    void *inputs[MODEL(_NUM_INPUTS) + 1];
    void *outputs[MODEL(_NUM_OUTPUTS) + 1];
#ifdef ONNXC_SYMBOLIC
    int64_t in_dims[MODEL(_NUM_INPUTS) + 1][8], out_dims[MODEL(_NUM_OUTPUTS) + 1][8];
    const int64_t *in_shapes[MODEL(_NUM_INPUTS) + 1];
    int64_t *out_shapes[MODEL(_NUM_OUTPUTS) + 1];
    for (int64_t i = 0; i < n_in; i++) {
        int64_t bytes;
        if (MODEL(_input_ranks)[i] > 8 ||
            !parse_shaped(argv[1 + i], MODEL(_input_ranks)[i], in_dims[i],
                          MODEL(_input_itemsize)[i], &bytes)) {
            fprintf(stderr, "%s: give the input as FILE@D0x...x%s (rank %d)\n", argv[1 + i],
                    "Dn", MODEL(_input_ranks)[i]);
            return 2;
        }
        in_shapes[i] = in_dims[i];
        inputs[i] = read_file(argv[1 + i], bytes);
        if (inputs[i] == NULL) return 2;
    }
    for (int64_t i = 0; i < n_out; i++) {
        if (MODEL(_output_ranks)[i] > 8) return 2;
        out_shapes[i] = out_dims[i];
    }
    int32_t room = MODEL(_output_shapes)(in_shapes, out_shapes);
    if (room != 0) {
        fprintf(stderr, "error: %s\n", MODEL(_error)(room));
        return 3;
    }
    for (int64_t i = 0; i < n_out; i++) {
        int64_t bytes = MODEL(_output_itemsize)[i];
        for (int k = 0; k < MODEL(_output_ranks)[i]; k++) bytes *= out_dims[i][k];
        outputs[i] = malloc(bytes ? (size_t)bytes : 1);
        if (outputs[i] == NULL) return 2;
    }
    int32_t status = MODEL(_run_shaped)((const void *const *)inputs, in_shapes, outputs,
                                        out_shapes);
    if (status != 0) {
        fprintf(stderr, "error: %s\n", MODEL(_error)(status));
        return 3;
    }
    for (int64_t i = 0; i < n_out; i++) {
        int64_t bytes = MODEL(_output_itemsize)[i];
        printf("%s: ", MODEL(_output_names)[i]);
        for (int k = 0; k < MODEL(_output_ranks)[i]; k++) {
            bytes *= out_dims[i][k];
            printf(k ? "x%lld" : "%lld", (long long)out_dims[i][k]);
        }
        printf("\n");
        const char *path = argv[1 + n_in + i];
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(outputs[i], 1, (size_t)bytes, f) != (size_t)bytes) {
            perror(path);
            return 2;
        }
        fclose(f);
    }
    return 0;
#else
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
    for (int64_t i = 0; i < n_out; i++) {
        const char *path = argv[1 + n_in + i];
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(outputs[i], 1, (size_t)MODEL(_output_bytes)[i], f)
                             != (size_t)MODEL(_output_bytes)[i]) {
            perror(path);
            return 2;
        }
        fclose(f);
    }
    return 0;
#endif
}
