"""String tensors (docs/strings.md): STRING graph inputs and outputs, the ops that move
string elements, Equal of strings, and the checks at the boundary of a run; one-node models
compiled by onnxc.compile against onnxruntime (Gather against onnx.reference: onnxruntime
1.32 returns "" for every element past the first of a gathered string row).

Strings are compared exactly: every op here moves or compares bytes, nothing rounds.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnxc
from onnxc.errors import InvalidArgumentError, InvalidInputError, UnsupportedOpError
from tests.models.cache_passes import output_digest
from tests.single_op import reference_run, run_both, single_op_model

S = onnx.TensorProto.STRING
RNG = np.random.default_rng(7)
WORDS = np.array(["a", "héllo", "", "dé", "xyz", "日本", "foo bar", "Z", "xyw", "🙂x"],
                 dtype=object)


def _strings(*shape) -> np.ndarray:
    return RNG.choice(WORDS, size=shape)


def _spec(value: np.ndarray):
    return (S if value.dtype == object else value.dtype, list(value.shape))


def _model(op_type: str, inputs: dict, *, outputs=("y",), initializers=None, attrs=None,
           opset: int = 18):
    return single_op_model(op_type, {k: _spec(v) for k, v in inputs.items()}, list(outputs),
                           initializers=initializers, attrs=attrs, opset=opset, ir_version=9)


MOVES = [
    ("Identity", {"x": _strings(2, 3)}, None, None),
    ("Reshape", {"x": _strings(2, 3)}, {"s": np.array([3, 2], np.int64)}, None),
    ("Transpose", {"x": _strings(2, 3, 4)}, None, {"perm": [2, 0, 1]}),
    ("Concat", {"x": _strings(2, 3), "z": _strings(2, 2)}, None, {"axis": 1}),
    ("Slice", {"x": _strings(5, 4)},
     {"st": np.array([1, 0], np.int64), "en": np.array([4, 3], np.int64)}, None),
    ("Squeeze", {"x": _strings(1, 3, 1)}, {"ax": np.array([0, 2], np.int64)}, None),
    ("Unsqueeze", {"x": _strings(3)}, {"ax": np.array([0, 2], np.int64)}, None),
    ("Flatten", {"x": _strings(2, 3, 2)}, None, {"axis": 2}),
    ("Expand", {"x": _strings(3, 1)}, {"s": np.array([2, 3, 4], np.int64)}, None),
    ("Where", {"c": RNG.random((2, 3)) > 0.5, "x": _strings(2, 3), "z": _strings(1, 3)},
     None, None),
    ("Tile", {"x": _strings(2, 3)}, {"r": np.array([2, 1], np.int64)}, None),
    ("GatherElements", {"x": _strings(3, 3), "i": np.array([[0, 2, 1], [1, 1, 0]])}, None,
     {"axis": 0}),
    ("GatherND", {"x": _strings(3, 3), "i": np.array([[0, 2], [1, 1]])}, None, None),
    ("Compress", {"x": _strings(4, 3)}, {"c": np.array([True, False, True, True])},
     {"axis": 0}),
    ("ReverseSequence", {"x": _strings(4, 3), "l": np.array([1, 2, 3])}, None,
     {"batch_axis": 1, "time_axis": 0}),
    ("Shape", {"x": _strings(4, 3)}, None, None),
    ("Size", {"x": _strings(4, 3)}, None, None),
]


@pytest.mark.parametrize("op_type,inputs,initializers,attrs", MOVES,
                         ids=[m[0] for m in MOVES])
def test_moves_strings(op_type, inputs, initializers, attrs):
    run_both(_model(op_type, inputs, initializers=initializers, attrs=attrs), inputs,
             exact=True)


def test_split_strings():
    x = _strings(4, 3)
    run_both(_model("Split", {"x": x}, outputs=("a", "b"), attrs={"axis": 0,
                                                                 "num_outputs": 2}),
             {"x": x}, exact=True)


def test_gather_strings():
    """Run-time indices, negative ones too; against onnx.reference and numpy (see the
    module docstring for onnxruntime's answer)."""
    x = np.array([[f"r{r}c{c}é" for c in range(3)] for r in range(5)], dtype=object)
    i = np.array([[4, 0], [-1, 2]], np.int64)
    model = _model("Gather", {"x": x, "i": i}, attrs={"axis": 0})
    (got,) = onnxc.compile(model).run(None, {"x": x, "i": i})
    np.testing.assert_array_equal(got, x[i])
    run_both(model, {"x": x, "i": i}, exact=True, reference="onnx")


def test_equal_strings():
    """Same length but other bytes, a prefix, the empty string, broadcasting."""
    a = np.array([["abc", "abd", "ab", ""], ["日本", "日本", "x", "xyz"]], dtype=object)
    b = np.array([["abc", "abc", "abc", ""]], dtype=object)
    got, _ = run_both(_model("Equal", {"x": a, "z": b}, opset=19), {"x": a, "z": b},
                      exact=True)
    assert got[0].tolist() == [[True, False, False, True], [False, False, False, False]]


def test_symbolic_strings():
    """One compile, several lengths: Concat of a symbolic-length string input with itself."""
    model = single_op_model("Concat", {"x": (S, ["n"]), "z": (S, ["n"])}, ["y"],
                            attrs={"axis": 0}, opset=18, ir_version=9)
    compiled = onnxc.compile(model)
    for n in (1, 4, 9):
        x, z = _strings(n), _strings(n)
        (got,) = compiled.run(None, {"x": x, "z": z})
        np.testing.assert_array_equal(got, np.concatenate([x, z]))


def test_string_input_forms():
    """numpy str arrays, bytes arrays and object arrays of bytes are taken; what comes back
    is an object array of str."""
    model = _model("Identity", {"x": _strings(3)})
    compiled = onnxc.compile(model)
    text = ["é", "", "a b"]
    for value in (np.array(text), np.array([t.encode() for t in text]),
                  np.array([t.encode() for t in text], dtype=object)):
        (got,) = compiled.run(None, {"x": value})
        assert got.dtype == object and got.tolist() == text
    assert "string" in str(compiled.inputs[0])


def test_string_inputs_are_checked():
    compiled = onnxc.compile(_model("Identity", {"x": _strings(2)}))
    with pytest.raises(InvalidInputError, match=r"input 'x' element 1 is not valid UTF-8"):
        compiled.run(None, {"x": np.array([b"ok", b"\xff\xfe"], dtype=object)})
    with pytest.raises(InvalidInputError, match=r"input 'x' element 0 is not valid Unicode"):
        compiled.run(None, {"x": np.array(["\ud800", "a"], dtype=object)})
    with pytest.raises(InvalidInputError, match=r"input 'x' element 1 is a int"):
        compiled.run(None, {"x": np.array(["a", 3], dtype=object)})
    with pytest.raises(InvalidInputError, match=r"input 'x' is a string tensor"):
        compiled.run(None, {"x": np.zeros(2, np.float32)})
    with pytest.raises(InvalidInputError, match=r"input 'x' has shape"):
        compiled.run(None, {"x": _strings(3)})


def test_strings_refused_where_not_taken(tmp_path):
    x = _strings(1, 4, 2, 2)
    with pytest.raises(UnsupportedOpError, match="DepthToSpace of STRING tensors"):
        onnxc.compile(_model("DepthToSpace", {"x": x}, attrs={"blocksize": 2}))
    with pytest.raises(InvalidArgumentError, match="model input 'x' is a string tensor"):
        onnxc.compile_artifact(_model("Identity", {"x": x}), tmp_path / "a")
    with pytest.raises(InvalidArgumentError, match="string outputs"):
        onnxc.compile(_model("Identity", {"x": x})).run(None, {"x": x},
                                                       out=[np.empty(x.shape, object)])


def test_strings_cold_and_warm(tmp_path):
    """A cache hit runs string inputs and outputs as the fresh compile does."""
    x = _strings(3, 4)
    model = _model("Transpose", {"x": x}, attrs={"perm": [1, 0]})
    (expected,) = reference_run(model, {"x": x})
    digests = []
    for warm in (False, True):
        compiled = onnxc.compile(model, cache_dir=tmp_path)
        assert compiled.from_cache == warm
        (got,) = compiled.run(None, {"x": x})
        np.testing.assert_array_equal(got, expected)
        digests.append(output_digest([got.astype(str)]))
    assert digests[0] == digests[1]


def _vocabulary_model():
    """A string initializer gathered by run-time ids, compared with a Constant's strings."""
    from onnx import helper, numpy_helper

    vocab = numpy_helper.from_array(np.array(["<unk>", "héllo", "", "日本", "a"],
                                             dtype=object), "vocab")
    nodes = [
        helper.make_node("Gather", ["vocab", "ids"], ["words"], axis=0),
        helper.make_node("Constant", [], ["probe"], value_strings=["héllo", "a"]),
        helper.make_node("Equal", ["words", "probe"], ["hit"]),
        helper.make_node("Concat", ["words", "probe"], ["joined"], axis=0),
    ]
    graph = helper.make_graph(
        nodes, "vocabulary", [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("words", S, [2]),
         helper.make_tensor_value_info("hit", onnx.TensorProto.BOOL, [2]),
         helper.make_tensor_value_info("joined", S, [4])], initializer=[vocab])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def test_string_constants():
    """STRING initializers and Constant(value_strings): their pairs point into the model's
    constants, which outlive the run."""
    model = _vocabulary_model()
    compiled = onnxc.compile(model)
    for ids in (np.array([1, 4]), np.array([2, 3]), np.array([-1, 0])):
        got = compiled.run(None, {"ids": ids})
        expected = reference_run(model, {"ids": ids})
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_string_constants_export():
    """`graph.strings` is written back as a STRING initializer (onnxc optimize)."""
    from onnxc.frontend.onnx_export import export_onnx
    from onnxc.frontend.onnx_importer import import_onnx

    exported = export_onnx(import_onnx(_vocabulary_model()))
    ids = np.array([3, 1])
    got = reference_run(exported, {"ids": ids})
    expected = reference_run(_vocabulary_model(), {"ids": ids})
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


REGEX_TEXTS = np.array([["abc@x.com", "héllo@日本.com", "nope", ""],
                        ["a@b.c", "@.com", "x@y.comm", "Z@Q.COM"],
                        ["a1_", "12", " \t", "日本"], ["ΣΟΦΊΑ", "σοφία", "МОСКВА", "x"]],
                       dtype=object)


@pytest.mark.parametrize("pattern", [
    r".*@.*\.com", r"(?i)[a-z]+@[a-z]+\.com", r"\w*", r"[^@]+@[^@]+", r"\d{1,2}|\s+",
    r"(ab|a)(c|bc)?", r"[日-本]+", r"^.+$", r"(?s).*", r"a{0}", r"[^\x00-\x7f]+",
    r"\w+@\w+\.\bcom\b", r"a\Bbc|\b\d", r"[[:alpha:]]+[[:digit:]]?", r"[^[:space:]@]+@.*",
    r"[]a-c]+", r"(?i)σοφία|москва",
])
def test_regex_full_match(pattern):
    """onnxruntime (RE2) against the compiled DFA, on ASCII, Latin-1 and CJK text."""
    model = _model("RegexFullMatch", {"x": REGEX_TEXTS}, attrs={"pattern": pattern},
                   opset=20)
    got, _ = run_both(model, {"x": REGEX_TEXTS}, exact=True)
    assert got[0].dtype == np.bool_


def test_regex_full_match_symbolic_sizes():
    model = single_op_model("RegexFullMatch", {"x": (S, ["n"])}, ["y"],
                            attrs={"pattern": "[a-z]+"}, opset=20, ir_version=9)
    compiled = onnxc.compile(model)
    for n in (0, 1, 5):
        x = _strings(n)
        (got,) = compiled.run(None, {"x": x})
        assert got.tolist() == [bool(s) and s.isascii() and s.isalpha() and s.islower()
                                for s in x]


@pytest.mark.parametrize("pattern,construct", [
    (r"(a)\1", "a backreference"), (r"a(?=b)", "a lookahead"),
    (r"a.\bb", "a word boundary its neighbours do not decide"),
    (r"a^b", "anchor"), (r"(?m)a", "a flag other than i and s"), (r"\pL", "cannot parse"),
    (r"[[:^alpha:]]", r"the class \[:\^alpha:\]"), (r"a{,3}", "RE2 reads it as text"),
])
def test_regex_refused(pattern, construct):
    model = _model("RegexFullMatch", {"x": _strings(2)}, attrs={"pattern": pattern},
                   opset=20)
    with pytest.raises(UnsupportedOpError, match=construct):
        onnxc.compile(model)


LABELS = np.array([["a", "héllo", "zz"], ["", "b", "a"]], dtype=object)


@pytest.mark.parametrize("x,attrs,ml_opset,out_type", [
    (LABELS, {"keys_strings": ["a", "b", "héllo"], "values_int64s": [1, 2, 3]}, 2,
     onnx.TensorProto.INT64),
    (LABELS, {"keys_strings": ["a", "b", "héllo"], "values_floats": [1.5, 2, 3],
              "default_float": 7.0}, 2, onnx.TensorProto.FLOAT),
    (LABELS, {"keys_strings": ["a", "b", "héllo"], "values_strings": ["x", "日本", ""],
              "default_string": "?"}, 2, S),
    (np.array([[1, 5], [3, -2]], np.int64),
     {"keys_int64s": [1, 3, 5], "values_strings": ["one", "three", "five"]}, 2, S),
    (LABELS, {"classes_strings": ["a", "b", "héllo"]}, 1, onnx.TensorProto.INT64),
    (np.array([0, 2, 7], np.int64), {"classes_strings": ["a", "b", "héllo"],
                                     "default_string": "n/a"}, 1, S),
    (LABELS, {"keys_tensor": onnx.helper.make_tensor("k", S, [2], [b"a", b"b"]),
              "values_tensor": onnx.helper.make_tensor("v", onnx.TensorProto.INT16, [2],
                                                       [4, 5]),
              "default_tensor": onnx.helper.make_tensor("d", onnx.TensorProto.INT16, [1],
                                                        [-9])}, 4, onnx.TensorProto.INT16),
], ids=["str-int", "str-float", "str-str", "int-str", "v1-str-int", "v1-int-str",
        "tensors"])
def test_label_encoder_strings(x, attrs, ml_opset, out_type):
    """ai.onnx.ml LabelEncoder with string keys or values (opset 1's classes_strings, 2's
    attribute lists, 4's tensors): Equal of strings against every key, the values picked
    by a Gather of a string constant."""
    model = single_op_model("LabelEncoder", {"x": _spec(x)}, {"y": (out_type, list(x.shape))},
                            attrs=attrs, opset={"": 18, "ai.onnx.ml": ml_opset},
                            domain="ai.onnx.ml", ir_version=9)
    run_both(model, {"x": x}, exact=True)


SPLIT_CASES = [
    (np.array([["a,b,,c", "", "héllo,日本"], [",", "x", "a,b"]], dtype=object),
     {"delimiter": ","}),
    (np.array(["a,b,,c", "", ","], dtype=object), {"delimiter": ",", "maxsplit": 1}),
    (np.array(["a,,b,,,c", "日本,,x"], dtype=object), {"delimiter": ",,"}),
    (np.array(["  a b  c ", " ", "x\ty\nz", "a\u00a0b", "a b ", " a  b  "], dtype=object), {}),
    (np.array(["  a b  c ", "a ", " a  b  c  "], dtype=object), {"maxsplit": 1}),
    (np.array(["  a b  c ", "a "], dtype=object), {"maxsplit": 0}),
    (np.array([], dtype=object).reshape(0, 2), {"delimiter": ","}),
    (np.array([",".join(map(str, range(150))), "a"], dtype=object), {"delimiter": ","}),
]


@pytest.mark.parametrize("x,attrs", SPLIT_CASES,
                         ids=["comma", "maxsplit", "two-byte", "spaces", "spaces-maxsplit",
                              "maxsplit-0", "empty-tensor", "150-pieces"])
def test_string_split(x, attrs):
    """onnxruntime's StringSplit (where onnx's reference differs: "" has no pieces, only
    spaces separate without a delimiter, the remainder after maxsplit trimmed); the pieces'
    last dimension is a size the run defines (150 pieces: past the first capacity, the run
    is repeated with room)."""
    model = _model("StringSplit", {"x": x}, outputs=("y", "z"), attrs=attrs, opset=20)
    run_both(model, {"x": x}, exact=True)


def test_string_split_symbolic_and_evaluator():
    """One compile for any number of strings; the numpy evaluator agrees with the kernel."""
    from onnxc.frontend.onnx_importer import import_onnx
    from onnxc.passes.evaluator import evaluate

    model = single_op_model("StringSplit", {"x": (S, ["n"])}, ["y", "z"],
                            attrs={"delimiter": "-"}, opset=20, ir_version=9)
    compiled = onnxc.compile(model)
    for x in (np.array(["a-b", "c"], dtype=object), np.array(["-", "x-y-z", "", "q"],
                                                              dtype=object)):
        got = compiled.run(None, {"x": x})
        for g, e in zip(got, evaluate(import_onnx(model), {"x": x})):
            np.testing.assert_array_equal(g, e)
        for g, e in zip(got, reference_run(model, {"x": x})):
            np.testing.assert_array_equal(g, e)


DAYS = np.array(["monday", "tuesday", "wednesday", "Monday", "MONDAY", "É", "é", ""],
                dtype=object)


@pytest.mark.parametrize("x,attrs", [
    (DAYS, {"stopwords": ["monday"], "is_case_sensitive": 1}),
    (DAYS, {"stopwords": ["monday", "é", ""]}),
    (DAYS, {}),
    (DAYS.reshape(1, -1), {"stopwords": ["monday", "tuesday"]}),
    (np.array(["monday"], dtype=object), {"stopwords": ["monday"]}),
    (np.array([["a", "b"]], dtype=object), {"stopwords": ["a", "b"]}),
], ids=["case-sensitive", "case-insensitive", "no-stopwords", "1xC", "empty-output",
        "empty-output-1xC"])
def test_string_normalizer(x, attrs):
    """StringNormalizer without a case change against onnxruntime (its locale C.UTF-8: the
    machine has no en_US one); case-insensitive stopwords fold the simple case pairs, É and
    é too; nothing left gives one "" ([1] or [1, 1])."""
    model = _model("StringNormalizer", {"x": x}, attrs={**attrs, "locale": "C.UTF-8"},
                   opset=10)
    run_both(model, {"x": x}, exact=True)


@pytest.mark.parametrize("action", ["LOWER", "UPPER"])
@pytest.mark.parametrize("stopwords", [[], ["monday"]])
def test_string_normalizer_case_change(action, stopwords):
    """A case change writes new bytes (graph.string_case, into a hidden output of the run):
    ASCII, Latin-1 and Latin Extended letters, ß and ÿ/Ÿ, İ -> i (one byte fewer), Greek,
    Cyrillic, Armenian, CJK and emoji as they are; against onnxruntime (C.UTF-8)."""
    x = np.array(["Monday", "TUESDAY", "Été", "ÿŸ", "straße", "İx", "日本🙂", "", "ǅ",
                  "ΣΟΦΊΑ σοφία", "МОСКВА", "ԱԲ", "ΐ"], dtype=object)
    attrs = {"case_change_action": action, "locale": "C.UTF-8"}
    model = _model("StringNormalizer", {"x": x}, attrs=attrs | (
        {"stopwords": stopwords} if stopwords else {}), opset=10)
    compiled = onnxc.compile(model)
    assert compiled.output_names == ["y"]  # the bytes output stays hidden
    run_both(model, {"x": x}, exact=True)


def test_string_concat():
    """Broadcasting, empty strings, multi-byte text; 20 kB of bytes outgrow the first
    capacity of the hidden bytes output, and the run is repeated with room."""
    a = np.array([["a", "héllo", ""], ["日本", "x", "yz"]], dtype=object)
    b = np.array(["1", "", "🙂"], dtype=object)
    run_both(single_op_model("StringConcat", {"a": (S, [2, 3]), "b": (S, [3])}, ["y"],
                             opset=20, ir_version=9), {"a": a, "b": b}, exact=True)
    big = np.array(["x" * 12000, "y" * 8000], dtype=object)
    model = single_op_model("StringConcat", {"a": (S, ["n"]), "b": (S, ["n"])}, ["y"],
                            opset=20, ir_version=9)
    compiled = onnxc.compile(model)
    for a, b in ((big, big[::-1]), (a[0], b)):
        (got,) = compiled.run(None, {"a": a, "b": b})
        np.testing.assert_array_equal(got, reference_run(model, {"a": a, "b": b})[0])


def test_made_strings_feed_other_ops():
    """Strings a kernel made, compared and gathered after it: the bytes live until the
    outputs are read, whichever op reads them."""
    from onnx import helper

    nodes = [helper.make_node("StringConcat", ["a", "b"], ["ab"]),
             helper.make_node("StringNormalizer", ["ab"], ["low"], case_change_action="LOWER",
                              locale="C.UTF-8"),
             helper.make_node("Equal", ["low", "a"], ["same"]),
             helper.make_node("Gather", ["low", "i"], ["picked"], axis=0)]
    graph = helper.make_graph(
        nodes, "made", [helper.make_tensor_value_info("a", S, [3]),
                        helper.make_tensor_value_info("b", S, [3]),
                        helper.make_tensor_value_info("i", onnx.TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("same", onnx.TensorProto.BOOL, [3]),
         helper.make_tensor_value_info("picked", S, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)],
                              ir_version=9)
    feeds = {"a": np.array(["ab", "Q", "é"], dtype=object),
             "b": np.array(["", "R", "É"], dtype=object), "i": np.array([2, 0])}
    run_both(model, feeds, exact=True)


def test_label_encoder_key_trie():
    """String keys that are prefixes of each other, repeated (the first wins), empty, and
    multi-byte; 3,000 keys (one trie walk per string, not one comparison per key)."""
    keys = ["ab", "a", "", "abc", "a", "日本", "日"] + [f"k{i}" for i in range(3000)]
    x = np.array(["a", "ab", "abc", "abcd", "", "日本", "日", "本", "k2999", "k3000"],
                 dtype=object)
    model = single_op_model("LabelEncoder", {"x": (S, [x.size])},
                            {"y": (onnx.TensorProto.INT64, [x.size])},
                            attrs={"keys_strings": keys, "values_int64s": list(range(len(keys))),
                                   "default_int64": -7},
                            opset={"": 18, "ai.onnx.ml": 2}, domain="ai.onnx.ml", ir_version=9)
    got, _ = run_both(model, {"x": x}, exact=True)
    assert got[0].tolist() == [1, 0, 3, -7, 2, 5, 6, -7, 3006, -7]


def test_made_strings_cold_and_warm(tmp_path):
    """A cache hit keeps the hidden bytes output hidden and the string constants' and made
    strings' pointers valid: same outputs as the fresh compile."""
    from onnx import helper, numpy_helper

    table = numpy_helper.from_array(np.array(["Zéro", "Un", "Deux"], dtype=object), "table")
    nodes = [helper.make_node("Gather", ["table", "i"], ["words"], axis=0),
             helper.make_node("StringConcat", ["words", "x"], ["joined"]),
             helper.make_node("StringNormalizer", ["joined"], ["y"], case_change_action="UPPER",
                              locale="C.UTF-8"),
             helper.make_node("RegexFullMatch", ["y"], ["m"], pattern=r"[A-ZÉ]+!")]
    graph = helper.make_graph(
        nodes, "made", [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, ["n"]),
                        helper.make_tensor_value_info("x", S, ["n"])],
        [helper.make_tensor_value_info("y", S, ["n"]),
         helper.make_tensor_value_info("m", onnx.TensorProto.BOOL, ["n"])], initializer=[table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    feeds = {"i": np.array([0, 2, 1]), "x": np.array(["!", "?", "é!"], dtype=object)}
    expected = reference_run(model, feeds)
    for warm in (False, True):
        compiled = onnxc.compile(model, cache_dir=tmp_path)
        assert compiled.from_cache == warm and compiled.output_names == ["y", "m"]
        for got, want in zip(compiled.run(None, feeds), expected):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("values", [
    np.array([0, 7, -12, 9223372036854775807, -9223372036854775808], np.int64),
    np.array([0, 18446744073709551615, 10], np.uint64),
    np.array([-128, 127, 0], np.int8), np.array([True, False]),
    np.array([255, 0, 9], np.uint8),
], ids=["int64", "uint64", "int8", "bool", "uint8"])
def test_cast_integers_to_string(values):
    """Decimal text written by the kernel (extremes of each type) as onnxruntime writes it."""
    model = _model("Cast", {"x": values}, attrs={"to": S}, opset=19)
    run_both(model, {"x": values}, exact=True)


@pytest.mark.parametrize("to", [onnx.TensorProto.INT64, onnx.TensorProto.INT32,
                                onnx.TensorProto.UINT8, onnx.TensorProto.BOOL,
                                onnx.TensorProto.UINT64, onnx.TensorProto.INT16])
def test_cast_string_to_integers(to):
    """strtoll / strtoull as onnxruntime parses: whitespace, a sign, digits up to the first
    other character; a narrower type keeps the low bits, a bool is != 0."""
    x = np.array(["12abc", "-9223372036854775808", "300", "-1", "\t7", "0x1f", "1e3", "1",
                  "0", " +42 "], dtype=object)
    run_both(_model("Cast", {"x": x}, attrs={"to": to}, opset=19), {"x": x}, exact=True)


@pytest.mark.parametrize("bad", [["1", "abc"], ["9223372036854775808", "1"], ["", "1"]])
def test_cast_string_to_integer_refuses_what_does_not_parse(bad):
    """No digit, or out of int64's range: a typed error naming the node (onnxruntime
    fails the run too)."""
    compiled = onnxc.compile(_model("Cast", {"x": np.array(bad, dtype=object)},
                                    attrs={"to": onnx.TensorProto.INT64}, opset=19))
    with pytest.raises(InvalidInputError, match=r"node 'Cast_0' \(Cast\).*no integer"):
        compiled.run(None, {"x": np.array(bad, dtype=object)})


def test_cast_of_floats_and_strings_refused():
    for model in (_model("Cast", {"x": np.zeros(2, np.float32)}, attrs={"to": S}, opset=19),
                  _model("Cast", {"x": _strings(2)}, attrs={"to": onnx.TensorProto.FLOAT},
                         opset=19)):
        with pytest.raises(UnsupportedOpError, match="exact float"):
            onnxc.compile(model)


def test_onnxc_run_with_strings(tmp_path, capsys):
    """`onnxc run` feeds a string model empty strings, or the .npz's text, and prints a
    string output's character count."""
    from onnxc.tools.run import main

    path = tmp_path / "identity.onnx"
    onnx.save(_model("Identity", {"x": _strings(3)}), path)
    np.savez(tmp_path / "in.npz", x=np.array(["héllo", "b", "日本"]))
    for extra, chars in (([], 0), (["--inputs", str(tmp_path / "in.npz")], 8)):
        assert main(["run", str(path), *extra]) == 0
        assert f"string  characters {chars}" in capsys.readouterr().out


def test_regex_export_and_run_size_ops_declared():
    """RegexFullMatch is written back as itself; StringSplit / StringNormalizer's filter,
    whose results have a length the run defines, are refused by the exporter as NonZero
    is, naming why."""
    from onnxc.frontend.onnx_export import export_onnx
    from onnxc.frontend.onnx_importer import import_onnx

    x = np.array(["abc", "Ab1", ""], dtype=object)
    model = _model("RegexFullMatch", {"x": x}, attrs={"pattern": "[a-z]+"}, opset=20)
    exported = export_onnx(import_onnx(model))
    exported.ir_version = 9
    np.testing.assert_array_equal(reference_run(exported, {"x": x})[0], [True, False, False])
    split = _model("StringSplit", {"x": x}, outputs=("y", "z"), attrs={"delimiter": "b"},
                   opset=20)
    with pytest.raises(UnsupportedOpError, match="a size the run defines"):
        export_onnx(import_onnx(split))
