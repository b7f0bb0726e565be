// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL

// One case per verifier rule of the graph dialect; each chunk must fail with its message,
// and no chunk may verify (a verified chunk would print its custom-syntax module).
// ALL-FAIL-NOT: builtin.module {

%c = graph.constant {value = dense<1.000000e+00> : tensor<2xf32>} : tensor<3xf32>
// CHECK: Operation does not verify: graph.constant: value type differs from result type

// -----

%c = graph.constant_of_shape {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2x3xi64>
// CHECK: Operation does not verify: graph.constant_of_shape: value must hold exactly one element

// -----

%c = graph.constant_of_shape {value = dense<1> : tensor<1xi64>} : tensor<2x3xf32>
// CHECK: Operation does not verify: graph.constant_of_shape: value and result element types differ

// -----

%s = graph.symbolic_constant {values = ["seq", "1"]} : tensor<3xi64>
// CHECK: Operation does not verify: graph.symbolic_constant: 2 values for a result of 3 elements

// -----

%s = graph.symbolic_constant {values = ["seq"]} : tensor<1xf32>
// CHECK: Operation does not verify: graph.symbolic_constant: result must be a tensor of i64 or i32

// -----

%s = graph.symbolic_constant {values = ["seq/2"]} : tensor<1xi64>
// CHECK: Operation does not verify: graph.symbolic_constant: 'seq/2' is not a dimension expression

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK: Operation does not verify: graph.relu: result shapes [(3, 2)] differ from inferred [(2, 3)]

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK: Operation does not verify: graph.relu: result element type f16 differs from operand element type f32

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.cast(%x) : (tensor<2x3xf32>) -> tensor<2x4xi64>
// CHECK: Operation does not verify: graph.cast: result shapes [(2, 4)] differ from inferred [(2, 3)]

// -----

%x, %y = "test.op"() : () -> (tensor<2x3xf32>, tensor<2xf32>)
%r = graph.add(%x, %y) : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: graph.add: shapes [(2, 3), (2,)] do not broadcast

// -----

%x, %y = "test.op"() : () -> (tensor<2x3xf32>, tensor<3xi32>)
%r = graph.mul(%x, %y) : (tensor<2x3xf32>, tensor<3xi32>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: graph.mul: operand element types differ

// -----

%x, %y = "test.op"() : () -> (tensor<2x3xf32>, tensor<3xf32>)
%r = graph.sub(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: Operation does not verify: graph.sub: result shapes [(3,)] differ from inferred [(2, 3)]

// -----

%r = graph.sum() : () -> tensor<2xf32>
// CHECK: Operation does not verify: graph.sum: needs at least one input

// -----

%x, %y = "test.op"() : () -> (tensor<2x3xf32>, tensor<4x5xf32>)
%r = graph.matmul(%x, %y) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
// CHECK: Operation does not verify: graph.matmul: matmul inner dimensions differ: (2, 3) x (4, 5)

// -----

%a, %b = "test.op"() : () -> (tensor<2x3xf32>, tensor<2x4xf32>)
%r = graph.gemm(%a, %b) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 1 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
// CHECK: Operation does not verify: graph.gemm: result shapes [(4, 3)] differ from inferred [(3, 4)]

// -----

%a, %b, %c = "test.op"() : () -> (tensor<3x2xf32>, tensor<2x4xf32>, tensor<3xf32>)
%r = graph.gemm(%a, %b, %c) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<3x2xf32>, tensor<2x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
// CHECK: Operation does not verify: graph.gemm: shapes [(3, 4), (3,)] do not broadcast

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>)
%r = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: graph.conv: input channels 3 != weight channels 2 * group 1

// -----

%x, %w1, %b1, %w2, %b2 = "test.op"() : () -> (tensor<1x4x8x8xf32>, tensor<8x3x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>)
%y = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x3x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: Operation does not verify: graph.pointwise_depthwise: pointwise weight (8, 3, 1, 1) is not [C1, 4, 1, 1]

// -----

%x, %w1, %b1, %w2, %b2 = "test.op"() : () -> (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>)
%y = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, pointwise_activation_alpha = 0.000000e+00 : f32} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: Operation does not verify: graph.pointwise_depthwise: ['activation_alpha'] given without a pointwise activation

// -----

%x, %w1, %b1, %w2, %b2 = "test.op"() : () -> (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>)
%y = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, pointwise_activation = "swish"} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: Operation does not verify: graph.pointwise_depthwise: unknown pointwise activation 'swish'

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%r = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: graph.conv: 2 spatial dimensions need 2 strides, 2 dilations and 4 pads, not 2, 2 and 2

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%r = graph.conv(%x, %w) {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: graph.conv: strides [0, 1] and dilations [1, 1] must be >= 1

// -----

%x, %w, %b = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>)
%r = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: graph.conv: bias shape (3,) is not (4,)

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>)
%r = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
// CHECK: Operation does not verify: graph.conv: convolution window larger than the padded input

