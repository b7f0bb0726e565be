"""The shaped C API of ahead-of-time artifacts (runtime/c/onnxc_model.c) as a C program
uses it: `_run_tensors` from outputs not allocated yet (-6, then the shapes to allocate),
`_output_shapes` then `_run_shaped`, against onnxruntime at three shapes per model; every
wrong argument a typed status with a message (wrong rank, a fixed dimension, a symbol two
inputs disagree on, negative and huge dimensions, short buffers, misaligned pointers,
`_run` of a symbolic model); the room of a size the data decides kept once grown; threads
growing it at once; and the generated sizes agreeing with the Python runtime's on random
shapes. The models: tests/unit/test_symbolic_artifacts.py."""

from __future__ import annotations

import subprocess
import textwrap

import numpy as np
import pytest

import onnxc
from onnxc.runtime import artifact
from onnxc.target import host_target
from tests.unit.test_symbolic_artifacts import CASES, MODELS, _reference, _same

HARNESS = r"""
/* run P's model on the inputs a case file lists ("path rank d0 d1 ..." per input), through
 * P_run_tensors from outputs not allocated yet, writing each output to its path */
#include <stdio.h>
#include <stdlib.h>
#include HEADER
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define M(x) CAT(P, x)

static int64_t nbytes(const int64_t *shape, int64_t rank, int64_t itemsize) {
    for (int64_t k = 0; k < rank; k++) itemsize *= shape[k];
    return itemsize;
}

int main(int argc, char **argv) {
    M(_tensor) in[M(_NUM_INPUTS) + 1], out[M(_NUM_OUTPUTS) + 1];
    int64_t in_dims[M(_NUM_INPUTS) + 1][8], out_dims[M(_NUM_OUTPUTS) + 1][8];
    FILE *cases = fopen(argv[1], "r");
    for (int i = 0; i < M(_NUM_INPUTS); i++) {
        char path[4096];
        long long rank, d;
        if (fscanf(cases, "%4095s %lld", path, &rank) != 2) return 10;
        in[i].rank = rank;
        in[i].shape = in_dims[i];
        for (int k = 0; k < rank; k++) {
            if (fscanf(cases, "%lld", &d) != 1) return 11;
            in_dims[i][k] = d;
        }
        in[i].bytes = nbytes(in_dims[i], rank, M(_input_itemsize)[i]);
        in[i].data = malloc(in[i].bytes + 1);
        FILE *f = fopen(path, "rb");
        if (fread(in[i].data, 1, in[i].bytes, f) != (size_t)in[i].bytes) return 12;
        fclose(f);
    }
    for (int o = 0; o < M(_NUM_OUTPUTS); o++)
        out[o] = (M(_tensor)){NULL, 0, M(_output_ranks)[o], out_dims[o]};
    int32_t status;
    while ((status = M(_run_tensors)(in, M(_NUM_INPUTS), out, M(_NUM_OUTPUTS))) ==
           M(_ERR_OUTPUT_TOO_SMALL)) {
        printf("short: %s\n", M(_error)(status));
        for (int o = 0; o < M(_NUM_OUTPUTS); o++) {
            free(out[o].data);
            out[o].bytes = nbytes(out_dims[o], out[o].rank, M(_output_itemsize)[o]);
            out[o].data = malloc(out[o].bytes ? out[o].bytes : 1);
        }
    }
    if (status != 0) {
        printf("error %d: %s\n", status, M(_error)(status));
        return 3;
    }
    for (int o = 0; o < M(_NUM_OUTPUTS); o++) {
        printf("%s:", M(_output_names)[o]);
        for (int k = 0; k < out[o].rank; k++) printf(" %lld", (long long)out_dims[o][k]);
        printf("\n");
        FILE *f = fopen(argv[2 + o], "wb");
        fwrite(out[o].data, 1, nbytes(out_dims[o], out[o].rank, M(_output_itemsize)[o]), f);
        fclose(f);
    }
    return 0;
}
"""

ERRORS = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "mm/mm.h"
#include "conv/conv.h"
#include "shapes/shapes.h"

#define SHOW(what, status, error) printf("%s %d %s\n", what, (int)(status), error(status))

static float x[2 * 5 * 8 + 1], m[2 * 5 * 6], y[2 * 5 * 6], img[3 * 8 * 8], z[64 * 64];
static int64_t xs[3] = {2, 5, 8}, ms[3] = {2, 5, 6}, ys[3];

