// RUN: onnxc-opt %s -p fuse-layernorm --split-input-file | filecheck %s --check-prefix=GRAPH
// RUN: onnxc-opt %s -p fuse-layernorm,convert-graph-to-loops --split-input-file | filecheck %s --check-prefix=LOOPS

// GroupNorm(1) and InstanceNormalization over one channel (poolformer's norm layers) fold
// their per-channel affine parameters into a LayerNorm bias that holds a single value. Its
// kernel must read that bias with one index into a memref<1xf32>; it used to build a load
// with no index at all, which xDSL's memref verifier rejected after lowering.

func.func @instance_norm_one_channel(%x: tensor<1x1x50xf32>) -> tensor<1x1x50xf32> {
  %eps = graph.constant {value = dense<9.99999974E-6> : tensor<f32>} : tensor<f32>
  %gamma = graph.constant {value = dense<5.000000e-01> : tensor<1x1xf32>} : tensor<1x1xf32>
  %beta = graph.constant {value = dense<2.500000e-01> : tensor<1x1xf32>} : tensor<1x1xf32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x1x50xf32>) -> tensor<1x1x1xf32>
  %d = graph.sub(%x, %mean) : (tensor<1x1x50xf32>, tensor<1x1x1xf32>) -> tensor<1x1x50xf32>
  %sq = graph.mul(%d, %d) : (tensor<1x1x50xf32>, tensor<1x1x50xf32>) -> tensor<1x1x50xf32>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x1x50xf32>) -> tensor<1x1x1xf32>
  %ve = graph.add(%var, %eps) : (tensor<1x1x1xf32>, tensor<f32>) -> tensor<1x1x1xf32>
  %std = graph.sqrt(%ve) : (tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  %n = graph.div(%d, %std) : (tensor<1x1x50xf32>, tensor<1x1x1xf32>) -> tensor<1x1x50xf32>
  %g = graph.mul(%n, %gamma) : (tensor<1x1x50xf32>, tensor<1x1xf32>) -> tensor<1x1x50xf32>
  %y = graph.add(%g, %beta) : (tensor<1x1x50xf32>, tensor<1x1xf32>) -> tensor<1x1x50xf32>
  func.return %y : tensor<1x1x50xf32>
}
// GRAPH-LABEL: func.func @instance_norm_one_channel(
// GRAPH:         %[[SCALE:.*]] = graph.constant {value = dense<5.000000e-01> : tensor<50xf32>} : tensor<50xf32>
// GRAPH-NEXT:    %[[BIAS:.*]] = graph.constant {value = dense<2.500000e-01> : tensor<1xf32>} : tensor<1xf32>
// GRAPH-NEXT:    %y = graph.layer_normalization(%x, %[[SCALE]], %[[BIAS]]) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<1x1x50xf32>, tensor<50xf32>, tensor<1xf32>) -> tensor<1x1x50xf32>
// GRAPH-NEXT:    func.return %y

// LOOPS-LABEL: func.func private @layer_normalization_0(
// LOOPS-SAME:      %[[X:.*]]: memref<1x1x50xf32>, %[[G:.*]]: memref<50xf32>, %[[B:.*]]: memref<1xf32>, %[[Y:.*]]: memref<1x1x50xf32>)
// LOOPS:           %[[ZERO:.*]] = arith.constant 0 : index
// LOOPS:           scf.for %[[I:[0-9]+]] = %[[ZERO]] to %{{[0-9]+}} step %{{[0-9]+}} {
// LOOPS:             %[[GAMMA:.*]] = memref.load %[[G]][%[[I]]] : memref<50xf32>
// LOOPS-NEXT:        %[[BETA:.*]] = memref.load %[[B]][%[[ZERO]]] : memref<1xf32>
// LOOPS-NEXT:        math.fma %{{.*}}, %[[GAMMA]], %[[BETA]] : f32

// -----