// -----

%x = "test.op"() : () -> tensor<1x3x8x8xf32>
%r = graph.max_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK: Operation does not verify: graph.max_pool: result shapes [(1, 3, 4, 4)] differ from inferred [(1, 3, 3, 3)]

// -----

%x = "test.op"() : () -> tensor<1x3x8x8xf32>
%r = graph.average_pool(%x) {kernel_shape = array<i64: 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
// CHECK: Operation does not verify: graph.average_pool: kernel_shape [3] needs 2 sizes >= 1

// -----

%x = "test.op"() : () -> tensor<1x3x8x8xf32>
%r = graph.global_average_pool(%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3xf32>
// CHECK: Operation does not verify: graph.global_average_pool: result shapes [(1, 3)] differ from inferred [(1, 3, 1, 1)]

// -----

%x, %p = "test.op"() : () -> (tensor<1x3x4x4xf32>, tensor<4xf32>)
%r = graph.batch_normalization(%x, %p, %p, %p, %p) {epsilon = 1.000000e-05 : f32} : (tensor<1x3x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x3x4x4xf32>
// CHECK: Operation does not verify: graph.batch_normalization: per-channel operand (4,) is not (3,)

// -----

%x = "test.op"() : () -> tensor<2x10xf32>
%r = graph.softmax(%x) {axis = 2 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
// CHECK: Operation does not verify: graph.softmax: axis 2 out of range for rank 2

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.reshape(%x) : (tensor<2x3xf32>) -> tensor<7xf32>
// CHECK: Operation does not verify: graph.reshape: element counts of input and result differ

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.flatten(%x) {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<1x6xf32>
// CHECK: Operation does not verify: graph.flatten: flatten axis 3 out of range for rank 2

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.squeeze(%x) {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: Operation does not verify: graph.squeeze: cannot squeeze axis 0 of size 2

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.unsqueeze(%x) {axes = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<1x1x2x3xf32>
// CHECK: Operation does not verify: graph.unsqueeze: repeated unsqueeze axes [0, 0]

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%r = graph.transpose(%x) {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
// CHECK: Operation does not verify: graph.transpose: perm [0, 0, 1] is not a permutation of rank 3

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%r = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK: Operation does not verify: graph.transpose: perm [1, 0] is not a permutation of rank 3

// -----

%x = "test.op"() : () -> tensor<4x6xf32>
%r = graph.as_strided(%x) {offset = 0 : i64, strides = array<i64: 6>} : (tensor<4x6xf32>) -> tensor<3x4xf32>
// CHECK: Operation does not verify: graph.as_strided: 1 strides for a rank-2 result

// -----

%x = "test.op"() : () -> tensor<4x6xf32>
%r = graph.as_strided(%x) {offset = 0 : i64, strides = array<i64: -1, 6>} : (tensor<4x6xf32>) -> tensor<3x4xf32>
// CHECK: Operation does not verify: graph.as_strided: negative offset or stride (0, [-1, 6])

// -----

%x = "test.op"() : () -> tensor<4x6xf32>
%r = graph.as_strided(%x) {offset = 4 : i64, strides = array<i64: 1, 6>} : (tensor<4x6xf32>) -> tensor<3x4xf32>
// CHECK: Operation does not verify: graph.as_strided: offset 4 and strides [1, 6] reach past the input's 24 elements

// -----

%x, %y = "test.op"() : () -> (tensor<2x3xf32>, tensor<3x3xf32>)
%r = graph.concat(%x, %y) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
// CHECK: Operation does not verify: graph.concat: concat operands [(2, 3), (3, 3)] differ off axis 1

// -----

%x, %y = "test.op"() : () -> (tensor<2x3xf32>, tensor<2x3xi64>)
%r = graph.concat(%x, %y) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<4x3xf32>
// CHECK: Operation does not verify: graph.concat: operand element types differ

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%a, %b = graph.split(%x) {axis = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK: Operation does not verify: graph.split: part sizes do not add up to dimension 6

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.slice(%x) {starts = array<i64: 0>, ends = array<i64: 6>, axes = array<i64: 1>, steps = array<i64: 0>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK: Operation does not verify: graph.slice: slice step must not be 0

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.slice(%x) {starts = array<i64: 0, 0>, ends = array<i64: 6>, axes = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK: Operation does not verify: graph.slice: starts, ends, axes and steps must have the same length

// -----

%x, %i = "test.op"() : () -> (tensor<2x6xf32>, tensor<3xf32>)
%r = graph.gather(%x, %i) {axis = 1 : i64} : (tensor<2x6xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: graph.gather: indices must have an integer element type

// -----

%x, %i = "test.op"() : () -> (tensor<2x6xf32>, tensor<3xi64>)
%r = graph.gather(%x, %i) {axis = 2 : i64} : (tensor<2x6xf32>, tensor<3xi64>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: graph.gather: axis 2 out of range for rank 2

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.pad(%x) {pads = array<i64: 1, 1>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x6xf32>) -> tensor<3x7xf32>
// CHECK: Operation does not verify: graph.pad: pads has 2 values for rank 2

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.pad(%x) {pads = array<i64: 1, 1, 1, 1>, mode = "symmetric", value = 0.000000e+00 : f32} : (tensor<2x6xf32>) -> tensor<4x8xf32>
// CHECK: Operation does not verify: graph.pad: unknown pad mode 'symmetric'

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.pad(%x) {pads = array<i64: 0, -7, 0, 0>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x6xf32>) -> tensor<2x1xf32>
// CHECK: Operation does not verify: graph.pad: negative pads remove more than the tensor holds

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.shape(%x) {start = 0 : i64, end = 2 : i64} : (tensor<2x6xf32>) -> tensor<2xi32>
// CHECK: Operation does not verify: graph.shape: result must be a tensor of i64

// -----

%x = "test.op"() : () -> tensor<2x6xf32>
%r = graph.shape(%x) {start = 0 : i64, end = 2 : i64} : (tensor<2x6xf32>) -> tensor<3xi64>
// CHECK: Operation does not verify: graph.shape: result shapes [(3,)] differ from inferred [(2,)]

// -----

%x = "test.op"() : () -> tensor<2x3xf32>
%r = graph.relu(%x) : (tensor<2x3xf32>) -> memref<2x3xf32>
// CHECK: memref<2x3xf32> should be of base attribute tensor

// -----

%x, %w = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%r = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: property 'group' expected in operation 'graph.conv'

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%b = "test.op"() : () -> tensor<3x4xf32>
%m = graph.matmul(%a, %b) {activation = "swish"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK: Operation does not verify: graph.matmul: unknown activation 'swish'

// -----

%a = "test.op"() : () -> tensor<2x3xf32>
%b = "test.op"() : () -> tensor<3x4xf32>
%m = graph.matmul(%a, %b) {activation = "leaky_relu"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK: Operation does not verify: graph.matmul: activation 'leaky_relu' takes ['activation_alpha']

// -----

// A body value not defined before its use in the body (more body rules:
// fused_elementwise_invalid.mlir).
%x = "test.op"() : () -> tensor<4xf32>
%o = "test.op"() : () -> f32
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %s = arith.addf %a, %o : f32
  graph.yield %s : f32
}
// CHECK: Operation does not verify: Operation using value defined out of its IsolatedFromAbove parent: AddfOp(%s = arith.addf %a, %o : f32)

// -----

%x = "test.op"() : () -> tensor<1x6x2xf32>
%y = graph.channel_shuffle(%x) {group = 4 : i64} : (tensor<1x6x2xf32>) -> tensor<1x6x2xf32>
// CHECK: Operation does not verify: graph.channel_shuffle: 6 channels do not split into 4 groups

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.quantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 300 : i64} : (tensor<4xf32>) -> tensor<4xui8>
// CHECK: Operation does not verify: graph.quantize_linear: zero_point 300 is out of range [0, 255]

// -----

%x = "test.op"() : () -> tensor<4xi64>
%y = graph.dequantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 0 : i64} : (tensor<4xi64>) -> tensor<4xf32>
// CHECK: Operation does not verify: graph.dequantize_linear: quantized element type must be an integer of 2 to 32 bits or an 8- or 4-bit float, got i64

// -----

%x = "test.op"() : () -> tensor<2x3xi8>
%y = graph.dequantize_linear(%x) {scale = dense<[1.0, 2.0]> : tensor<2xf32>, zero_point = dense<0> : tensor<2xi32>, axis = 1 : i64} : (tensor<2x3xi8>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: graph.dequantize_linear: scale has shape (2,), expected (3,)

// -----

%x = "test.op"() : () -> tensor<2x5xf32>
%y = graph.quantize_linear(%x) {scale = dense<1.0> : tensor<2x3xf32>, zero_point = dense<9> : tensor<2x3xi32>, axis = 1 : i64, block_size = 2 : i64} : (tensor<2x5xf32>) -> tensor<2x5xi4>
// CHECK: Operation does not verify: graph.quantize_linear: zero_point 9 is out of range [-8, 7]

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.quantize_linear(%x) {scale = 0.000000e+00 : f32, zero_point = 0 : i64} : (tensor<4xf32>) -> tensor<4xi8>
// CHECK: Operation does not verify: graph.quantize_linear: scale must be finite and nonzero

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%w = "test.op"() : () -> tensor<8x3xi8>
%y = graph.qlinear_matmul(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x3xi8>) -> tensor<4x3xi32>
// CHECK: Operation does not verify: graph.qlinear_matmul: input must be ui8 or i8, got f32

// -----

%x = "test.op"() : () -> tensor<4x8xui8>
%w = "test.op"() : () -> tensor<8x3xi8>
%y = graph.qlinear_matmul(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0, 0>} : (tensor<4x8xui8>, tensor<8x3xi8>) -> tensor<4x3xi32>
// CHECK: Operation does not verify: graph.qlinear_matmul: weight_zero_point has 2 values, expected 1 or one per output channel (3)

// -----

%x = "test.op"() : () -> tensor<4x8xui8>
%w = "test.op"() : () -> tensor<8xi8>
%y = graph.qlinear_matmul(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xui8>, tensor<8xi8>) -> tensor<4xi32>
// CHECK: Operation does not verify: graph.qlinear_matmul: weight_zero_point has 8 values, expected 1 or one per output channel (1)

// -----

%x = "test.op"() : () -> tensor<4x8xui8>
%w = "test.op"() : () -> tensor<8x3xi8>
%y = graph.qlinear_matmul(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>} : (tensor<4x8xui8>, tensor<8x3xi8>) -> tensor<4x3xui8>
// CHECK: Operation does not verify: graph.qlinear_matmul: a ui8 result needs output_scale

// -----

%x = "test.op"() : () -> tensor<4x8xui8>
%w = "test.op"() : () -> tensor<8x3xi8>
%y = graph.qlinear_matmul(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>, output_zero_point = 1 : i64} : (tensor<4x8xui8>, tensor<8x3xi8>) -> tensor<4x3xi32>
// CHECK: Operation does not verify: graph.qlinear_matmul: an i32 result takes no output scale or zero point

// -----

%x = "test.op"() : () -> tensor<1x8x4x4xui8>
%w = "test.op"() : () -> tensor<2x8x3x3xi8>
%y = graph.qlinear_conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>, output_zero_point = 10 : i64, output_min = 20 : i64, output_max = 5 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x3x3xi8>) -> tensor<1x2x2x2xui8>
// CHECK: Operation does not verify: graph.qlinear_conv: output zero point or bounds outside [0, 255]

// -----

%x = "test.op"() : () -> tensor<1x8x4x4xui8>
%w = "test.op"() : () -> tensor<2x8x1x1xi8>
%a = "test.op"() : () -> tensor<1x2x4x4xui8>
%y = graph.qlinear_conv_add(%x, %w, %a) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>, output_zero_point = 10 : i64, addend_zero_point = 0 : i64, sum_scales = array<f32: 0.5, 0.5>, sum_zero_point = 0 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x1x1xi8>, tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xui8>
// CHECK: Operation does not verify: graph.qlinear_conv_add: sum_scales must be three finite nonzero numbers

// -----

%x = "test.op"() : () -> tensor<1x8x4x4xui8>
%w = "test.op"() : () -> tensor<2x8x1x1xi8>
%a = "test.op"() : () -> tensor<1x2x4x4xui8>
%y = graph.qlinear_conv_add(%x, %w, %a) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>, output_zero_point = 10 : i64, addend_zero_point = 300 : i64, sum_scales = array<f32: 0.5, 0.5, 1.0>, sum_zero_point = 0 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x1x1xi8>, tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xui8>
// CHECK: Operation does not verify: graph.qlinear_conv_add: addend_zero_point out of the addend's range

// -----

%x = "test.op"() : () -> tensor<1x8x4x4xui8>
%w = "test.op"() : () -> tensor<2x8x1x1xi8>
%a = "test.op"() : () -> tensor<1x2x4x4xf32>
%y = graph.qlinear_conv_add(%x, %w, %a) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>, output_zero_point = 10 : i64, addend_zero_point = 0 : i64, sum_scales = array<f32: 0.5, 0.5, 1.0>, sum_zero_point = 0 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x1x1xi8>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xui8>
// CHECK: Operation does not verify: graph.qlinear_conv_add: addend must be ui8 or i8, got f32

// -----

%x = "test.op"() : () -> tensor<1x8x4x4xui8>
%w = "test.op"() : () -> tensor<2x8x1x1xi8>
%a = "test.op"() : () -> tensor<1x2x3x3xui8>
%y = graph.qlinear_conv_add(%x, %w, %a) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.5>, output_zero_point = 10 : i64, addend_zero_point = 0 : i64, sum_scales = array<f32: 0.5, 0.5, 1.0>, sum_zero_point = 0 : i64} : (tensor<1x8x4x4xui8>, tensor<2x8x1x1xi8>, tensor<1x2x3x3xui8>) -> tensor<1x2x4x4xui8>
// CHECK: addend shape (1, 2, 3, 3) is not the result's (1, 2, 4, 4)

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%s = "test.op"() : () -> tensor<3xf32>
%y = graph.rms_normalization(%x, %s) {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK: Operation does not verify: graph.rms_normalization: shapes [(4,), (3,)] do not broadcast

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%s = "test.op"() : () -> tensor<4xf32>
%y = graph.rms_normalization(%x, %s) {axis = 3 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK: Operation does not verify: graph.rms_normalization: axis 3 out of range for rank 3

// -----

%x = "test.op"() : () -> tensor<2x4xf32>
%s = "test.op"() : () -> tensor<4xf32>
%y = graph.rms_normalization(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: graph.rms_normalization: result shapes [(2, 3)] differ from inferred [(2, 4)]

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%s = "test.op"() : () -> tensor<4xf32>
%y, %m, %i = graph.layer_normalization_stats(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
// CHECK: Operation does not verify: graph.layer_normalization_stats: result shapes [(2, 3, 4), (2, 1), (2, 1)] differ from inferred [(2, 3, 4), (2, 1, 1), (2, 1, 1)]

// -----

%x = "test.op"() : () -> tensor<2x3x4xf32>
%s = "test.op"() : () -> tensor<4xf32>
%b = "test.op"() : () -> tensor<2x4xf32>
%y, %m, %i = graph.layer_normalization_stats(%x, %s, %b) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// CHECK: Operation does not verify: graph.layer_normalization_stats: bias (2, 4) does not broadcast to (4,)

// -----

%x = "test.op"() : () -> tensor<2x4xf32>
%s = "test.op"() : () -> tensor<4xf32>
%y, %m, %i = graph.layer_normalization_stats(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf64>, tensor<2x1xf32>)
// CHECK: Operation does not verify: graph.layer_normalization_stats: result element type f64 differs from operand element type f32

// -----

%x = "test.op"() : () -> tensor<4x3xf32>
%o = graph.lex_order(%x) {axis = 0 : i64} : (tensor<4x3xf32>) -> tensor<4xi32>
// CHECK: Operation does not verify: graph.lex_order: index result must be i64, got i32

// -----

%x = "test.op"() : () -> tensor<4x3xf32>
%o = graph.lex_order(%x) {axis = 2 : i64} : (tensor<4x3xf32>) -> tensor<4xi64>
// CHECK: Operation does not verify: graph.lex_order: axis 2 is outside rank 2

// -----

%x = "test.op"() : () -> tensor<4x3xf32>
%o = graph.lex_order(%x) {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4xi64>
// CHECK: Operation does not verify: graph.lex_order: result shapes [(4,)] differ from inferred [(3,)]