static int32_t mm(int64_t a0, int64_t a1, int64_t a2, int64_t b1) {
    int64_t xx[3] = {a0, a1, a2}, mm_[3] = {2, b1, 6}, out[3] = {2, 5, 6};
    const int64_t *in_shapes[] = {xx, mm_};
    int64_t *out_shapes[] = {out};
    const void *in[] = {x, m};
    void *outs[] = {y};
    return mm_run_shaped(in, in_shapes, outs, out_shapes);
}

/* run the shapes model for z = ConstantOfShape(s) as a caller would: allocate what
 * _output_shapes says, run, allocate again while a buffer is short */
static int call_shapes(int64_t s0, int64_t s1, int64_t *zshape) {
    float xv[3] = {0, 1, 2}, *zb = NULL, *yb = NULL;
    int64_t s[2] = {s0, s1}, s2[2] = {3, 1}, xsh[2] = {3, 1}, one[1] = {2}, yshape[2];
    const int64_t *in_shapes[] = {xsh, one, one};
    int64_t *out_shapes[] = {zshape, yshape};
    const void *in[] = {xv, s, s2};
    int32_t status = shapes_output_shapes(in_shapes, out_shapes);
    for (int tries = 0; (status == 0 || status == shapes_ERR_OUTPUT_TOO_SMALL) && tries < 8;
         tries++) {
        free(zb);
        free(yb);
        zb = malloc(4 * (zshape[0] * zshape[1] + 1));
        yb = malloc(4 * (yshape[0] * yshape[1] + 1));
        void *outs[] = {zb, yb};
        status = shapes_run_shaped(in, in_shapes, outs, out_shapes);
        if (status == 0) break;
    }
    int bad = status != 0 || zshape[0] != s0 || zshape[1] != s1;
    for (int64_t i = 0; !bad && i < s0 * s1; i++) bad = zb[i] != 2.5f;
    free(zb);
    free(yb);
    return bad;
}

static void *threaded(void *arg) {
    intptr_t t = (intptr_t)arg, failures = 0;
    for (int i = 0; i < 30; i++) {
        int64_t zshape[2];
        failures += call_shapes(1 + (t * 13 + i * 7) % 90, 1 + i % 5, zshape);
    }
    return (void *)failures;
}