// Two spatial axes ([1, 1, 5, 6]) and a batch of two ([2, 1, 50]) take the same path: the
// scale broadcasts over the normalized [5, 6], the bias is one value.
func.func @instance_norm_one_channel_2d(%x: tensor<2x1x5x6xf32>) -> tensor<2x1x5x6xf32> {
  %eps = graph.constant {value = dense<9.99999974E-6> : tensor<f32>} : tensor<f32>
  %gamma = graph.constant {value = dense<5.000000e-01> : tensor<1x1x1xf32>} : tensor<1x1x1xf32>
  %beta = graph.constant {value = dense<2.500000e-01> : tensor<1x1x1xf32>} : tensor<1x1x1xf32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<2x1x5x6xf32>) -> tensor<2x1x1x1xf32>
  %d = graph.sub(%x, %mean) : (tensor<2x1x5x6xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x5x6xf32>
  %sq = graph.mul(%d, %d) : (tensor<2x1x5x6xf32>, tensor<2x1x5x6xf32>) -> tensor<2x1x5x6xf32>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<2x1x5x6xf32>) -> tensor<2x1x1x1xf32>
  %ve = graph.add(%var, %eps) : (tensor<2x1x1x1xf32>, tensor<f32>) -> tensor<2x1x1x1xf32>
  %std = graph.sqrt(%ve) : (tensor<2x1x1x1xf32>) -> tensor<2x1x1x1xf32>
  %n = graph.div(%d, %std) : (tensor<2x1x5x6xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x5x6xf32>
  %g = graph.mul(%n, %gamma) : (tensor<2x1x5x6xf32>, tensor<1x1x1xf32>) -> tensor<2x1x5x6xf32>
  %y = graph.add(%g, %beta) : (tensor<2x1x5x6xf32>, tensor<1x1x1xf32>) -> tensor<2x1x5x6xf32>
  func.return %y : tensor<2x1x5x6xf32>
}
// GRAPH-LABEL: func.func @instance_norm_one_channel_2d(
// GRAPH:         graph.layer_normalization(%x, %{{.*}}, %{{.*}}) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x1x5x6xf32>, tensor<6xf32>, tensor<1xf32>) -> tensor<2x1x5x6xf32>
// GRAPH-NEXT:    func.return

// LOOPS-LABEL: func.func private @layer_normalization_0(
// LOOPS-SAME:      %[[G:[^:]*]]: memref<6xf32>, %[[B:[^:]*]]: memref<1xf32>,
// LOOPS:           %[[ZERO:.*]] = arith.constant 0 : index
// LOOPS:           memref.load %[[G]][%{{.*}}] : memref<6xf32>
// LOOPS-NEXT:      memref.load %[[B]][%[[ZERO]]] : memref<1xf32>

// -----

// A LayerNormalization imported with one-element scale and bias (ONNX lets them broadcast)
// reaches the kernel without any pass: same rule.
func.func @layer_norm_scalar_parameters(%x: tensor<3x4xf32>, %s: tensor<1xf32>, %b: tensor<f32>) -> tensor<3x4xf32> {
  %y = graph.layer_normalization(%x, %s, %b) {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<3x4xf32>, tensor<1xf32>, tensor<f32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
// GRAPH-LABEL: func.func @layer_norm_scalar_parameters(
// GRAPH-NEXT:    graph.layer_normalization(%x, %s, %b)

// LOOPS-LABEL: func.func private @layer_normalization_0(
// LOOPS-SAME:      %[[S:[^:]*]]: memref<1xf32>, %[[B:[^:]*]]: memref<f32>,
// LOOPS:           %[[ZERO:.*]] = arith.constant 0 : index
// LOOPS:           %[[BV:.*]] = memref.reinterpret_cast %[[B]] to offset: [0], sizes: [1], strides: [1] : memref<f32> to memref<1xf32>
// LOOPS:           memref.load %[[S]][%[[ZERO]]] : memref<1xf32>
// LOOPS-NEXT:      memref.load %[[BV]][%[[ZERO]]] : memref<1xf32>