int main(void) {
    SHOW("run", mm_run((const void *const[]){x, m}, (void *const[]){y}), mm_error);
    SHOW("seq", mm(2, 5, 8, 4), mm_error);
    SHOW("fixed", mm(2, 5, 7, 5), mm_error);
    SHOW("negative", mm(-1, 5, 8, 5), mm_error);
    SHOW("overflow", mm(2, INT64_C(1) << 61, 8, INT64_C(1) << 61), mm_error);
    SHOW("huge", mm(2, INT64_C(1) << 38, 8, INT64_C(1) << 38), mm_error);
    {
        const int64_t *in_shapes[] = {xs, NULL};
        int64_t *out_shapes[] = {ys};
        SHOW("null-shape", mm_output_shapes(in_shapes, out_shapes), mm_error);
    }
    {
        const int64_t *in_shapes[] = {xs, ms};
        int64_t small[3] = {2, 5, 5};
        int64_t *out_shapes[] = {small};
        int32_t status = mm_run_shaped((const void *const[]){x, m}, in_shapes,
                                       (void *const[]){y}, out_shapes);
        SHOW("short", status, mm_error);
        printf("needs %lld %lld %lld\n", (long long)small[0], (long long)small[1],
               (long long)small[2]);
        SHOW("misaligned", mm_run_shaped((const void *const[]){(char *)x + 1, m}, in_shapes,
                                         (void *const[]){y}, out_shapes), mm_error);
    }
    {
        int64_t out_shape[3];
        mm_tensor in[2] = {{x, sizeof x, 2, xs}, {m, sizeof m, 3, ms}};
        mm_tensor out[1] = {{y, sizeof y, 3, out_shape}};
        SHOW("rank", mm_run_tensors(in, 2, out, 1), mm_error);
        in[0].rank = 3;
        in[1].bytes = 16;
        SHOW("bytes", mm_run_tensors(in, 2, out, 1), mm_error);
        in[1].bytes = sizeof m;
        SHOW("count", mm_run_tensors(in, 1, out, 1), mm_error);
        SHOW("tensors", mm_run_tensors(in, 2, out, 1), mm_error);
        printf("shape %lld %lld %lld\n", (long long)out_shape[0], (long long)out_shape[1],
               (long long)out_shape[2]);
    }
    {
        int64_t bad[4] = {1, 3, 0, 8}, out_shape[4] = {1, 4, 1, 4};
        const int64_t *in_shapes[] = {bad};
        int64_t *out_shapes[] = {out_shape};
        SHOW("guard", conv_run_shaped((const void *const[]){img}, in_shapes,
                                      (void *const[]){z}, out_shapes), conv_error);
    }
    {
        float xv[3] = {0, 1, 2}, yb[3 * 64];
        int64_t s[2] = {INT64_C(1) << 62, INT64_C(1) << 62}, s2[2] = {2, 4};
        int64_t xsh[2] = {3, 1}, one[1] = {2}, zshape[2] = {64, 64}, yshape[2] = {3, 64};
        const int64_t *in_shapes[] = {xsh, one, one};
        int64_t *out_shapes[] = {zshape, yshape};
        SHOW("data-huge", shapes_run_shaped((const void *const[]){xv, s, s2}, in_shapes,
                                            (void *const[]){z, yb}, out_shapes), shapes_error);
        s[0] = 2, s[1] = 3;
        SHOW("data-guard", shapes_run_shaped((const void *const[]){xv, s, s2}, in_shapes,
                                             (void *const[]){z, yb}, out_shapes), shapes_error);
        s[0] = -2;
        SHOW("data-negative", shapes_run_shaped((const void *const[]){xv, s, s2}, in_shapes,
                                                (void *const[]){z, yb}, out_shapes),
             shapes_error);
        SHOW("query", shapes_output_shapes(in_shapes, out_shapes), shapes_error);
        printf("room %lld %lld\n", (long long)zshape[0], (long long)zshape[1]);
        if (call_shapes(40, 5, zshape)) return 20;
        SHOW("query-grown", shapes_output_shapes(in_shapes, out_shapes), shapes_error);
        printf("room %lld %lld\n", (long long)zshape[0], (long long)zshape[1]);
    }
    pthread_t threads[4];
    intptr_t failures = 0;
    for (intptr_t t = 0; t < 4; t++) pthread_create(&threads[t], NULL, threaded, (void *)t);
    for (int t = 0; t < 4; t++) {
        void *result;
        pthread_join(threads[t], &result);
        failures += (intptr_t)result;
    }
    printf("threads %ld\n", (long)failures);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("symbolic-artifacts-c")
    for name, make in MODELS.items():
        onnxc.compile_artifact(make(), root / name, prefix=name, quiet=True)
    return root


def _cc(*args: str) -> None:
    subprocess.run([artifact.c_compiler(host_target()), "-O1", "-std=gnu11", "-Wall",
                    "-Werror", *args], check=True)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_run_tensors_from_outputs_not_allocated_yet(built, name, tmp_path):
    program = tmp_path / "harness"
    (tmp_path / "harness.c").write_text(HARNESS)
    _cc(f"-DP={name}", f'-DHEADER="{name}.h"', "-I", str(built / name), "-Wno-unused-result",
        "-o", str(program), str(tmp_path / "harness.c"), str(built / name / f"{name}.so"),
        f"-Wl,-rpath,{built / name}")
    model = MODELS[name]()
    for case, feeds in enumerate(CASES[name](np.random.default_rng(2))):
        lines = []
        for i, (key, array) in enumerate(feeds.items()):
            array.tofile(tmp_path / f"in{i}.bin")
            lines.append(" ".join(map(str, [tmp_path / f"in{i}.bin", array.ndim,
                                            *array.shape])))
        (tmp_path / "case.txt").write_text("\n".join(lines) + "\n")
        want = _reference(model, feeds)
        outs = [str(tmp_path / f"out{o}.bin") for o in range(len(want))]
        result = subprocess.run([str(program), str(tmp_path / "case.txt"), *outs],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, (result.stdout, result.stderr)
        lines = result.stdout.splitlines()
        assert lines[0].startswith("short: output ") and "bytes, its buffer has 0" in lines[0] \
            or all(w.size == 0 for w in want), lines  # nothing allocated: -6 first
        shapes = [[int(d) for d in line.split(":")[1].split()] for line in lines[-len(want):]]
        _same([np.fromfile(path, w.dtype).reshape(shape)
               for path, shape, w in zip(outs, shapes, want)], want)


def test_every_wrong_argument_is_a_typed_status_with_a_message(built, tmp_path):
    (tmp_path / "errors.c").write_text(textwrap.dedent(ERRORS))
    _cc("-I", str(built), "-o", str(tmp_path / "errors"), str(tmp_path / "errors.c"),
        *(str(built / n / f"{n}.so") for n in ("mm", "conv", "shapes")), "-lpthread",
        f"-Wl,-rpath,{built / 'mm'}:{built / 'conv'}:{built / 'shapes'}")
    result = subprocess.run([str(tmp_path / "errors")], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    out = {line.split(" ", 1)[0]: line.split(" ", 1)[1]
           for line in result.stdout.splitlines()}
    assert out["run"].startswith("-4 the model has symbolic dimensions")
    assert out["seq"] == ("-3 input 'm' dimension 1 ('seq') is 4, but another input gives "
                          "'seq' = 5")
    assert out["fixed"] == "-3 input 'x' dimension 2 is 7, expected 8 (the model fixes it)"
    assert out["negative"] == "-3 input 'x' dimension 0 is -1: a dimension is at least 0"
    assert out["overflow"] == "-3 input 'x': its shape is past 2^63 bytes"
    assert out["huge"].startswith("-5 an output of these shapes would be too large") or \
        out["huge"].startswith("-5 the intermediate tensors")
    assert out["null-shape"] == "-7 input 'm' has no shape (input_shapes[1] is NULL)"
    assert out["short"].startswith("-6 output 'y' needs 240 bytes, its buffer has 200")
    assert out["needs"] == "2 5 6"
    assert out["misaligned"] == "-7 input 'x' is not aligned to 4 bytes"
    assert out["rank"] == "-3 input 'x' has rank 2, the model takes rank 3"
    assert out["bytes"] == "-7 input 'm' has 16 bytes, its shape needs 240"
    assert out["count"].startswith("-7 the model takes 2 input(s) and 1 output(s), got 1")
    assert out["tensors"] == "0 ok" and out["shape"] == "2 5 6"
    status, message = out["guard"].split(" ", 1)
    assert int(status) > 0 and "the input sizes break a condition of the model" in message
    assert out["data-huge"].startswith("-5 size 'ConstantOfShape_0_shape0' came out "
                                       "4611686018427387904")
    status, message = out["data-guard"].split(" ", 1)
    assert int(status) > 0 and message.startswith("node 'expand' (Expand): the input sizes")
    status, message = out["data-negative"].split(" ", 1)
    assert int(status) > 0 and "value -2 at position 0" in message
    rooms = [line for line in result.stdout.splitlines() if line.startswith("room ")]
    assert rooms[0] == "room 16 16"  # the first room of a size without a bound
    assert int(rooms[1].split()[1]) >= 40  # grown by a run that needed 40, and kept
    assert out["threads"] == "0"


def test_the_generated_sizes_agree_with_the_python_runtime(built):
    """`conv_output_shapes` (generated C) against SymbolicSignature (Python) on random
    shapes, refused ones included: the same bindings, checks and floor divisions."""
    import ctypes

    from onnxc.errors import InvalidInputError

    library = ctypes.CDLL(str(built / "conv" / "conv.so"))
    library.conv_error.restype = ctypes.c_char_p
    loaded = onnxc.load(built / "conv")
    signature, (spec,), (out,) = loaded.symbolic, loaded.inputs, loaded.outputs
    rng = np.random.default_rng(7)
    row = ctypes.c_int64 * 4
    for _ in range(60):
        shape = [int(rng.integers(0, 4)), int(rng.choice([3, 3, 3, 2])),
                 *map(int, rng.integers(-1, 40, 2))]
        given, room = row(*shape), row()
        status = library.conv_output_shapes((ctypes.POINTER(ctypes.c_int64) * 1)(given),
                                            (ctypes.POINTER(ctypes.c_int64) * 1)(room))
        if min(shape) < 0:  # numpy has no such array: the C API refuses it alone
            assert status == -3, shape
            continue
        try:
            values = signature.bind([spec], [np.broadcast_to(np.float32(0), shape)])
        except InvalidInputError:
            assert status == -3, shape
            continue
        assert status == 0, (shape, library.conv_error(status))
        assert list(room) == list(signature.shape(out, values)), shape
